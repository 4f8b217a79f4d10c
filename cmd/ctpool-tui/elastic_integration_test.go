//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// elasticCLI runs the binary's commands in the test's namespace as the
// admin, and returns a function that fails the test on an unexpected exit.
func elasticCLI(t *testing.T) (*kubetest.Env, func(want int, args ...string) (string, string)) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	return env, func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"-n", env.Namespace}, args...)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errOut)
		}
		return out, errOut
	}
}

// poolStatus is the pool as status -o json reports it.
func poolStatus(t *testing.T, run func(int, ...string) (string, string), pool string) render.OncePool {
	t.Helper()
	out, _ := run(exitOK, "status", pool, "-o", "json")
	var rep render.OnceReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Pools) != 1 {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	return rep.Pools[0]
}

// poolSize is the pool's effective size as status reports it.
func poolSize(t *testing.T, run func(int, ...string) (string, string), pool string) int {
	return poolStatus(t, run, pool).Size
}

// waitFree waits until the pool has n free members (their PVCs bound and
// Pods scheduled: an unschedulable member is not free).
func waitFree(t *testing.T, env *kubetest.Env, run func(int, ...string) (string, string), pool string, n int) {
	t.Helper()
	env.WaitFor(t, 60*time.Second, fmt.Sprintf("%d free members of %s", n, pool), func() (bool, error) {
		return poolStatus(t, run, pool).Free >= n, nil
	})
}

var smallMember = []string{"--image", "registry.example/desktop:1", "--cpu", "100m", "--mem", "128Mi", "--disk", "1Gi"}

// A claim that grows an elastic pool never takes a member whose name an
// object the pool did not make holds (issue 41, departure 1): on the real
// API server, whose lists by label cannot show such an object.
func TestIntegrationElasticClaimSkipsForeignObjects(t *testing.T) {
	env, run := elasticCLI(t)
	ctx := t.Context()
	ns := env.Namespace
	pvc := func(name string, labels map[string]string) {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		if _, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		pool    string
		foreign func(pool string) (kind, name string)
		why     string
	}{
		{"fpvc", func(pool string) (string, string) {
			pvc(pool+"-2-data", nil)
			return "pvc", pool + "-2-data"
		}, "it has no pool labels"},
		{"fother", func(pool string) (string, string) {
			pvc(pool+"-2-data", map[string]string{engine.LabelPool: "someone-else", engine.LabelMember: "someone-else-2"})
			return "pvc", pool + "-2-data"
		}, "it is labelled " + engine.LabelPool + "=someone-else"},
		{"fpod", func(pool string) (string, string) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pool + "-2"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/other:1"}}}}
			if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			return "pod", pool + "-2"
		}, "it has no pool labels"},
	} {
		t.Run(tc.pool, func(t *testing.T) {
			run(exitOK, append([]string{"apply", tc.pool, "--max-size", "3", "--size", "1", "--spare", "0"}, smallMember...)...)
			waitFree(t, env, run, tc.pool, 1)
			if out, _ := run(exitOK, "claim", tc.pool, "alice@example.com"); strings.TrimSpace(out) != tc.pool+"-1" {
				t.Fatalf("alice got %q", out)
			}
			kind, name := tc.foreign(tc.pool)
			// What the pool could have written on it: an annotation (the
			// claim's display annotation), a label, a deletion. (Its status
			// moves on its own: the PV controller binds a PVC, the node runs
			// a Pod.)
			look := func() string {
				var m metav1.Object
				var err error
				if kind == "pvc" {
					m, err = env.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
				} else {
					m, err = env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				}
				if err != nil {
					t.Fatal(err)
				}
				// The plane's own annotations (the PV controller's binding
				// notes) come and go on their own; the pool's would be
				// corral.dev/ or ctpool.dev/ ones.
				ours := map[string]string{}
				for k, v := range m.GetAnnotations() {
					if strings.HasPrefix(k, "corral.dev/") || strings.HasPrefix(k, "ctpool.dev/") {
						ours[k] = v
					}
				}
				return fmt.Sprintf("uid %s labels %v annotations %v deleting %v", m.GetUID(), m.GetLabels(), ours, m.GetDeletionTimestamp() != nil)
			}
			before := look()
			// The pool is full at size 1: bob's claim grows it, past the
			// member whose name the foreign object holds.
			if out, _ := run(exitOK, "claim", tc.pool, "bob@example.com"); strings.TrimSpace(out) != tc.pool+"-3" {
				t.Fatalf("bob got %q, want %s-3", out, tc.pool)
			}
			// Nothing left: carol's claim is refused, naming the block.
			_, errOut := run(exitError, "claim", tc.pool, "carol@example.com")
			want := tc.pool + "-2: " + kind + " " + name + " exists and is not this pool's member (" + tc.why + ")"
			if !strings.Contains(errOut, "pool has no free members") || !strings.Contains(errOut, want) {
				t.Fatalf("carol's claim: %q, want it to name %q", errOut, want)
			}
			if after := look(); after != before {
				t.Fatalf("the foreign %s %s was changed:\n%s\n%s", kind, name, before, after)
			}
			if _, err := env.Client.CoordinationV1().Leases(ns).Get(ctx, engine.LeaseName(tc.pool+"-2"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("a Lease on the blocked member: %v", err)
			}
			if kind == "pvc" {
				if _, err := env.Client.CoreV1().Pods(ns).Get(ctx, tc.pool+"-2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Fatalf("a member Pod was started on the foreign PVC: %v", err)
				}
			}
		})
	}
}

// A resize or an apply --size of an elastic pool sets its effective size even
// when the definition already names that size (departure 2), and
// --max-size=0 fixes the pool at its effective size, deleting nothing
// (departure 3).
func TestIntegrationElasticSizeInstructions(t *testing.T) {
	env, run := elasticCLI(t)
	ctx := t.Context()
	ns := env.Namespace

	t.Run("apply --size of the definition's size", func(t *testing.T) {
		run(exitOK, append([]string{"apply", "esz", "--min-size", "1", "--max-size", "5", "--size", "3", "--spare", "0", "--settle", "0s"}, smallMember...)...)
		// More free than the spare with no settle time: it shrinks to its min.
		waitFree(t, env, run, "esz", 3)
		for range 2 {
			run(exitOK, "reconcile", "esz")
		}
		if n := poolSize(t, run, "esz"); n != 1 {
			t.Fatalf("size %d after the shrink, want 1", n)
		}
		out, _ := run(exitOK, "apply", "esz", "--size", "3")
		if n := poolSize(t, run, "esz"); n != 3 {
			t.Fatalf("size %d after apply --size 3, want 3\n%s", n, out)
		}
		for _, m := range []string{"esz-2", "esz-3"} {
			if _, err := env.Client.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{}); err != nil {
				t.Fatalf("%s: %v", m, err)
			}
		}
	})

	t.Run("--max-size=0 keeps the effective size", func(t *testing.T) {
		run(exitOK, append([]string{"apply", "eoff", "--max-size", "10", "--size", "3", "--spare", "2"}, smallMember...)...)
		waitFree(t, env, run, "eoff", 3)
		// Five users one after the other: three take the free members, two
		// grow the pool by one each (no reconcile between: the last two
		// find the recorded status stale, which is no crowd); the reconcile
		// takes the size up to them and the spare.
		got := map[string]bool{}
		for _, u := range []string{"u1", "u2", "u3", "u4", "u5"} {
			out, _ := run(exitOK, "claim", "eoff", u+"@example.com")
			got[strings.TrimSpace(out)] = true
		}
		for i := 1; i <= 5; i++ {
			if !got[engine.MemberName("eoff", i)] {
				t.Fatalf("five claims one after the other took %v, want eoff-1 to eoff-5", slices.Sorted(maps.Keys(got)))
			}
		}
		run(exitOK, "reconcile", "eoff")
		waitFree(t, env, run, "eoff", 2)
		st := poolStatus(t, run, "eoff")
		size := st.Size
		if size != 7 || st.Claimed != 5 || st.Free != 2 {
			t.Fatalf("effective size %d with %d claimed and %d free, want 7, 5 and 2", size, st.Claimed, st.Free)
		}
		uids := map[string]types.UID{}
		for i := 1; i <= size; i++ {
			p, err := env.Client.CoreV1().Pods(ns).Get(ctx, engine.MemberName("eoff", i), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			uids[p.Name] = p.UID
		}
		out, _ := run(exitOK, "apply", "eoff", "--max-size=0")
		if !strings.Contains(out, fmt.Sprintf("(size %d,", size)) {
			t.Fatalf("apply --max-size=0 did not keep size %d:\n%s", size, out)
		}
		if n := poolSize(t, run, "eoff"); n != size {
			t.Fatalf("size %d, want %d", n, size)
		}
		for name, uid := range uids {
			p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.UID != uid || p.DeletionTimestamp != nil {
				t.Fatalf("%s was deleted or replaced: %v", name, err)
			}
		}
	})
}
