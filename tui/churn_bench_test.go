package tui

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

var _ ChangeSource = (*kube.Watcher)(nil)

// churnPerRebuild is how many member changes one rebuild takes: 20 changes
// a second coalesced every coalesceDelay (100ms).
const churnPerRebuild = 2

// BenchmarkChurn measures the dashboard's CPU per member change under a
// steady churn, for pools of 1,000 and 10,000 members: a real informer
// (kube.Watcher on a fake clientset whose Pod watch the benchmark feeds)
// takes churnPerRebuild Pod updates (a Ready condition flips), then the
// model loads and applies them and draws a frame, its member list open on
// the pool. "whole" hides the Watcher's changes (every rebuild observes
// every member and redoes every row, as before); "incremental" uses them;
// "incremental-pools" too, with the pools screen (the first one) shown.
//
//	cpu-ns/change  the process's CPU time (user and system, every goroutine:
//	               the informer's, the load's, the model's, the GC's) per change
func BenchmarkChurn(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, mode := range []string{"whole", "incremental", "incremental-pools"} {
			b.Run(fmt.Sprintf("members=%d/%s", n, mode), func(b *testing.B) {
				c := newChurn(b, n, mode != "whole", mode != "incremental-pools")
				defer c.stop()
				b.ReportAllocs()
				runtime.GC() // not the garbage of the setup, nor of the run before
				cpu0 := processCPU()
				b.ResetTimer()
				for b.Loop() {
					c.step(b)
				}
				b.StopTimer()
				changes := float64(b.N * churnPerRebuild)
				b.ReportMetric(float64(processCPU()-cpu0)/changes, "cpu-ns/change")
			})
		}
	}
}

// processCPU is the user and system CPU time the process used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type churn struct {
	n      int
	cancel func()
	w      *kube.Watcher
	podW   *watch.FakeWatcher
	pods   []*corev1.Pod // the current Pod of member i+1
	m      *Model
	next   int
	events int64
	rv     int
}

func newChurn(b *testing.B, n int, incremental, membersScreen bool) *churn {
	b.Helper()
	spec := engine.Spec{Image: "ghcr.io/example/desktop:2", Size: n}
	spec.Default()
	objs := []kruntime.Object{engine.BuildConfigMap(ns, "desk", spec)}
	c := &churn{n: n, rv: 10}
	for i := 1; i <= n; i++ {
		p := engine.BuildPod(ns, "desk", i, spec)
		p.ResourceVersion = "1"
		fixture.Ready(p)
		p.Spec.NodeName = fmt.Sprintf("node-%d", i%50)
		objs = append(objs, p, engine.BuildPVC(ns, "desk", i, spec))
		c.pods = append(c.pods, p)
		if i%4 == 0 {
			objs = append(objs, engine.ClaimLease(ns, "desk", engine.MemberName("desk", i), fmt.Sprintf("user%d@example.com", i), t0.Add(-time.Duration(i%50)*time.Minute)))
		}
	}
	client := fake.NewClientset(objs...)
	c.podW = watch.NewFakeWithChanSize(64, false)
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, c.podW, nil })
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.w = kube.NewWatcher(client, ns)
	if err := c.w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if !c.w.WaitForSync(ctx) {
		b.Fatal("caches did not sync")
	}
	c.waitEvents(b, int64(len(objs))) // the initial list: one add each
	var src DataSource = c.w
	if !incremental {
		src = plainSource{c.w}
	}
	c.m = newModel(ctx, Options{Namespace: ns, Data: src, Renderer: themes.NoColorRenderer(io.Discard),
		Now: time.Now, Resolver: &resolver{actions: &fakeActions{}}})
	c.m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	c.m.Update(tickMsg(time.Now()))
	c.m.Update(c.m.feed.load(c.m.now)())
	if !c.m.feed.loaded {
		b.Fatal("the first load did not load")
	}
	if membersScreen {
		c.m.openMembers(poolRefIn(c.m, "desk"))
		press(c.m, "pgdown")
		if got := len(c.m.members.rows); got != n {
			b.Fatalf("%d rows, want %d", got, n)
		}
	}
	return c
}

func (c *churn) stop() { c.cancel() }

// waitEvents waits until the Watcher's handlers saw want events.
func (c *churn) waitEvents(b *testing.B, want int64) {
	b.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Microsecond, 30*time.Second, true,
		func(context.Context) (bool, error) { e, _ := c.w.Stats(); return e >= want, nil })
	if err != nil {
		b.Fatalf("the informer did not deliver %d events: %v", want, err)
	}
	c.events = want
}

// step makes churnPerRebuild changes, waits until the informer handed
// them over, then loads, applies and draws as the model does.
func (c *churn) step(b *testing.B) {
	for range churnPerRebuild {
		// Members far apart, so that they are not all on one screen.
		i := (c.next * 7919) % c.n
		c.next++
		p := c.pods[i].DeepCopy()
		c.rv++
		p.ResourceVersion = fmt.Sprint(c.rv)
		cond := &p.Status.Conditions[3] // PodReady
		if cond.Status == corev1.ConditionTrue {
			cond.Status = corev1.ConditionFalse
		} else {
			cond.Status = corev1.ConditionTrue
		}
		c.pods[i] = p
		c.podW.Modify(p)
	}
	c.waitEvents(b, c.events+churnPerRebuild)
	c.m.Update(c.m.feed.load(c.m.now)())
	if c.m.feed.incr.needFull {
		b.Fatal("a change of Pod status needed a whole load")
	}
	_ = c.m.View()
}
