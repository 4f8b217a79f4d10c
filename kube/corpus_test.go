package kube

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/corpus"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// desktop is what a claimed member's user sees of it: its Pod's and its
// PVC's specs, and that they exist.
type desktop struct {
	pod *corev1.PodSpec
	pvc *corev1.PersistentVolumeClaimSpec
}

func desktops(t *testing.T, ctx context.Context, c *fake.Clientset, ns string, members []string) map[string]desktop {
	t.Helper()
	out := map[string]desktop{}
	for _, m := range members {
		var d desktop
		if p, err := c.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{}); err == nil {
			d.pod = &p.Spec
		}
		if p, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, m+"-data", metav1.GetOptions{}); err == nil {
			d.pvc = &p.Spec
		}
		out[m] = d
	}
	return out
}

// kubeletReady makes every Pod Running and Ready, as a node would.
func kubeletReady(t *testing.T, ctx context.Context, c *fake.Clientset, ns string) {
	t.Helper()
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodRunning {
			continue
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// The pools earlier releases wrote (testdata/corpus) are read, shown,
// reconciled, claimed and released by this one on the fake clientset: no
// claimed member's desktop changes, a claim of the earlier release is
// released and the member rebuilt, and once the pool converges a reconcile
// writes nothing.
func TestCorpusOfEarlierReleases(t *testing.T) {
	now := time.Now()
	releases, err := corpus.Load(now)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range releases {
		t.Run(r.Name, func(t *testing.T) {
			ctx := context.Background()
			const ns = "vdi"
			client := fake.NewClientset(r.Objects(ns)...)
			// The fake gives a created object no resourceVersion; the API
			// server does, and an update of a Lease needs one.
			client.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && o.GetResourceVersion() == "" {
					o.SetResourceVersion("1")
				}
				return false, nil, nil
			})
			holders := r.Holders()
			held := slices.Sorted(func(yield func(string) bool) {
				for m := range holders {
					if !yield(m) {
						return
					}
				}
			})
			if len(holders) == 0 || len(r.Pools()) == 0 {
				t.Fatalf("corpus %s has %d pools and %d claims", r.Name, len(r.Pools()), len(holders))
			}

			// status and --once.
			snaps, err := ListPools(ctx, client, ns)
			if err != nil {
				t.Fatal(err)
			}
			views := engine.ObserveAll(snaps, now)
			if len(views) != len(r.Pools()) {
				t.Fatalf("%d pools read, %d in the corpus", len(views), len(r.Pools()))
			}
			for _, v := range views {
				for _, p := range v.Problems {
					if strings.HasPrefix(p, "status:") || strings.HasPrefix(p, "spec:") {
						t.Errorf("%s: %s", v.Name, p)
					}
				}
				for _, m := range v.Members {
					if h, ok := holders[m.Name]; ok && m.Holder() != h {
						t.Errorf("%s is held by %q, read as %q", m.Name, h, m.Holder())
					}
				}
			}
			var once strings.Builder
			code := render.RenderOnce(&once, views, render.OnceOptions{Format: "json", Namespace: ns, Now: now})
			for _, want := range append(r.Pools(), slices.Collect(func(yield func(string) bool) {
				for _, h := range holders {
					yield(h)
				}
			})...) {
				if !strings.Contains(once.String(), fmt.Sprintf("%q", want)) {
					t.Errorf("--once -o json (exit %d) lacks %q", code, want)
				}
			}

			// reconcile until converged; no claimed desktop changes.
			eng := &engine.Engine{Cluster: NewCluster(client, ns), Namespace: ns, Now: time.Now}
			before := desktops(t, ctx, client, ns, held)
			rounds, err := r.Converge(ctx, eng, 8, func() { kubeletReady(t, ctx, client, ns) })
			if err != nil {
				t.Fatal(err)
			}
			if after := desktops(t, ctx, client, ns, held); !reflect.DeepEqual(before, after) {
				t.Errorf("a claimed desktop changed:\nbefore %+v\nafter  %+v", before, after)
			}
			client.ClearActions()
			for _, p := range r.Pools() {
				if _, err := eng.Reconcile(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			if w := writeActions(client); len(w) != 0 {
				t.Errorf("a reconcile of the converged pools writes %v", w)
			}
			// Every claimed member's PVC now records its source, proven by
			// its Pod (an earlier release did not record it).
			for _, m := range held {
				pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, m+"-data", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if pvc.Annotations[engine.AnnotationSource] == "" {
					t.Errorf("%s's PVC records no source after %d rounds of reconciles", m, rounds)
				}
			}

			// A new claim and its release; then the earlier release's claims
			// are released, each by its holder.
			pool := r.Pools()[0]
			c, err := eng.Claim(ctx, pool, "erin@example.com")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := holders[c.Member]; ok {
				t.Fatalf("erin was given %s, held by %s", c.Member, holders[c.Member])
			}
			if _, err := eng.Release(ctx, pool, c.Member, "erin@example.com"); err != nil {
				t.Fatal(err)
			}
			for _, m := range held {
				p := m[:strings.LastIndex(m, "-")]
				rel, err := eng.Release(ctx, p, m, holders[m])
				if err != nil || rel.NoOp || rel.PreviousHolder != holders[m] {
					t.Errorf("release of %s by %s: %+v, %v", m, holders[m], rel, err)
				}
			}
			snaps, err = ListPools(ctx, client, ns)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range engine.ObserveAll(snaps, time.Now()) {
				if v.Status.Claimed != 0 {
					t.Errorf("%s: %d claimed after every claim was released", v.Name, v.Status.Claimed)
				}
			}
			t.Logf("%s (%.12s): pools %v, claims %d, converged in %d rounds of reconciles", r.Name, r.Commit, r.Pools(), len(held), rounds)
		})
	}
}
