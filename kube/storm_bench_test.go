package kube_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkWatcherStorm measures how a storm of Pod updates reaches the
// dashboard: 10,000 Pod status updates within one second go through a
// kube.Watcher (a real informer on a fake clientset whose Pod watch the
// benchmark feeds) into the dashboard's coalescing loop (dashLoop, a copy of
// tui/model.go's: kube's tests do not import tui).
//
// With members=1000 each Pod's Ready condition flips ten times; with
// members=10000 each Pod becomes Ready once. Every Pod ends Ready. Reported:
//
//	rebuilds  snapshot rebuilds from the first update until the final state is loaded
//	ms-final  milliseconds from the last update handed to the informer until
//	          the dashboard has the final state (loaded and observed, ready to draw)
//	ms-sent   milliseconds the 10,000 updates took to send
//	events    informer handler calls; signals: those that found the change channel empty
func BenchmarkWatcherStorm(b *testing.B) {
	const updates = 10000
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			var rebuilds, final, sent, events, signals float64
			for b.Loop() {
				r := runStorm(b, n, updates, time.Second)
				rebuilds += float64(r.rebuilds)
				final += float64(r.final) / float64(time.Millisecond)
				sent += float64(r.sent) / float64(time.Millisecond)
				events += float64(r.events)
				signals += float64(r.signals)
			}
			runs := float64(b.N)
			b.ReportMetric(rebuilds/runs, "rebuilds")
			b.ReportMetric(final/runs, "ms-final")
			b.ReportMetric(sent/runs, "ms-sent")
			b.ReportMetric(events/runs, "events")
			b.ReportMetric(signals/runs, "signals")
		})
	}
}

type stormResult struct {
	rebuilds        int64
	final           time.Duration
	events, signals int64
	sent            time.Duration // how long sending the updates took
}

// dashSource is what the dashboard reads (tui.DataSource).
type dashSource interface {
	Changed() <-chan struct{}
	Snapshots() []engine.Snapshot
}

// dashCoalesceDelay is tui's coalesceDelay.
const dashCoalesceDelay = 100 * time.Millisecond

// dashLoop is the dashboard's coalescing (tui/model.go, Update on changedMsg,
// rebuildMsg and dataMsg; tui/data.go, waitChangeCmd, coalesceCmd and
// loadCmd) as one event loop: a change signal, unless a rebuild is pending,
// schedules a rebuild after dashCoalesceDelay; the rebuild re-arms the wait
// for the next signal and loads (Snapshots, then engine.ObserveAll); a change
// that arrived while a rebuild was pending schedules one more when the load
// is done. onData gets each load's views, in the loop, as Update would.
func dashLoop(ctx context.Context, src dashSource, onData func([]engine.PoolView)) {
	dashLoopWith(ctx, src.Changed(), wholeLoads{src}, onData)
}

// dashLoads is how dashLoopWith loads: load runs in the loop (Model.load)
// and returns the read, which runs outside it (a tea.Cmd); apply runs in
// the loop (Update) and returns the views (ok false: the load could not be
// applied, and a whole one follows).
type dashLoads interface {
	load() func() any
	apply(any) (views []engine.PoolView, ok bool)
}

// wholeLoads observe every pool at each load (loadCmd from a DataSource
// that is no ChangeSource).
type wholeLoads struct{ src dashSource }

func (l wholeLoads) load() func() any {
	return func() any { return engine.ObserveAll(l.src.Snapshots(), time.Now()) }
}

func (wholeLoads) apply(v any) ([]engine.PoolView, bool) { return v.([]engine.PoolView), true }

// dashLoopWith is dashLoop with its loads.
func dashLoopWith(ctx context.Context, changedCh <-chan struct{}, loads dashLoads, onData func([]engine.PoolView)) {
	type msg int
	const (
		changed msg = iota
		rebuild
	)
	msgs := make(chan msg, 4)
	data := make(chan any, 1)
	send := func(m msg) {
		select {
		case msgs <- m:
		case <-ctx.Done():
		}
	}
	waitChange := func() {
		go func() {
			select {
			case <-changedCh:
				send(changed)
			case <-ctx.Done():
			}
		}()
	}
	coalesce := func() { time.AfterFunc(dashCoalesceDelay, func() { send(rebuild) }) }
	load := func() {
		read := loads.load()
		go func() {
			read := read()
			select {
			case data <- read:
			case <-ctx.Done():
			}
		}()
	}
	pending, armed, dirty := true, true, false // Init: load, and wait for a change
	load()
	waitChange()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-msgs:
			switch m {
			case changed:
				armed = false
				if pending {
					dirty = true
					continue
				}
				pending = true
				coalesce()
			case rebuild:
				load()
				if !armed {
					armed = true
					waitChange()
				}
			}
		case read := <-data:
			if views, ok := loads.apply(read); ok {
				onData(views)
			} else {
				dirty = true // tui's wantFull
			}
			pending = false
			if dirty || !armed {
				dirty = false
				pending = true
				coalesce()
			}
		}
	}
}

// countingSource counts the rebuilds.
type countingSource struct {
	*kube.Watcher
	loads atomic.Int64
}

func (s *countingSource) Snapshots() []engine.Snapshot {
	s.loads.Add(1)
	return s.Watcher.Snapshots()
}

// stormPool is a pool of n members whose Pods run, Ready or not.
func stormPool(n int, ready bool) []runtime.Object {
	spec := engine.Spec{Image: "ghcr.io/example/desktop:2", Size: n}
	spec.Default()
	objs := []runtime.Object{engine.BuildConfigMap("vdi", "desk", spec)}
	for i := 1; i <= n; i++ {
		p := engine.BuildPod("vdi", "desk", i, spec)
		p.ResourceVersion = "1"
		setReady(p, ready)
		objs = append(objs, p, engine.BuildPVC("vdi", "desk", i, spec))
	}
	return objs
}

func setReady(p *corev1.Pod, ready bool) {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Spec.NodeName = "node-a"
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: st}}
}

// runStorm sends updates Pod updates, spread evenly over spread, to the
// dashboard and waits until a frame shows the final state.
func runStorm(tb testing.TB, n, updates int, spread time.Duration) stormResult {
	tb.Helper()
	perPod := updates / n
	client := fake.NewClientset(stormPool(n, perPod%2 == 0)...)
	podWatch := watch.NewFakeWithChanSize(updates+1, false)
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, podWatch, nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	list, err := client.CoreV1().Pods("vdi").List(ctx, metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	byName := map[string]*corev1.Pod{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	w := kube.NewWatcher(client, "vdi", kube.WithProbeInterval(0))
	if err := w.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	if !w.WaitForSync(ctx) {
		tb.Fatal("caches did not sync")
	}

	// The last update goes to the last Pod, which then is Ready with the
	// last resourceVersion: the final state.
	lastName, lastRV := engine.MemberName("desk", (updates-1)%n+1), fmt.Sprint(1+updates)
	isFinal := func(views []engine.PoolView) bool {
		for _, v := range views {
			if m := v.Member(lastName); m != nil && m.Pod != nil {
				return m.Pod.ResourceVersion == lastRV && m.State == engine.StateReady
			}
		}
		return false
	}
	src := &countingSource{Watcher: w}
	var loaded atomic.Int64
	finalShown := make(chan time.Time, 1)
	go dashLoop(ctx, src, func(views []engine.PoolView) {
		loaded.Add(1)
		if isFinal(views) {
			select {
			case finalShown <- time.Now():
			default:
			}
		}
	})
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return loaded.Load() >= 1, nil }); err != nil {
		tb.Fatal("no first load within 30s")
	}

	loadsBefore := src.loads.Load()
	eventsBefore, signalsBefore := w.Stats()
	// 100 batches, batch k sent at start + k*spread/100 (or at once when
	// behind), so that the storm lasts spread.
	batch := max(updates/100, 1)
	step := spread / time.Duration((updates+batch-1)/batch)
	start := time.Now()
	for i := range updates {
		if i%batch == 0 && i > 0 {
			if d := time.Until(start.Add(time.Duration(i/batch) * step)); d > 0 {
				<-time.After(d)
			}
		}
		p := byName[engine.MemberName("desk", i%n+1)].DeepCopy()
		round := i / n // this Pod's update number, from 0
		p.ResourceVersion = fmt.Sprint(2 + i)
		setReady(p, (perPod-round)%2 == 1) // the last update of every Pod makes it Ready
		podWatch.Modify(p)
	}
	last := time.Now()
	var shown time.Time
	select {
	case shown = <-finalShown:
	case <-time.After(30 * time.Second): // a guard against a hang, not a measurement
		tb.Fatal("the final state was not shown within 30s of the last update")
	}
	events, signals := w.Stats()
	res := stormResult{rebuilds: src.loads.Load() - loadsBefore, final: shown.Sub(last),
		events: events - eventsBefore, signals: signals - signalsBefore, sent: last.Sub(start)}
	if res.events < int64(updates) {
		tb.Fatalf("%d handler events for %d updates", res.events, updates)
	}
	return res
}
