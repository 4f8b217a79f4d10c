//go:build integration

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// cliRunner runs the binary's commands in the test's namespace as the admin.
func cliRunner(t *testing.T, env *kubetest.Env) func(want int, args ...string) (string, string) {
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	return func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"-n", env.Namespace}, args...)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errOut)
		}
		return out, errOut
	}
}

var smallPool = []string{"--image", "registry.example/desktop:1", "--cpu", "100m", "--mem", "128Mi", "--disk", "1Gi"}

// A claimed member whose Pod and PVC were deleted by hand keeps its claim:
// delete exits 1 naming it, and the Lease is still there.
func TestIntegrationDeleteKeepsAClaim(t *testing.T) {
	env := kubetest.Require(t)
	run := cliRunner(t, env)
	ctx, ns := context.Background(), env.Namespace
	run(exitOK, append([]string{"apply", "desk", "--size", "1"}, smallPool...)...)
	env.WaitFor(t, 60*time.Second, "a free member", func() (bool, error) {
		code, _, _ := runCmd(t, "-n", ns, "--once", "--pool", "desk")
		return code == exitOK, nil
	})
	member, _ := run(exitOK, "claim", "desk", "alice@example.com")
	if member = strings.TrimSpace(member); member != "desk-1" {
		t.Fatalf("claim gave %q", member)
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, "desk-1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "desk-1-data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, 60*time.Second, "the Pod and PVC gone", func() (bool, error) {
		_, perr := env.Client.CoreV1().Pods(ns).Get(ctx, "desk-1", metav1.GetOptions{})
		_, cerr := env.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "desk-1-data", metav1.GetOptions{})
		return apierrors.IsNotFound(perr) && apierrors.IsNotFound(cerr), nil
	})
	_, errOut := run(exitError, "delete", "desk")
	if !strings.Contains(errOut, `desk-1 (claimed by "alice@example.com")`) {
		t.Fatalf("delete does not name the claimed member: %s", errOut)
	}
	l, err := env.Client.CoordinationV1().Leases(ns).Get(ctx, engine.LeaseName("desk-1"), metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "alice@example.com" {
		t.Fatalf("the claim Lease after delete: %v, %v", l, err)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, engine.ConfigMapName("desk"), metav1.GetOptions{}); err != nil {
		t.Fatalf("the definition after delete: %v", err)
	}
}

// A PVC labelled for the pool by hand is no member: delete finishes, names
// it and leaves it.
func TestIntegrationDeleteLeavesNonMembers(t *testing.T) {
	env := kubetest.Require(t)
	run := cliRunner(t, env)
	ctx, ns := context.Background(), env.Namespace
	run(exitOK, append([]string{"apply", "desk", "--size", "1"}, smallPool...)...)
	scratch := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "scratch"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, scratch, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kubectl label pvc scratch corral.dev/vdi-ct-pool=desk
	patch := []byte(`{"metadata":{"labels":{"` + engine.LabelPool + `":"desk"}}}`)
	if _, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "scratch", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	out, _ := run(exitOK, "delete", "desk")
	if !strings.Contains(out, "left alone: pvc/scratch, not a member") || !strings.Contains(out, "pool desk deleted") {
		t.Fatalf("delete output:\n%s", out)
	}
	if _, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "scratch", metav1.GetOptions{}); err != nil {
		t.Fatalf("scratch after delete: %v", err)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, engine.ConfigMapName("desk"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the definition after delete: %v", err)
	}
}

// A foreign Pod named desk-1 (no labels) blocks the member: reconcile
// records the error; a second reconcile writes nothing (the ConfigMap keeps
// its resourceVersion, and no Lease is created: a watch on Leases sees none
// before a sentinel Lease written after the reconcile).
func TestIntegrationForeignPodBlocksItsMember(t *testing.T) {
	env := kubetest.Require(t)
	run := cliRunner(t, env)
	ctx, ns := context.Background(), env.Namespace
	foreign := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "desk-1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/other:1"}}},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const want = "pod desk-1 exists and is not this pool's member (it has no pool labels)"
	_, errOut := run(exitError, append([]string{"apply", "desk", "--size", "1"}, smallPool...)...)
	if !strings.Contains(errOut, want) {
		t.Fatalf("apply: %s", errOut)
	}
	cms := env.Client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, engine.ConfigMapName("desk"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := engine.ParseStatus(cm.Data[engine.KeyStatus]); len(st.Members) != 1 || st.Members[0].Blocked != want {
		t.Fatalf("recorded status: %s", cm.Data[engine.KeyStatus])
	}

	leases := env.Client.CoordinationV1().Leases(ns)
	list, err := leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	out, errOut := run(exitError, "reconcile", "desk")
	if !strings.Contains(errOut, want) || strings.Contains(out, "started") {
		t.Fatalf("second reconcile:\nstdout: %s\nstderr: %s", out, errOut)
	}
	sentinel := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "sentinel"}}
	if _, err := leases.Create(ctx, sentinel, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for done := false; !done; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the Lease watch ended before the sentinel")
			}
			l, _ := ev.Object.(*coordinationv1.Lease)
			switch {
			case l == nil:
				t.Fatalf("watch event %v", ev.Type)
			case l.Name == "sentinel" && ev.Type == watch.Added:
				done = true
			default:
				t.Fatalf("the second reconcile wrote Lease %s (%s)", l.Name, ev.Type)
			}
		case <-deadline:
			t.Fatal("no sentinel event within 30 s")
		}
	}
	after, err := cms.Get(ctx, engine.ConfigMapName("desk"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != cm.ResourceVersion {
		t.Fatalf("the second reconcile wrote the ConfigMap: resourceVersion %s, was %s", after.ResourceVersion, cm.ResourceVersion)
	}
	if p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "desk-1", metav1.GetOptions{}); err != nil || len(p.Labels) != 0 {
		t.Fatalf("the foreign Pod after reconcile: %v, %v", p, err)
	}
	// status shows it.
	if code, out, errOut := runCmd(t, "-n", ns, "status", "desk", "-o", "json"); !strings.Contains(out, want) {
		t.Fatalf("status: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// claim never hands it out.
	if _, errOut := run(exitError, "claim", "desk", "alice@example.com"); !strings.Contains(errOut, "no free members") {
		t.Fatalf("claim: %s", errOut)
	}
}
