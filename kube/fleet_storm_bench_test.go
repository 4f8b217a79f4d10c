package kube_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// The fleet at scale on fake informers: 3 clusters x 20 namespaces x 50
// pools of 20 members (60,000 members), each cluster read by a fleet
// Watcher of every namespace and the three merged as the dashboard of
// several clusters merges them (mergedSource), against one pool of 1,000
// members in one namespace read by a Watcher (the one-pool scale of
// BenchmarkWatcherStorm and BenchmarkInformerCacheBytes). hack/benchreport
// holds the targets.

type fleetBenchScale struct {
	name                             string
	clusters, namespaces, pools, per int // clusters 0: one namespace, no fleet
}

var fleetBenchScales = []fleetBenchScale{
	{name: "one-pool", namespaces: 1, pools: 1, per: 1000},
	{name: "fleet", clusters: 3, namespaces: 20, pools: 50, per: 20},
}

func (s fleetBenchScale) members() int { return max(s.clusters, 1) * s.namespaces * s.pools * s.per }

// clusterObjects are one cluster's pool objects, as the API server lists
// them: every member's Pod (Running, Ready or not) and PVC, a claim Lease
// for every fourth member.
type clusterObjects struct {
	cms    corev1.ConfigMapList
	pods   corev1.PodList
	pvcs   corev1.PersistentVolumeClaimList
	leases coordinationv1.LeaseList
}

func (s fleetBenchScale) namespace(n int) string {
	if s.clusters == 0 {
		return "vdi"
	}
	return fmt.Sprintf("vdi-%02d", n)
}

func (s fleetBenchScale) pool(p int) string {
	if s.pools == 1 {
		return "desk"
	}
	return fmt.Sprintf("desk-%02d", p)
}

func (s fleetBenchScale) objects(ready bool) *clusterObjects {
	spec := engine.Spec{Image: "ghcr.io/example/desktop:2", Size: s.per}
	spec.Default()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	o := &clusterObjects{}
	for _, l := range []*metav1.ListMeta{&o.cms.ListMeta, &o.pods.ListMeta, &o.pvcs.ListMeta, &o.leases.ListMeta} {
		l.ResourceVersion = "1"
	}
	for n := range s.namespaces {
		ns := s.namespace(n)
		for p := range s.pools {
			pool := s.pool(p)
			o.cms.Items = append(o.cms.Items, *engine.BuildConfigMap(ns, pool, spec))
			for i := 1; i <= s.per; i++ {
				pod := engine.BuildPod(ns, pool, i, spec)
				pod.ResourceVersion = "1"
				setReady(pod, ready)
				o.pods.Items = append(o.pods.Items, *pod)
				o.pvcs.Items = append(o.pvcs.Items, *engine.BuildPVC(ns, pool, i, spec))
				if i%4 == 0 {
					o.leases.Items = append(o.leases.Items, *engine.ClaimLease(ns, pool, engine.MemberName(pool, i),
						fmt.Sprintf("user%d@example.com", i), now.Add(-time.Duration(i)*time.Second)))
				}
			}
		}
	}
	return o
}

// fakeCluster is a fake clientset that lists objs (fresh copies at each
// List, as a decode would make) and whose Pod watch is pods; the other
// watches stay silent.
func fakeCluster(objs *clusterObjects, pods *watch.FakeWatcher) *fake.Clientset {
	client := fake.NewClientset()
	list := func(resource string, l runtime.Object) {
		client.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, l.DeepCopyObject(), nil
		})
	}
	list("configmaps", &objs.cms)
	list("pods", &objs.pods)
	list("persistentvolumeclaims", &objs.pvcs)
	list("leases", &objs.leases)
	client.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if a.GetResource().Resource == "pods" && pods != nil {
			return true, pods, nil
		}
		return true, watch.NewFake(), nil
	})
	return client
}

// mergedSource is the dashboard's data source of several clusters (a copy
// of cmd/ctpool-tui's contextsSource: Changed, Snapshots, TakeChanges and
// ReadChanges): one Watcher per cluster, their signals forwarded to one
// channel of capacity one, their pools' namespaces named context/namespace.
type mergedSource struct {
	names    []string
	watchers []*kube.Watcher
	ch       chan struct{}
	loads    atomic.Int64
}

func (s *mergedSource) Changed() <-chan struct{} { return s.ch }

func (s *mergedSource) Snapshots() []engine.Snapshot {
	s.loads.Add(1)
	if len(s.watchers) == 1 && s.names[0] == "" {
		return s.watchers[0].Snapshots()
	}
	var out []engine.Snapshot
	for i, w := range s.watchers {
		for _, snap := range w.Snapshots() {
			snap.Namespace = s.names[i] + "/" + snap.Namespace
			out = append(out, snap)
		}
	}
	return out
}

// TakeChanges and ReadChanges are contextsSource's: every cluster's
// changes, each pool's namespace named context/namespace, a read sent to
// its cluster.
func (s *mergedSource) TakeChanges() (all bool, pools []engine.PoolChanges) {
	if len(s.watchers) == 1 && s.names[0] == "" {
		return s.watchers[0].TakeChanges()
	}
	for i, w := range s.watchers {
		whole, changed := w.TakeChanges()
		all = all || whole
		for _, pc := range changed {
			pc.Namespace = s.names[i] + "/" + pc.Namespace
			pools = append(pools, pc)
		}
	}
	if all {
		return true, nil
	}
	return false, pools
}

func (s *mergedSource) ReadChanges(pc engine.PoolChanges) engine.PoolUpdate {
	if len(s.watchers) == 1 && s.names[0] == "" {
		return s.watchers[0].ReadChanges(pc)
	}
	if i := strings.LastIndexByte(pc.Namespace, '/'); i >= 0 {
		for k, name := range s.names {
			if name == pc.Namespace[:i] {
				pc.Namespace = pc.Namespace[i+1:]
				return s.watchers[k].ReadChanges(pc)
			}
		}
	}
	return engine.PoolUpdate{Definition: pc.Definition, Members: map[string]engine.MemberObjects{}}
}

// dashChangeSource is a tui.ChangeSource.
type dashChangeSource interface {
	dashSource
	TakeChanges() (all bool, pools []engine.PoolChanges)
	ReadChanges(engine.PoolChanges) engine.PoolUpdate
}

// deltaLoads are the dashboard's loads from a ChangeSource (tui/data.go:
// Model.load, readChangesCmd, applyData and applyDelta, and their
// maxDeltaMembers): once a load gave pool states, a load takes the changes
// and reads only them, unless everything changed, a pool is to be observed
// whole or too many members changed; the loop then brings every pool's
// state up to date (engine.PoolState: the changed members re-observed, the
// others following the time); a delta it cannot apply makes the next load
// a whole one. counted is called for each load read as a delta (a whole
// one reads Snapshots).
type deltaLoads struct {
	src     dashChangeSource
	counted func()

	// The loop's.
	states   []*engine.PoolState
	views    []engine.PoolView
	index    map[[2]string]int
	needFull bool
}

// dashMaxDeltaMembers is tui's maxDeltaMembers.
const dashMaxDeltaMembers = 2048

// deltaRead is what a load read: a delta, or every pool's state.
type deltaRead struct {
	at     time.Time
	delta  []deltaPool
	whole  bool
	states []*engine.PoolState
	views  []engine.PoolView
}

type deltaPool struct {
	ns, pool string
	update   engine.PoolUpdate
}

func (l *deltaLoads) load() func() any {
	byDifference := l.states != nil && !l.needFull
	if !byDifference {
		l.needFull = false
	}
	src, counted := l.src, l.counted
	return func() any {
		at := time.Now()
		all, pools := src.TakeChanges()
		if byDifference && !all && readableDelta(pools) {
			counted()
			r := deltaRead{at: at, delta: make([]deltaPool, 0, len(pools))}
			for _, pc := range pools {
				r.delta = append(r.delta, deltaPool{ns: pc.Namespace, pool: pc.Pool, update: src.ReadChanges(pc)})
			}
			return r
		}
		snaps := src.Snapshots()
		r := deltaRead{at: at, whole: true, states: make([]*engine.PoolState, len(snaps)), views: make([]engine.PoolView, len(snaps))}
		for i, snap := range snaps {
			r.states[i] = engine.NewPoolState(snap, at)
			r.views[i] = *r.states[i].View()
		}
		return r
	}
}

// readableDelta is tui's readableChanges.
func readableDelta(pools []engine.PoolChanges) bool {
	n := 0
	for _, pc := range pools {
		if pc.Full {
			return false
		}
		n += len(pc.Members)
	}
	return n <= dashMaxDeltaMembers
}

func (l *deltaLoads) apply(v any) ([]engine.PoolView, bool) {
	r := v.(deltaRead)
	if r.whole {
		l.states, l.views = r.states, r.views
		l.index = make(map[[2]string]int, len(r.views))
		for i := range r.views {
			l.index[[2]string{r.views[i].Namespace, r.views[i].Name}] = i
		}
		return l.views, true
	}
	changed := make(map[int]engine.PoolUpdate, len(r.delta))
	for _, d := range r.delta {
		i, ok := l.index[[2]string{d.ns, d.pool}]
		if !ok {
			l.needFull = true // a new pool
			return nil, false
		}
		changed[i] = d.update
	}
	for i, s := range l.states {
		if _, ok := s.Update(changed[i], r.at); !ok {
			l.needFull = true
			return nil, false
		}
		l.views[i] = *s.View()
	}
	return l.views, true
}

func (s *mergedSource) forward(ctx context.Context, ch <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			select {
			case s.ch <- struct{}{}:
			default:
			}
		}
	}
}

// start builds the scale's clusters, starts a Watcher on each and waits
// for their caches; podWatches are each cluster's Pod watch.
func (s fleetBenchScale) start(tb testing.TB, ctx context.Context, ready bool) (*mergedSource, []*watch.FakeWatcher, []*clusterObjects) {
	tb.Helper()
	src := &mergedSource{ch: make(chan struct{}, 1)}
	var podWatches []*watch.FakeWatcher
	var objs []*clusterObjects
	one := s.objects(ready)
	for k := range max(s.clusters, 1) {
		o := one
		if k > 0 {
			o = s.objects(ready)
		}
		pw := watch.NewFakeWithChanSize(20000, false)
		client := fakeCluster(o, pw)
		var w *kube.Watcher
		name := ""
		if s.clusters == 0 {
			w = kube.NewWatcher(client, s.namespace(0), kube.WithProbeInterval(0))
		} else {
			name = fmt.Sprintf("cluster-%d", k)
			w = kube.NewFleetWatcher(client, nil, kube.WithProbeInterval(0))
		}
		if err := w.Start(ctx); err != nil {
			tb.Fatal(err)
		}
		src.names, src.watchers = append(src.names, name), append(src.watchers, w)
		podWatches, objs = append(podWatches, pw), append(objs, o)
		go src.forward(ctx, w.Changed())
	}
	for _, w := range src.watchers {
		if !w.WaitForSync(ctx) {
			tb.Fatal("caches did not sync")
		}
	}
	if got := countMembers(src.Snapshots()); got != s.members() {
		tb.Fatalf("%d members in the caches, want %d", got, s.members())
	}
	return src, podWatches, objs
}

func countMembers(snaps []engine.Snapshot) int {
	n := 0
	for _, s := range snaps {
		n += len(s.Pods)
	}
	return n
}

// BenchmarkFleetSnapshots is the data source's part of one coalesced
// change, per member: every cluster's Watcher reads its caches and groups
// the objects by namespace and pool, and the clusters are merged.
// (tui's BenchmarkFleetRebuild is the observation and the model's part.)
func BenchmarkFleetSnapshots(b *testing.B) {
	for _, s := range fleetBenchScales {
		b.Run("scale="+s.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			src, _, _ := s.start(b, ctx, true)
			goruntime.GC() // the setup's garbage is not the reads' to collect
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if len(src.Snapshots()) != max(s.clusters, 1)*s.namespaces*s.pools {
					b.Fatal("pools missing")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(s.members()), "ns/member")
		})
	}
}

// BenchmarkFleetSnapshotsChanged is BenchmarkFleetSnapshots after a
// coalesced change of the storm: before each read (not timed), 1,000 Pod
// updates reach the Watchers' handlers, each in another pool at fleet scale
// (1,000 of its 3,000 pools changed), all in the one pool at one-pool
// scale. The read then regroups the pools that changed.
func BenchmarkFleetSnapshotsChanged(b *testing.B) {
	const updates = 1000
	for _, s := range fleetBenchScales {
		b.Run("scale="+s.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			src, podWatches, objs := s.start(b, ctx, true)
			clusters := len(podWatches)
			pods := len(objs[0].pods.Items)
			stride := max(pods/(updates/clusters+1), 1) // at fleet scale: three pools apart
			rv := 2
			goruntime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				want := make([]int64, clusters)
				for c, w := range src.watchers {
					want[c], _ = w.Stats()
				}
				for k := range updates {
					c := k % clusters
					p := objs[c].pods.Items[(k/clusters*stride)%pods].DeepCopy()
					p.ResourceVersion = fmt.Sprint(rv)
					rv++
					setReady(p, rv%2 == 0)
					podWatches[c].Modify(p)
					want[c]++
				}
				err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
					for c, w := range src.watchers {
						if events, _ := w.Stats(); events < want[c] {
							return false, nil
						}
					}
					return true, nil
				})
				if err != nil {
					b.Fatal("the updates did not all reach the handlers within 60s")
				}
				goruntime.GC() // the updates' garbage is not the read's to collect
				b.StartTimer()
				if len(src.Snapshots()) != max(s.clusters, 1)*s.namespaces*s.pools {
					b.Fatal("pools missing")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(s.members()), "ns/member")
		})
	}
}

// BenchmarkFleetStorm is BenchmarkWatcherStorm at the scale: 10,000 Pod
// status updates within one second (each a different Pod becoming Ready,
// spread over the clusters in turn) reach the dashboard's coalescing loop
// (dashLoopWith) through the scale's Watchers; the dashboard loads from its
// ChangeSource by difference, as tui does (deltaLoads). Reported as
// BenchmarkWatcherStorm does (rebuilds: every load, whole or by
// difference), and ms-rebuild: the time of one whole rebuild (Snapshots
// and engine.ObserveAll) on the quiet caches before the storm.
func BenchmarkFleetStorm(b *testing.B) {
	const updates = 10000
	for _, s := range fleetBenchScales {
		b.Run("scale="+s.name, func(b *testing.B) {
			var rebuilds, final, sent, perRebuild float64
			for b.Loop() {
				r := fleetStorm(b, s, updates, time.Second)
				rebuilds += float64(r.rebuilds)
				final += float64(r.final) / float64(time.Millisecond)
				sent += float64(r.sent) / float64(time.Millisecond)
				perRebuild += float64(r.rebuildTime) / float64(time.Millisecond)
			}
			runs := float64(b.N)
			b.ReportMetric(rebuilds/runs, "rebuilds")
			b.ReportMetric(final/runs, "ms-final")
			b.ReportMetric(sent/runs, "ms-sent")
			b.ReportMetric(perRebuild/runs, "ms-rebuild")
		})
	}
}

type fleetStormResult struct {
	stormResult
	rebuildTime time.Duration
}

// fleetStorm runs the storm on the scale; rebuildTime is one rebuild
// (Snapshots and engine.ObserveAll) timed alone before the storm.
func fleetStorm(tb testing.TB, s fleetBenchScale, updates int, spread time.Duration) fleetStormResult {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src, podWatches, objs := s.start(tb, ctx, false)

	// Update k goes to cluster k%clusters, to its (k/clusters)-th Pod.
	clusters := len(podWatches)
	target := func(k int) (int, *corev1.Pod) {
		c := k % clusters
		return c, &objs[c].pods.Items[(k/clusters)%len(objs[c].pods.Items)]
	}
	lastCluster, lastPod := target(updates - 1)
	lastNS := lastPod.Namespace
	if s.clusters > 0 {
		lastNS = src.names[lastCluster] + "/" + lastNS
	}
	lastName, lastRV := lastPod.Name, fmt.Sprint(1+updates)
	isFinal := func(views []engine.PoolView) bool {
		for i := range views {
			if views[i].Namespace != lastNS {
				continue
			}
			if m := views[i].Member(lastName); m != nil && m.Pod != nil {
				return m.Pod.ResourceVersion == lastRV && m.State == engine.StateReady
			}
		}
		return false
	}
	var loaded atomic.Int64
	finalShown := make(chan time.Time, 1)
	// The dashboard loads from a ChangeSource by difference (deltaLoads).
	loads := &deltaLoads{src: src, counted: func() { src.loads.Add(1) }}
	go dashLoopWith(ctx, src.Changed(), loads, func(views []engine.PoolView) {
		loaded.Add(1)
		if isFinal(views) {
			select {
			case finalShown <- time.Now():
			default:
			}
		}
	})
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 60*time.Second, true,
		func(context.Context) (bool, error) { return loaded.Load() >= 1, nil }); err != nil {
		tb.Fatal("no first load within 60s")
	}
	// The time of one rebuild, measured alone on the quiet caches.
	t := time.Now()
	_ = engine.ObserveAll(src.Snapshots(), t)
	rebuildTime := time.Since(t)

	loadsBefore := src.loads.Load()
	batch := max(updates/100, 1)
	step := spread / time.Duration((updates+batch-1)/batch)
	start := time.Now()
	for k := range updates {
		if k%batch == 0 && k > 0 {
			if d := time.Until(start.Add(time.Duration(k/batch) * step)); d > 0 {
				<-time.After(d)
			}
		}
		c, pod := target(k)
		p := pod.DeepCopy()
		p.ResourceVersion = fmt.Sprint(2 + k)
		setReady(p, true)
		podWatches[c].Modify(p)
	}
	last := time.Now()
	var shown time.Time
	select {
	case shown = <-finalShown:
	case <-time.After(60 * time.Second): // a guard against a hang, not a measurement
		tb.Fatal("the final state was not shown within 60s of the last update")
	}
	r := fleetStormResult{rebuildTime: rebuildTime}
	r.rebuilds, r.final, r.sent = src.loads.Load()-loadsBefore, shown.Sub(last), last.Sub(start)
	return r
}
