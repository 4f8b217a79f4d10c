package kube

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

const ns = "vdi"

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func poolObjects(pool string, n int) []runtime.Object {
	spec := engine.Spec{Image: "ghcr.io/example/desktop:1", Size: n}
	spec.Default()
	objs := []runtime.Object{engine.BuildConfigMap(ns, pool, spec)}
	for i := 1; i <= n; i++ {
		objs = append(objs, engine.BuildPod(ns, pool, i, spec), engine.BuildPVC(ns, pool, i, spec))
	}
	objs = append(objs, engine.ClaimLease(ns, pool, engine.MemberName(pool, 1), "alice@example.com", t0))
	return objs
}

func startWatcher(t *testing.T, objs ...runtime.Object) (*Watcher, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	return startWatcherOn(t, client), client
}

// startWatcherOn starts a Watcher on client and waits for its pool caches.
func startWatcherOn(t *testing.T, client *fake.Clientset) *Watcher {
	t.Helper()
	w := NewWatcher(client, ns, withClock(func() time.Time { return t0 }))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	syncCtx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	if !w.WaitForSync(syncCtx) {
		t.Fatal("caches did not sync within 10s")
	}
	return w
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestWatcherSnapshotsAndSelector(t *testing.T) {
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "corral-vdi-ctpool-ghost", Namespace: ns}}
	strayPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ghost-1", Namespace: ns}}
	other := poolObjects("desk", 1)[1].(*corev1.Pod).DeepCopy()
	other.Namespace = "elsewhere"
	objs := append(poolObjects("desk", 2), poolObjects("gpu", 1)...)
	objs = append(objs, stray, strayPod, other)
	w, _ := startWatcher(t, objs...)

	if !w.Synced() {
		t.Fatal("Synced is false after WaitForSync")
	}
	snaps := w.Snapshots()
	if len(snaps) != 2 || snaps[0].Pool != "desk" || snaps[1].Pool != "gpu" {
		t.Fatalf("pools = %v, want [desk gpu]", poolNames(snaps))
	}
	desk := snaps[0]
	if desk.ConfigMap == nil || len(desk.Pods) != 2 || len(desk.PVCs) != 2 || len(desk.Leases) != 1 {
		t.Fatalf("desk snapshot: cm %v pods %d pvcs %d leases %d", desk.ConfigMap != nil, len(desk.Pods), len(desk.PVCs), len(desk.Leases))
	}
	view := engine.Observe(desk, t0)
	if view.Status.Claimed != 1 || len(view.Members) != 2 {
		t.Errorf("observed desk: claimed %d members %d", view.Status.Claimed, len(view.Members))
	}

	one, err := w.Snapshot(context.Background(), "gpu")
	if err != nil || one.ConfigMap == nil || len(one.Pods) != 1 {
		t.Fatalf("Snapshot(gpu) = %+v, %v", one, err)
	}
	if _, err := w.Snapshot(context.Background(), "ghost"); err != nil {
		t.Fatalf("Snapshot(ghost): %v", err)
	}
	if g, _ := w.Snapshot(context.Background(), "ghost"); g.ConfigMap != nil || len(g.Pods) != 0 {
		t.Errorf("an unlabelled ConfigMap or Pod reached the cache view: %+v", g)
	}
}

func poolNames(snaps []engine.Snapshot) []string {
	var out []string
	for _, s := range snaps {
		out = append(out, s.Pool)
	}
	return out
}

func TestTransformDropsManagedFields(t *testing.T) {
	objs := poolObjects("desk", 1)
	pod := objs[1].(*corev1.Pod)
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	pod.Annotations[lastAppliedAnnotation] = `{"huge":"json"}`
	pod.Annotations["keep.me/too"] = "yes"
	w, _ := startWatcher(t, objs...)

	got, err := w.pods.Pods(ns).Get(pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	if got.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", got.ManagedFields)
	}
	if _, ok := got.Annotations[lastAppliedAnnotation]; ok {
		t.Error("last-applied annotation kept")
	}
	if got.Annotations["keep.me/too"] != "yes" {
		t.Errorf("other annotations lost: %v", got.Annotations)
	}

	// A tombstone stays a tombstone, with its object stripped.
	out, err := StripForCache(cache.DeletedFinalStateUnknown{Key: "vdi/desk-1", Obj: pod.DeepCopy()})
	tomb, ok := out.(cache.DeletedFinalStateUnknown)
	if err != nil || !ok {
		t.Fatalf("tombstone became %T, %v", out, err)
	}
	if p := tomb.Obj.(*corev1.Pod); p.ManagedFields != nil {
		t.Error("tombstone's managedFields kept")
	}
}

func TestWatcherSignalsNewObjects(t *testing.T) {
	w, client := startWatcher(t, poolObjects("desk", 1)...)
	drain(w)
	lease := engine.ClaimLease(ns, "desk", "desk-9", "bob@example.com", t0)
	if _, err := client.CoordinationV1().Leases(ns).Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("no change signal within 10s of a new Lease")
	}
	poll(t, "the lease in Snapshots", func() bool { return len(w.Snapshots()[0].Leases) == 2 })
	if got := w.LastSync(); !got.Equal(t0) {
		t.Errorf("LastSync = %v, want the clock's %v", got, t0)
	}
	if at, err := w.LastWatchError(); !at.IsZero() || err != nil {
		t.Errorf("LastWatchError = %v %v on a healthy watch", at, err)
	}

	// An unlabelled object signals nothing.
	drain(w)
	before, _ := w.Stats()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: ns}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Follow it with a labelled change, and wait for that one.
	pod := poolObjects("desk", 1)[1].(*corev1.Pod)
	pod.Labels["marker"] = "x"
	if _, err := client.CoreV1().Pods(ns).Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the pod update", func() bool { e, _ := w.Stats(); return e > before })
	if e, _ := w.Stats(); e != before+1 {
		t.Errorf("events = %d, want %d: the unlabelled ConfigMap was handled", e, before+1)
	}
}

func drain(w *Watcher) {
	select {
	case <-w.Changed():
	default:
	}
}

// TestWatcherBurstCoalesces pushes 10,000 Pod updates through the informer
// (list from the fake clientset, then a fake watch carrying the updates)
// while a slow reader looks at the channel once per batch: the reader sees
// at most one signal per look, far fewer than the events.
func TestWatcherBurstCoalesces(t *testing.T) {
	const updates, batch = 10000, 100
	client := fake.NewClientset(poolObjects("desk", 1)...)
	podWatch := watch.NewFakeWithChanSize(updates+1, false)
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, podWatch, nil
	})
	w := NewWatcher(client, ns, withClock(func() time.Time { return t0 }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	syncCtx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	if !w.WaitForSync(syncCtx) {
		t.Fatal("caches did not sync")
	}
	drain(w)
	eventsBefore, signalsBefore := w.Stats()
	pod, err := client.CoreV1().Pods(ns).Get(ctx, "desk-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	received, looks := 0, 0
	for i := 1; i <= updates; i++ {
		p := pod.DeepCopy()
		p.ResourceVersion = fmt.Sprint(1000 + i)
		p.Annotations["seq"] = fmt.Sprint(i)
		podWatch.Modify(p)
		if i%batch != 0 {
			continue
		}
		want := fmt.Sprint(i)
		poll(t, "update "+want, func() bool {
			p, err := w.pods.Pods(ns).Get("desk-1")
			return err == nil && p.Annotations["seq"] == want
		})
		looks++
		select {
		case <-w.Changed():
			received++
		default:
		}
	}
	poll(t, "every event handled", func() bool { e, _ := w.Stats(); return e-eventsBefore >= updates })
	events, signals := w.Stats()
	events -= eventsBefore
	signals -= signalsBefore
	t.Logf("%d updates: %d handler events, %d signals sent, %d received in %d looks", updates, events, signals, received, looks)
	if received > looks {
		t.Errorf("received %d signals in %d looks", received, looks)
	}
	if received == 0 {
		t.Error("no signal at all for 10,000 updates")
	}
	if signals > int64(looks)+1 || signals*10 > events {
		t.Errorf("%d signals sent for %d events in %d looks: bursts do not coalesce", signals, events, looks)
	}
}

func TestWatcherRecordsWatchErrors(t *testing.T) {
	client := fake.NewClientset(poolObjects("desk", 1)...)
	client.PrependWatchReactor("leases", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, errors.New("connection refused")
	})
	w := NewWatcher(client, ns, withClock(func() time.Time { return t0 }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err == nil {
		t.Error("a second Start succeeded")
	}
	poll(t, "a recorded watch error", func() bool { at, err := w.LastWatchError(); return !at.IsZero() && err != nil })
	_, err := w.LastWatchError()
	t.Logf("recorded: %v", err)
}

func TestSnapshotBeforeSyncFails(t *testing.T) {
	w := NewWatcher(fake.NewClientset(), ns)
	if _, err := w.Snapshot(context.Background(), "desk"); err == nil {
		t.Error("Snapshot before sync succeeded")
	}
	if w.Synced() {
		t.Error("Synced before Start")
	}
}

// TestWatcherSignalsFirstSync: the end of the first sync signals the reader,
// even in a namespace without a pool, where no object sends an event.
func TestWatcherSignalsFirstSync(t *testing.T) {
	w := NewWatcher(fake.NewClientset(), ns, withClock(func() time.Time { return t0 }))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("no change signal within 10s of the start")
	}
	poll(t, "the sync the signal announced", w.Synced)
	if e, _ := w.Stats(); e != 0 {
		t.Errorf("events = %d in an empty namespace", e)
	}
}
