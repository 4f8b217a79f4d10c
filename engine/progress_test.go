package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// progressLog records what an engine reports as it goes.
type progressLog struct {
	mu  sync.Mutex
	all []Progress
}

func (l *progressLog) add(p Progress) {
	l.mu.Lock()
	l.all = append(l.all, p)
	l.mu.Unlock()
}

func (l *progressLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, p := range l.all {
		s := fmt.Sprintf("%s %s %d/%d", p.Pool, p.Step, p.Done, p.Total)
		if p.Wait.Kind != "" {
			s += fmt.Sprintf(" wait %s %s", p.Wait.Kind, p.Wait.Name)
		}
		out = append(out, s)
	}
	return out
}

func TestProgress(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, e *Engine, f *fakeCluster)
		want []string
	}{
		{"a reconcile counts each member of its step", func(t *testing.T, e *Engine, f *fakeCluster) {
			f.add(BuildConfigMap(testNS, "desk", baseSpec(3)))
			if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
				t.Fatal(err)
			}
		}, []string{"desk create 0/3", "desk create 1/3", "desk create 2/3", "desk create 3/3"}},
		{"a failed member counts as done", func(t *testing.T, e *Engine, f *fakeCluster) {
			f.add(BuildConfigMap(testNS, "desk", baseSpec(2)))
			f.fail("create", kPVC, "desk-1-data", fmt.Errorf("boom"), 1)
			_, _ = e.Reconcile(context.Background(), "desk")
		}, []string{"desk create 0/2", "desk create 1/2", "desk create 2/2"}},
		{"a delete reports its waits", func(t *testing.T, e *Engine, f *fakeCluster) {
			seedPool(f, "desk", baseSpec(1), 1)
			if _, err := e.Delete(context.Background(), "desk"); err != nil {
				t.Fatal(err)
			}
		}, []string{"desk delete 0/1", "desk delete 0/1 wait Pod desk-1", "desk delete 0/1", "desk delete 0/1 wait PersistentVolumeClaim desk-1-data", "desk delete 0/1", "desk delete 1/1"}},
		{"a release reports its waits outside a step", func(t *testing.T, e *Engine, f *fakeCluster) {
			seedPool(f, "desk", baseSpec(1), 1)
			f.add(claimAt("desk", "desk-1", "alice", testNow))
			if _, err := e.Release(context.Background(), "desk", "desk-1", "alice"); err != nil {
				t.Fatal(err)
			}
		}, []string{" step(0) 0/0 wait Pod desk-1", " step(0) 0/0", " step(0) 0/0 wait PersistentVolumeClaim desk-1-data", " step(0) 0/0", " step(0) 0/0 wait Service desk-1-console", " step(0) 0/0"}},
		{"nothing to do reports nothing", func(t *testing.T, e *Engine, f *fakeCluster) {
			seedPool(f, "desk", baseSpec(2), 2)
			if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, f := newEngine()
			var log progressLog
			e.Progress = log.add
			c.run(t, e, f)
			if got := log.lines(); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", c.want) {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestProgressOldestWait: of the waits running at once, the one running
// longest is reported.
func TestProgressOldestWait(t *testing.T) {
	now := testNow
	e := &Engine{Now: func() time.Time { return now }}
	var log progressLog
	e.Progress = log.add
	ctx, tr := e.track(context.Background(), "big", StepDelete, 3)
	endA := e.waiting(ctx, KindPod, "big-1")
	now = now.Add(5e9)
	endB := e.waiting(ctx, KindPod, "big-2")
	endA()
	tr.done()
	endB()
	want := []string{"big delete 0/3", "big delete 0/3 wait Pod big-1", "big delete 0/3 wait Pod big-1", "big delete 0/3 wait Pod big-2", "big delete 1/3 wait Pod big-2", "big delete 1/3"}
	if got := log.lines(); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
