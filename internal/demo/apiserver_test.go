package demo

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func cmNamed(name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}, Data: map[string]string{"k": "v"}}
}

func TestAPIServerCreateSetsIdentity(t *testing.T) {
	cs, _ := newClientset(func() time.Time { return t0 }, 1)
	ctx := context.Background()
	a, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, cmNamed("a", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "b-", Namespace: "ns"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.UID == "" || b.UID == "" || a.UID == b.UID {
		t.Errorf("UIDs %q, %q: want two distinct ones", a.UID, b.UID)
	}
	if a.ResourceVersion == "" || a.ResourceVersion == b.ResourceVersion {
		t.Errorf("resourceVersions %q, %q: want two distinct ones", a.ResourceVersion, b.ResourceVersion)
	}
	if !a.CreationTimestamp.Time.Equal(t0) {
		t.Errorf("creationTimestamp %v, want %v", a.CreationTimestamp, t0)
	}
	if len(b.Name) != len("b-")+5 {
		t.Errorf("generated name %q, want b- and 5 characters", b.Name)
	}
	if _, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, cmNamed("a", nil), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}
}

func TestAPIServerUpdateIsCompareAndSwap(t *testing.T) {
	cs, _ := newClientset(func() time.Time { return t0 }, 1)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("ns")
	a, err := cms.Create(ctx, cmNamed("a", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := a.DeepCopy()
	a.Data["k"] = "w"
	b, err := cms.Update(ctx, a, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update with the current resourceVersion: %v", err)
	}
	if b.ResourceVersion == a.ResourceVersion || b.UID != a.UID || !b.CreationTimestamp.Equal(&a.CreationTimestamp) {
		t.Errorf("after update: rv %q (was %q), uid %q (was %q)", b.ResourceVersion, a.ResourceVersion, b.UID, a.UID)
	}
	stale.Data["k"] = "x"
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with a stale resourceVersion: %v, want Conflict", err)
	}
	// A merge patch goes through too and bumps the version.
	c, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"y"}}`), metav1.PatchOptions{})
	if err != nil || c.Data["k"] != "y" || c.ResourceVersion == b.ResourceVersion {
		t.Errorf("patch: %v, data %v, rv %q", err, c.Data, c.ResourceVersion)
	}
	// Server-side apply is refused with a clear error.
	if _, err := cms.Patch(ctx, "a", types.ApplyPatchType, []byte(`{}`), metav1.PatchOptions{FieldManager: "x"}); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("apply: %v, want MethodNotSupported", err)
	}
}

func TestAPIServerDeletePreconditions(t *testing.T) {
	cs, _ := newClientset(func() time.Time { return t0 }, 1)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("ns")
	a, err := cms.Create(ctx, cmNamed("a", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := types.UID("other")
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with another UID: %v, want Conflict", err)
	}
	oldRV := a.ResourceVersion
	if a, err = cms.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &oldRV}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with a stale resourceVersion: %v, want Conflict", err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &a.UID, ResourceVersion: &a.ResourceVersion}}); err != nil {
		t.Errorf("delete with matching preconditions: %v", err)
	}
}

// The engine's Lease compare-and-swap holds through kube.Cluster.
func TestAPIServerLeaseCASThroughKube(t *testing.T) {
	cs, _ := newClientset(func() time.Time { return t0 }, 1)
	ctx := context.Background()
	c := kube.NewCluster(cs, "ns")
	l, err := c.CreateLease(ctx, engine.ClaimLease("ns", "desk", "desk-1", "alice@example.com", t0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateLease(ctx, engine.ClaimLease("ns", "desk", "desk-1", "bob@example.com", t0)); !errors.Is(err, engine.ErrAlreadyExists) {
		t.Errorf("second claim: %v, want ErrAlreadyExists", err)
	}
	first := l.DeepCopy()
	bob := "bob@example.com"
	l.Spec.HolderIdentity = &bob
	if _, err := c.UpdateLease(ctx, l); err != nil {
		t.Fatalf("update: %v", err)
	}
	if _, err := c.UpdateLease(ctx, first); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("stale update: %v, want ErrConflict", err)
	}
	if err := c.DeleteLease(ctx, first.Name, first.ResourceVersion); !errors.Is(err, engine.ErrConflict) {
		t.Errorf("stale delete: %v, want ErrConflict", err)
	}
}

func TestAPIServerSelectors(t *testing.T) {
	cs, _ := newClientset(func() time.Time { return t0 }, 1)
	ctx := context.Background()
	for i, l := range []map[string]string{{"pool": "a"}, {"pool": "b"}, nil} {
		if _, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, cmNamed(fmt.Sprintf("cm-%d", i), l), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cs.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{LabelSelector: "pool", FieldSelector: "metadata.name!=cm-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "cm-0" {
		t.Errorf("selected %d items, want only cm-0", len(list.Items))
	}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "desk-1"}, Reason: "Pulled"}
	if _, err := cs.CoreV1().Events("ns").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	evs, err := cs.CoreV1().Events("ns").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Pod,involvedObject.name=desk-1"})
	if err != nil || len(evs.Items) != 1 {
		t.Errorf("events by involved object: %v, %d items", err, len(evs.Items))
	}
	if _, err := cs.CoreV1().Events("ns").List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=1"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field: %v, want BadRequest", err)
	}
}

// A label-selected watch sees objects enter (Added) and leave (Deleted) its
// selection, and replays what changed after the resourceVersion it starts at.
func TestAPIServerWatch(t *testing.T) {
	cs, _ := newClientset(func() time.Time { return t0 }, 1)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("ns")
	before, err := cms.Create(ctx, cmNamed("before", map[string]string{"pool": "a"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "pool=a"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "pool=a", ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	x, err := cms.Create(ctx, cmNamed("x", map[string]string{"pool": "b"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x.Labels["pool"] = "a"
	if x, err = cms.Update(ctx, x, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	x.Labels["pool"] = "c"
	if _, err = cms.Update(ctx, x, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	before.Data["k"] = "changed"
	if _, err := cms.Update(ctx, before, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"ADDED x", "DELETED x", "MODIFIED before", "DELETED before"}
	for _, wnt := range want {
		select {
		case ev := <-w.ResultChan():
			cm := ev.Object.(*corev1.ConfigMap)
			if got := string(ev.Type) + " " + cm.Name; got != wnt {
				t.Errorf("event %q, want %q", got, wnt)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event, want %q", wnt)
		}
	}

	// Started at resourceVersion 0, a watch first lists what exists.
	w2, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	select {
	case ev := <-w2.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "x" {
			t.Errorf("first event %s %s, want ADDED x", ev.Type, ev.Object.(*corev1.ConfigMap).Name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no initial event")
	}
}

// A watcher nobody reads neither blocks nor breaks writers (client-go's
// tracker panics after 100 unread events), and Stop closes the channel.
func TestAPIServerUnreadWatchDoesNotBlock(t *testing.T) {
	cs, _ := newClientset(func() time.Time { return t0 }, 1)
	ctx := context.Background()
	leases := cs.CoordinationV1().Leases("ns")
	w, err := leases.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("l-%d", i), Namespace: "ns"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.Stop()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("result channel not closed after Stop")
		}
	}
}
