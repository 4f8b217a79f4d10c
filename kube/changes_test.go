package kube

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// TestWatcherChangesFollowTheCache writes random changes through the API
// (Pods, PVCs, Leases, ConfigMaps; objects named off their member; a Pod
// moved to another pool) and, once the Watcher's handlers saw each write,
// brings pool states up to date from TakeChanges and ReadChanges as the
// dashboard does. Every pool's state must be what Observe makes of the
// whole cache (Snapshots).
func TestWatcherChangesFollowTheCache(t *testing.T) {
	for _, fleet := range []bool{false, true} {
		t.Run(fmt.Sprintf("fleet=%v", fleet), func(t *testing.T) {
			objs := append(poolObjects("desk", 4), poolObjects("lab", 4)...)
			client := fake.NewClientset(objs...)
			var w *Watcher
			if fleet {
				w = NewFleetWatcher(client, nil, withProbeInterval(0))
			} else {
				w = NewWatcher(client, ns, withProbeInterval(0))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if !w.WaitForSync(ctx) {
				t.Fatal("caches did not sync")
			}
			d := &changeDriver{t: t, ctx: ctx, client: client, w: w, rnd: rand.New(rand.NewPCG(18, 3)), states: map[engine.PoolRef]*engine.PoolState{}}
			d.events = int64(len(objs)) // the initial list: one add each
			poll(t, "the initial adds", func() bool { e, _ := w.Stats(); return e >= d.events })
			now := t0
			d.bringUp(now) // the first take is "all"
			incremental := 0
			const steps = 200
			for i := range steps {
				now = now.Add(time.Duration(d.rnd.IntN(120)) * time.Second)
				what := d.randomWrite(now)
				events, _ := w.Stats()
				d.events++
				poll(t, "the handler to see "+what, func() bool { events, _ = w.Stats(); return events >= d.events })
				if events != d.events {
					t.Fatalf("step %d (%s): %d handler calls, want %d", i, what, events, d.events)
				}
				if d.bringUp(now) {
					incremental++
				}
				for _, snap := range w.Snapshots() {
					k := engine.PoolRef{Namespace: snap.Namespace, Name: snap.Pool}
					s := d.states[k]
					if s == nil {
						t.Fatalf("step %d (%s): no state for pool %s", i, what, k)
					}
					if want := engine.Observe(snap, now); !reflect.DeepEqual(*s.View(), want) {
						t.Fatalf("step %d (%s): pool %s differs from Observe of the cache:\n got %s\nwant %s", i, what, k, briefView(s.View()), briefView(&want))
					}
				}
			}
			t.Logf("%d of %d steps applied by difference in every pool", incremental, steps)
			if incremental < steps/3 {
				t.Errorf("only %d of %d steps applied by difference", incremental, steps)
			}
		})
	}
}

type changeDriver struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	w      *Watcher
	rnd    *rand.Rand
	states map[engine.PoolRef]*engine.PoolState
	events int64
}

// bringUp applies what the Watcher recorded; it reports whether every pool
// changed was brought up by difference.
func (d *changeDriver) bringUp(now time.Time) bool {
	all, pools := d.w.TakeChanges()
	if all {
		clear(d.states)
		for _, snap := range d.w.Snapshots() {
			d.states[engine.PoolRef{Namespace: snap.Namespace, Name: snap.Pool}] = engine.NewPoolState(snap, now)
		}
		return false
	}
	byDifference := true
	changed := map[engine.PoolRef]bool{}
	for _, pc := range pools {
		changed[engine.PoolRef{Namespace: pc.Namespace, Name: pc.Pool}] = true
	}
	for k, s := range d.states {
		if !changed[k] {
			if _, ok := s.Update(engine.PoolUpdate{}, now); !ok {
				d.t.Fatalf("pool %s: an update of time alone was not applied", k)
			}
		}
	}
	for _, pc := range pools {
		k := engine.PoolRef{Namespace: pc.Namespace, Name: pc.Pool}
		if s := d.states[k]; s != nil && !pc.Full {
			if _, ok := s.Update(d.w.ReadChanges(pc), now); ok {
				continue
			}
		}
		byDifference = false
		snap, err := d.w.In(pc.Namespace).Snapshot(d.ctx, pc.Pool)
		if err != nil {
			d.t.Fatal(err)
		}
		d.states[k] = engine.NewPoolState(snap, now)
	}
	return byDifference
}

// randomWrite makes one write to a pool object and says what it was.
func (d *changeDriver) randomWrite(now time.Time) string {
	ctx, c, rnd := d.ctx, d.client, d.rnd
	pool := []string{"desk", "lab"}[rnd.IntN(2)]
	member := engine.MemberName(pool, 1+rnd.IntN(5))
	spec := engine.Spec{Image: "ghcr.io/example/desktop:1", Size: 4}
	spec.Default()
	must := func(err error) {
		if err != nil {
			d.t.Fatal(err)
		}
	}
	pods := c.CoreV1().Pods(ns)
	switch op := rnd.IntN(100); {
	case op < 35:
		p, err := pods.Get(ctx, member, metav1.GetOptions{})
		if err != nil {
			n, _ := engine.MemberIndex(pool, member)
			_, err = pods.Create(ctx, engine.BuildPod(ns, pool, n, spec), metav1.CreateOptions{})
			must(err)
			return "create pod " + member
		}
		p.Status.Phase = []corev1.PodPhase{corev1.PodRunning, corev1.PodPending, corev1.PodFailed}[rnd.IntN(3)]
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		must(err)
		return "update pod " + member
	case op < 45:
		if err := pods.Delete(ctx, member, metav1.DeleteOptions{}); err != nil {
			return d.randomWrite(now)
		}
		return "delete pod " + member
	case op < 55:
		pvcs := c.CoreV1().PersistentVolumeClaims(ns)
		if err := pvcs.Delete(ctx, engine.PVCName(member), metav1.DeleteOptions{}); err != nil {
			n, _ := engine.MemberIndex(pool, member)
			_, err = pvcs.Create(ctx, engine.BuildPVC(ns, pool, n, spec), metav1.CreateOptions{})
			must(err)
			return "create pvc " + member
		}
		return "delete pvc " + member
	case op < 75:
		leases := c.CoordinationV1().Leases(ns)
		if rnd.IntN(3) == 0 {
			if err := leases.Delete(ctx, engine.LeaseName(member), metav1.DeleteOptions{}); err == nil {
				return "delete lease " + member
			}
		}
		at := now.Add(time.Duration(rnd.IntN(4)-3) * 20 * time.Minute)
		l := engine.ClaimLease(ns, pool, member, "ann@example.com", at)
		if old, err := leases.Get(ctx, l.Name, metav1.GetOptions{}); err == nil {
			l.ResourceVersion = old.ResourceVersion
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
			must(err)
			return "renew lease " + member
		}
		_, err := leases.Create(ctx, l, metav1.CreateOptions{})
		must(err)
		return "create lease " + member
	case op < 85:
		cms := c.CoreV1().ConfigMaps(ns)
		cm, err := cms.Get(ctx, engine.ConfigMapName(pool), metav1.GetOptions{})
		must(err)
		if rnd.IntN(3) == 0 {
			s := spec
			s.Size = 3 + rnd.IntN(3)
			cm.Data[engine.KeySpec] = engine.BuildConfigMap(ns, pool, s).Data[engine.KeySpec]
		} else {
			cm.Data[engine.KeyStatus] = engine.Status{Desired: 4, Ready: rnd.IntN(5)}.Encode()
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		must(err)
		return "update the definition of " + pool
	case op < 92:
		list, err := pods.List(ctx, metav1.ListOptions{})
		must(err)
		for _, p := range list.Items {
			if strings.HasSuffix(p.Name, "-copy") {
				must(pods.Delete(ctx, p.Name, metav1.DeleteOptions{}))
				return "delete pod " + p.Name
			}
		}
		name := member + "-copy"
		if rnd.IntN(3) > 0 {
			return d.randomWrite(now)
		}
		// Labelled for a member that has no Pod of its own: which of two
		// Pods of a member Observe takes depends on the order of the list.
		n, _ := engine.MemberIndex(pool, member)
		p := engine.BuildPod(ns, pool, 90+n, spec)
		p.Name = name
		_, err = pods.Create(ctx, p, metav1.CreateOptions{})
		must(err)
		return "create pod " + name + " (named off its member)"
	default:
		p, err := pods.Get(ctx, member, metav1.GetOptions{})
		if err != nil {
			return d.randomWrite(now)
		}
		other := map[string]string{"desk": "lab", "lab": "desk"}[p.Labels[engine.LabelPool]]
		p.Labels[engine.LabelPool] = other
		_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
		must(err)
		return "move pod " + member + " to pool " + other
	}
}

// briefView lists a view's members and their states.
func briefView(v *engine.PoolView) string {
	out := fmt.Sprintf("%+v", v.Status)
	for i := range v.Members {
		m := &v.Members[i]
		out += fmt.Sprintf(" %s:%s:pod=%v,pvc=%v,lease=%v", m.Name, m.State, m.Pod != nil, m.PVC != nil, m.Lease != nil)
		if m.Pod != nil {
			out += fmt.Sprintf("(%s %s)", m.Pod.Name, m.Pod.Status.Phase)
		}
	}
	return out
}

func TestWatcherRecordsChanges(t *testing.T) {
	spec := engine.Spec{Image: "ghcr.io/example/desktop:1", Size: 4}
	spec.Default()
	pod := engine.BuildPod(ns, "desk", 2, spec)
	copyPod := pod.DeepCopy()
	copyPod.Name = "desk-2-copy"
	unlabelled := pod.DeepCopy()
	delete(unlabelled.Labels, engine.LabelPool)
	otherLease := engine.ClaimLease(ns, "desk", "desk-1", "ann@example.com", t0)
	otherLease.Name = "leader-election"
	otherCM := engine.BuildConfigMap(ns, "desk", spec)
	otherCM.Name = "settings"
	cases := []struct {
		name string
		objs []any
		want []engine.PoolChanges
	}{
		{"a Pod", []any{pod}, []engine.PoolChanges{{Namespace: ns, Pool: "desk", Members: []string{"desk-2"}}}},
		{"a PVC, a Lease and a tombstone", []any{
			engine.BuildPVC(ns, "desk", 3, spec),
			engine.ClaimLease(ns, "lab", "lab-1", "ann@example.com", t0),
			cache.DeletedFinalStateUnknown{Key: ns + "/desk-2", Obj: pod},
		}, []engine.PoolChanges{
			{Namespace: ns, Pool: "desk", Members: []string{"desk-2", "desk-3"}},
			{Namespace: ns, Pool: "lab", Members: []string{"lab-1"}},
		}},
		{"the definition", []any{engine.BuildConfigMap(ns, "desk", spec)}, []engine.PoolChanges{{Namespace: ns, Pool: "desk", Definition: true, Members: []string{}}}},
		{"a Pod named off its member", []any{pod, copyPod}, []engine.PoolChanges{{Namespace: ns, Pool: "desk", Full: true}}},
		{"objects no pool observes", []any{unlabelled, otherCM, otherLease}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWatcher(fake.NewClientset(), ns)
			if all, _ := w.TakeChanges(); !all {
				t.Fatal("the first take is not all")
			}
			for _, o := range tc.objs {
				w.record(o)
			}
			all, got := w.TakeChanges()
			for i := range got {
				sort.Strings(got[i].Members)
			}
			if all || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("all %v, changes %+v; want %+v", all, got, tc.want)
			}
			if all, again := w.TakeChanges(); all || len(again) > 0 {
				t.Errorf("a second take returned %v %+v", all, again)
			}
		})
	}
	t.Run("too many members", func(t *testing.T) {
		w := NewWatcher(fake.NewClientset(), ns)
		w.TakeChanges()
		for i := 1; i <= maxRecordedMembers+1; i++ {
			w.record(engine.BuildPod(ns, "desk", i, spec))
		}
		if all, pools := w.TakeChanges(); !all || pools != nil {
			t.Errorf("all %v, %d pools; want all", all, len(pools))
		}
	})
}
