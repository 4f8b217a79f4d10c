package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// TestPatchPodMeta: the claim marks are set and removed with one merge
// patch each, other labels and annotations kept.
func TestPatchPodMeta(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "desk-1", Namespace: "vdi", UID: "u1",
		Labels: map[string]string{engine.LabelPool: "desk"}, Annotations: map[string]string{"keep": "me"}}}
	client := fake.NewClientset(pod)
	c := NewCluster(client, "vdi")
	yes, no := "true", "false"
	if err := c.PatchPodMeta(ctx, "desk-1", "u1", map[string]*string{engine.LabelClaimed: &yes}, map[string]*string{engine.AnnotationSafeToEvict: &no}); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Pods("vdi").Get(ctx, "desk-1", metav1.GetOptions{})
	if !engine.ClaimMarked(got) || got.Labels[engine.LabelPool] != "desk" || got.Annotations["keep"] != "me" {
		t.Fatalf("after marking: labels %v annotations %v", got.Labels, got.Annotations)
	}
	if err := c.PatchPodMeta(ctx, "desk-1", "u1", map[string]*string{engine.LabelClaimed: nil}, map[string]*string{engine.AnnotationSafeToEvict: nil}); err != nil {
		t.Fatal(err)
	}
	got, _ = client.CoreV1().Pods("vdi").Get(ctx, "desk-1", metav1.GetOptions{})
	if _, ok := got.Labels[engine.LabelClaimed]; ok || got.Annotations[engine.AnnotationSafeToEvict] != "" || got.Annotations["keep"] != "me" {
		t.Fatalf("after unmarking: labels %v annotations %v", got.Labels, got.Annotations)
	}
	patches := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" {
			patches++
			if pa := a.(k8stesting.PatchAction); pa.GetPatchType() != "application/merge-patch+json" {
				t.Errorf("patch type %s", pa.GetPatchType())
			}
		}
	}
	if patches != 2 {
		t.Errorf("%d patches, want 2", patches)
	}
	if err := c.PatchPodMeta(ctx, "desk-9", "", map[string]*string{engine.LabelClaimed: &yes}, nil); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("patch of a missing Pod: %v, want ErrNotFound", err)
	}
}

// TestDisruptionBudgetCalls: the budget's create, read, compare-and-swap
// update and delete, with the API's errors mapped.
func TestDisruptionBudgetCalls(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	c := NewCluster(client, "vdi")
	name := engine.DisruptionBudgetName("desk")
	if _, err := c.GetPodDisruptionBudget(ctx, name); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("get of none: %v", err)
	}
	created, err := c.CreatePodDisruptionBudget(ctx, engine.BuildDisruptionBudget("vdi", "desk"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePodDisruptionBudget(ctx, engine.BuildDisruptionBudget("vdi", "desk")); !errors.Is(err, engine.ErrAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	got, err := c.GetPodDisruptionBudget(ctx, name)
	if err != nil || got.Spec.MaxUnavailable.IntValue() != 0 {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if v := engine.ObserveProtection("desk", got); !v.Protected() {
		t.Fatalf("the budget as created reads %+v", v)
	}
	one := intstr.FromInt32(1)
	got.Spec.MaxUnavailable = &one
	got.ResourceVersion = "1" // the fake stamps none
	if _, err := c.UpdatePodDisruptionBudget(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := c.DeletePodDisruptionBudget(ctx, name, created.UID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeletePodDisruptionBudget(ctx, name, ""); err != nil {
		t.Fatalf("delete of one gone: %v", err)
	}
}

// TestReadProtection: a status reads the pool's budget, and says why it
// could not (no permission).
func TestReadProtection(t *testing.T) {
	ctx := context.Background()
	cm := engine.BuildConfigMap("vdi", "desk", engine.Spec{Image: "img:1", Size: 1})
	for _, tc := range []struct {
		name   string
		objs   []runtime.Object
		forbid bool
		want   string
	}{
		{"the pool's", []runtime.Object{engine.BuildDisruptionBudget("vdi", "desk")}, false, engine.ProtectionEnforced},
		{"none", nil, false, engine.ProtectionMissing},
		{"no permission", nil, true, engine.ProtectionUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objs...)
			if tc.forbid {
				client.PrependReactor("get", "poddisruptionbudgets", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "", nil)
				})
			}
			snap := engine.Snapshot{Namespace: "vdi", Pool: "desk", ConfigMap: cm}
			ReadProtection(ctx, client, &snap)
			v := engine.Observe(snap, t0)
			p := v.Protection()
			if p == nil || p.State != tc.want {
				t.Fatalf("Protection = %+v, want %s", p, tc.want)
			}
			if tc.forbid && (p.Detail != "no permission to get poddisruptionbudgets" || !strings.HasPrefix(p.Text(), "cannot tell whether")) {
				t.Errorf("detail %q, text %q", p.Detail, p.Text())
			}
		})
	}
}

// TestNodeStatesCordoned: the one-shot readers and the Watcher's node
// informer know the cordoned nodes; uncordoning is news.
func TestNodeStatesCordoned(t *testing.T) {
	cordoned := testNode("node-a", false)
	cordoned.Spec.Unschedulable = true
	_, c := NodeStates(context.Background(), fake.NewClientset(cordoned, testNode("node-b", false)))
	if len(c) != 1 || !c["node-a"] {
		t.Fatalf("NodeStates cordoned = %v, want node-a", c)
	}
	snap, err := NewCluster(fake.NewClientset(append(poolObjects("desk", 1), cordoned)...), ns).Snapshot(context.Background(), "desk")
	if err != nil || !snap.NodeCordoned["node-a"] {
		t.Fatalf("Snapshot NodeCordoned = %v, %v", snap.NodeCordoned, err)
	}

	w, client := startWatcher(t, append(poolObjects("desk", 1), cordoned, testNode("node-b", false))...)
	poll(t, "the cordoned node to be known", func() bool { return w.nodes.Cordoned()["node-a"] })
	if s := mustWatcherSnapshot(t, w); !s.NodeCordoned["node-a"] || len(s.NodeCordoned) != 1 {
		t.Fatalf("snapshot NodeCordoned = %v", s.NodeCordoned)
	}
	news := w.nodes.news.Load()
	if _, err := client.CoreV1().Nodes().Update(t.Context(), testNode("node-a", false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "news of node-a uncordoned", func() bool { return w.nodes.news.Load() > news })
	if c := w.nodes.Cordoned(); len(c) != 0 {
		t.Errorf("after uncordon: %v", c)
	}
}

// TestBudgetWatch: the controller's cache of budgets hands a pool's budget
// to its reconcile only when it holds it as the engine writes it, and not at
// all when it may not list them.
func TestBudgetWatch(t *testing.T) {
	changed := engine.BuildDisruptionBudget(ns, "art")
	one := intstr.FromInt32(1)
	changed.Spec.MaxUnavailable = &one
	client := fake.NewClientset(engine.BuildDisruptionBudget(ns, "desk"), changed)
	b := NewBudgetWatch(client, ns, nil)
	b.Start(t.Context())
	poll(t, "the budgets cached", func() bool { return b.Read(ns, "desk") != nil })
	if r := b.Read(ns, "art"); r != nil {
		t.Errorf("a changed budget read from the cache: %+v", r)
	}
	if r := b.Read(ns, "none"); r != nil {
		t.Errorf("a missing budget read from the cache: %+v", r)
	}

	denied := fake.NewClientset(engine.BuildDisruptionBudget(ns, "desk"))
	denied.PrependReactor("list", "poddisruptionbudgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "", nil)
	})
	d := NewBudgetWatch(denied, ns, nil)
	d.Start(t.Context())
	poll(t, "the refusal", func() bool { return d.forbidden.Load() })
	if r := d.Read(ns, "desk"); r != nil {
		t.Errorf("a forbidden cache read: %+v", r)
	}
}
