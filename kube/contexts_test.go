package kube

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// TestContextsChangesFollowTheCaches: random Pod, PVC and Lease
// changes in two clusters, each read by a fleet Watcher on a fake
// clientset; after each batch whose handlers ran, the pools kept by
// difference from the merged changes (engine.PoolState, as the dashboard
// keeps them) are the whole observation of the merged snapshots.
func TestContextsChangesFollowTheCaches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rnd := rand.New(rand.NewPCG(5, 15))
	spec := engine.Spec{Image: "ghcr.io/example/desktop:2", Size: 6}
	spec.Default()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	namespaces, pools := []string{"vdi-a", "vdi-b"}, []string{"desk", "lab"}

	type clusterFixture struct {
		client *fake.Clientset
		sent   int64 // events its Watcher's handlers are to get
	}
	var clusters []WatchedContext
	var fixtures []*clusterFixture
	for _, name := range []string{"prod", "arn:aws:eks:eu-west-1:1:cluster/lab"} {
		var objs []runtime.Object
		for _, ns := range namespaces {
			for _, pool := range pools {
				objs = append(objs, engine.BuildConfigMap(ns, pool, spec))
				for i := 1; i <= spec.Size; i++ {
					objs = append(objs, engine.BuildPod(ns, pool, i, spec), engine.BuildPVC(ns, pool, i, spec))
				}
			}
		}
		f := &clusterFixture{client: fake.NewClientset(objs...), sent: int64(len(objs))}
		watches := make(chan struct{}, 8)
		f.client.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
			wi, err := f.client.Tracker().Watch(a.GetResource(), a.GetNamespace())
			if err != nil {
				return false, nil, err
			}
			watches <- struct{}{}
			return true, wi, nil
		})
		w := NewFleetWatcher(f.client, nil)
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if !w.WaitForSync(ctx) {
			t.Fatal("caches did not sync")
		}
		for range 4 {
			select {
			case <-watches:
			case <-ctx.Done():
				t.Fatal("the informers did not all watch")
			}
		}
		clusters = append(clusters, WatchedContext{Name: name, Watcher: w})
		fixtures = append(fixtures, f)
	}
	src := NewContexts(ctx, clusters)
	handled := func() {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			for i, c := range clusters {
				if events, _ := c.Watcher.Stats(); events < fixtures[i].sent {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatal("the handlers did not get every change within 10s")
		}
	}
	handled()

	at := t0
	var states []*engine.PoolState
	index := map[engine.PoolRef]int{}
	whole := func() {
		states, index = nil, map[engine.PoolRef]int{}
		for i, snap := range src.Snapshots() {
			states = append(states, engine.NewPoolState(snap, at))
			index[snap.Ref()] = i
		}
	}
	if all, _ := src.TakeChanges(); !all {
		t.Fatal("the first changes are not all")
	}
	whole()
	// Each snapshot names its cluster by Context; its Namespace is the
	// cluster's own.
	for _, snap := range src.Snapshots() {
		if !slices.ContainsFunc(clusters, func(c WatchedContext) bool { return c.Name == snap.Context }) || !slices.Contains(namespaces, snap.Namespace) {
			t.Fatalf("snapshot %q: context %q, namespace %q", snap.Pool, snap.Context, snap.Namespace)
		}
	}
	if len(index) != len(clusters)*len(namespaces)*len(pools) {
		t.Fatalf("%d pools, want %d (one per cluster, namespace and name)", len(index), len(clusters)*len(namespaces)*len(pools))
	}
	byDifference := 0
	const rounds = 40
	for round := range rounds {
		for range 1 + rnd.IntN(8) {
			k := rnd.IntN(len(fixtures))
			f := fixtures[k]
			ns, pool := namespaces[rnd.IntN(len(namespaces))], pools[rnd.IntN(len(pools))]
			i := 1 + rnd.IntN(spec.Size)
			member := engine.MemberName(pool, i)
			var err error
			switch op := rnd.IntN(4); op {
			case 0, 1: // a Pod's readiness and node
				p := engine.BuildPod(ns, pool, i, spec)
				p.Spec.NodeName = fmt.Sprintf("node-%d", rnd.IntN(3))
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse}[rnd.IntN(2)]}}
				err = f.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, ns)
			case 2: // a claim taken or given back
				gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
				if _, gerr := f.client.Tracker().Get(gvr, ns, engine.LeaseName(member)); gerr == nil {
					err = f.client.Tracker().Delete(gvr, ns, engine.LeaseName(member))
				} else {
					err = f.client.Tracker().Create(gvr, engine.ClaimLease(ns, pool, member, fmt.Sprintf("user%d@example.com", rnd.IntN(4)),
						at.Add(-time.Duration(rnd.IntN(120))*time.Minute)), ns)
				}
			default: // a data PVC lost or made again
				gvr := corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
				if _, gerr := f.client.Tracker().Get(gvr, ns, engine.PVCName(member)); gerr == nil {
					err = f.client.Tracker().Delete(gvr, ns, engine.PVCName(member))
				} else {
					err = f.client.Tracker().Create(gvr, engine.BuildPVC(ns, pool, i, spec), ns)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			f.sent++
		}
		handled()
		at = at.Add(time.Duration(rnd.IntN(20)) * time.Minute)
		all, changed := src.TakeChanges()
		applied := !all
		updates := map[int]engine.PoolUpdate{}
		for _, pc := range changed {
			i, ok := index[pc.Ref()]
			if !ok || pc.Full {
				applied = false
				break
			}
			updates[i] = src.ReadChanges(pc)
		}
		for i := range states {
			if !applied {
				break
			}
			_, applied = states[i].Update(updates[i], at)
		}
		if applied {
			byDifference++
		} else {
			whole()
		}
		want := engine.ObserveAll(src.Snapshots(), at)
		if len(want) != len(states) {
			t.Fatalf("round %d: %d pools kept, %d observed", round, len(states), len(want))
		}
		for i, s := range states {
			if !reflect.DeepEqual(*s.View(), want[i]) {
				t.Fatalf("round %d: pool %s/%s kept by difference differs from its whole observation", round, want[i].Namespace, want[i].Name)
			}
		}
	}
	t.Logf("%d of %d rounds applied by difference", byDifference, rounds)
	if byDifference < rounds/2 {
		t.Errorf("only %d of %d rounds applied by difference", byDifference, rounds)
	}
}

// A cluster is found by its context's name, which may hold "/".
func TestContextsWatcher(t *testing.T) {
	prod, lab := &Watcher{}, &Watcher{}
	src := NewContexts(t.Context(), []WatchedContext{{Name: "prod", Watcher: prod}, {Name: "arn:aws:eks:eu-west-1:1:cluster/lab", Watcher: lab}, {Name: "dmz"}})
	for _, tc := range []struct {
		context string
		want    *Watcher
	}{
		{"prod", prod},
		{"arn:aws:eks:eu-west-1:1:cluster/lab", lab},
		{"dmz", nil}, // not watched
		{"other", nil},
		{"", nil},
	} {
		if w := src.Watcher(tc.context); w != tc.want {
			t.Errorf("Watcher(%q) = %p, want %p", tc.context, w, tc.want)
		}
	}
}
