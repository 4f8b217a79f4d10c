package kube

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// TestFleetIncrementalReadEqualsWhole: random creates, updates (relabels
// to another pool, to an empty or invalid pool label, a ConfigMap renamed
// out of its definition) and deletes of every kind of pool object go
// through a fleet of fake informers; after each batch whose handlers ran,
// the fleet's read (the pools that changed regrouped, the others kept) is
// the whole regrouping of the caches, pool by pool and object by object.
// Some batches are not read, so that the marks of several add up.
func TestFleetIncrementalReadEqualsWhole(t *testing.T) {
	namespaces := []string{"vdi-a", "vdi-b", "vdi-c"}
	for _, tc := range []struct {
		name       string
		namespaces []string // nil: every namespace
		seed       uint64
	}{
		{name: "every namespace", seed: 1},
		{name: "every namespace, another sequence", seed: 2},
		{name: "namespaces named", namespaces: namespaces, seed: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleetFixture(t, tc.namespaces, namespaces, tc.seed)
			for round := range 30 {
				f.batch(1 + f.rng.IntN(15))
				f.waitHandled()
				if f.rng.IntN(3) == 0 {
					continue // no read: the next one regroups both batches' pools
				}
				got, want := describeSnapshots(f.w.Snapshots()), describeSnapshots(f.w.fleetSnapshotsWhole())
				if got != want {
					t.Fatalf("seed %d round %d: the read differs from the whole regrouping\nread:\n%s\nwhole:\n%s", tc.seed, round, got, want)
				}
			}
		})
	}
}

// fleetFixture is a fleet Watcher on a fake clientset and the objects it
// was sent, to change at random.
type fleetFixture struct {
	t          *testing.T
	client     *fake.Clientset
	w          *Watcher
	rng        *rand.Rand
	namespaces []string
	objects    map[string]runtime.Object // kind/namespace/name
	sent       int64                     // events the handlers are to get
	gen        int
}

func newFleetFixture(t *testing.T, watched, namespaces []string, seed uint64) *fleetFixture {
	t.Helper()
	f := &fleetFixture{t: t, rng: rand.New(rand.NewPCG(seed, seed)), namespaces: namespaces, objects: map[string]runtime.Object{}}
	var initial []runtime.Object
	for range 60 {
		if o := f.random(); o != nil {
			initial = append(initial, o)
		}
	}
	f.client = fake.NewClientset(initial...)
	for _, o := range initial {
		if handled(o) {
			f.sent++
		}
	}
	// A watch counts once the tracker serves it: no change made after is lost.
	watches := make(chan struct{}, 64)
	f.client.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		wi, err := f.client.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return false, nil, err
		}
		watches <- struct{}{}
		return true, wi, nil
	})
	f.w = NewFleetWatcher(f.client, watched, withProbeInterval(0))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		for _, s := range f.w.sets() {
			s.Shutdown()
		}
	})
	if err := f.w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if !f.w.WaitForSync(sctx) {
		t.Fatal("caches did not sync within 10s")
	}
	for range 4 * len(f.w.sets()) {
		select {
		case <-watches:
		case <-sctx.Done():
			t.Fatal("the informers did not all watch within 10s")
		}
	}
	f.waitHandled()
	return f
}

// labels the objects are given: valid pools, an empty and an invalid value.
var fleetFixtureLabels = []string{"desk", "lab", "kiosk", "", "Not_A_Pool"}

// random makes a new object in a free slot of the universe (nil: the slot
// drawn is taken) and records it.
func (f *fleetFixture) random() runtime.Object {
	kinds := []string{"configmaps", "pods", "persistentvolumeclaims", "leases"}
	kind, ns := kinds[f.rng.IntN(len(kinds))], f.namespaces[f.rng.IntN(len(f.namespaces))]
	name := f.name(kind)
	key := kind + "/" + ns + "/" + name
	if _, taken := f.objects[key]; taken {
		return nil
	}
	o := f.build(kind, ns, name)
	f.objects[key] = o
	return o
}

// name draws an object's name: a member's, a definition's (of any label,
// the empty pool's too) or one no pool names.
func (f *fleetFixture) name(kind string) string {
	pool := fleetFixtureLabels[f.rng.IntN(3)]
	switch kind {
	case "configmaps":
		return []string{engine.ConfigMapName("desk"), engine.ConfigMapName("lab"), engine.ConfigMapName("kiosk"),
			engine.ConfigMapName(""), "desk-notes"}[f.rng.IntN(5)]
	case "persistentvolumeclaims":
		return engine.PVCName(engine.MemberName(pool, 1+f.rng.IntN(4)))
	case "leases":
		if f.rng.IntN(8) == 0 {
			return "kube-scheduler" // no claim's
		}
		return engine.LeaseName(engine.MemberName(pool, 1+f.rng.IntN(4)))
	}
	if f.rng.IntN(8) == 0 {
		return "web-1"
	}
	return engine.MemberName(pool, 1+f.rng.IntN(4))
}

// build makes an object with a label drawn at random and a new generation.
func (f *fleetFixture) build(kind, ns, name string) runtime.Object {
	f.gen++
	meta := metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels:      map[string]string{engine.LabelPool: fleetFixtureLabels[f.rng.IntN(len(fleetFixtureLabels))]},
		Annotations: map[string]string{"gen": fmt.Sprint(f.gen)}}
	switch kind {
	case "configmaps":
		return &corev1.ConfigMap{ObjectMeta: meta}
	case "pods":
		return &corev1.Pod{ObjectMeta: meta}
	case "persistentvolumeclaims":
		return &corev1.PersistentVolumeClaim{ObjectMeta: meta}
	}
	if f.rng.IntN(3) == 0 {
		meta.Labels = nil // a broker's claim: known by its name alone
	}
	return &coordinationv1.Lease{ObjectMeta: meta}
}

// batch makes n random changes through the client.
func (f *fleetFixture) batch(n int) {
	f.t.Helper()
	for range n {
		kinds := []string{"configmaps", "pods", "persistentvolumeclaims", "leases"}
		kind, ns := kinds[f.rng.IntN(len(kinds))], f.namespaces[f.rng.IntN(len(f.namespaces))]
		name := f.name(kind)
		key := kind + "/" + ns + "/" + name
		_, exists := f.objects[key]
		var err error
		switch {
		case exists && f.rng.IntN(3) == 0:
			delete(f.objects, key)
			err = f.client.Tracker().Delete(fleetGVR(kind), ns, name)
		case exists:
			o := f.build(kind, ns, name)
			f.objects[key] = o
			err = f.client.Tracker().Update(fleetGVR(kind), o, ns)
		default:
			o := f.build(kind, ns, name)
			f.objects[key] = o
			err = f.client.Tracker().Create(fleetGVR(kind), o, ns)
		}
		if err != nil {
			f.t.Fatalf("%s %s: %v", kind, key, err)
		}
		if kind != "leases" || isClaimLeaseName(name) {
			f.sent++
		}
	}
}

// handled reports whether an object reaches the handlers: a Lease only when
// it is named as a claim Lease (the others never enter the cache).
func handled(o runtime.Object) bool {
	l, ok := o.(*coordinationv1.Lease)
	return !ok || isClaimLeaseName(l.Name)
}

func fleetGVR(kind string) schema.GroupVersionResource {
	if kind == "leases" {
		return coordinationv1.SchemeGroupVersion.WithResource(kind)
	}
	return corev1.SchemeGroupVersion.WithResource(kind)
}

// waitHandled waits until the handlers have had every change sent.
func (f *fleetFixture) waitHandled() {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return f.w.pools.handled.Load() >= f.sent, nil })
	if err != nil {
		f.t.Fatalf("the handlers had %d of %d changes after 10s", f.w.pools.handled.Load(), f.sent)
	}
	if got := f.w.pools.handled.Load(); got != f.sent {
		f.t.Fatalf("the handlers had %d changes, %d were sent", got, f.sent)
	}
}

// describeSnapshots writes pools, in order, with their objects sorted by
// name (the caches list them in no order), each with its generation.
func describeSnapshots(snaps []engine.Snapshot) string {
	var b strings.Builder
	for _, s := range snaps {
		fmt.Fprintf(&b, "%s/%q", s.Namespace, s.Pool)
		if s.ConfigMap != nil {
			fmt.Fprintf(&b, " cm=%s@%s", s.ConfigMap.Name, s.ConfigMap.Annotations["gen"])
		}
		var objs []string
		for _, p := range s.Pods {
			objs = append(objs, "pod:"+p.Name+"@"+p.Annotations["gen"])
		}
		for _, c := range s.PVCs {
			objs = append(objs, "pvc:"+c.Name+"@"+c.Annotations["gen"])
		}
		for _, l := range s.Leases {
			objs = append(objs, "lease:"+l.Name+"@"+l.Annotations["gen"])
		}
		slices.Sort(objs)
		fmt.Fprintf(&b, " %s\n", strings.Join(objs, " "))
	}
	return b.String()
}
