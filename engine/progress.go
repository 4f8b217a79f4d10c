package engine

import (
	"context"
	"sync"
	"time"
)

// Progress is how far a long operation has come: the reconcile step it runs
// on the pool's members, how many of them are done, and the wait for a
// deleted object that has run longest. Step is 0 for a wait outside a step
// (a release's).
type Progress struct {
	Pool        string
	Step        Step
	Done, Total int
	// Wait is the oldest wait still running (Kind "" when none).
	Wait ProgressWait
}

// ProgressWait is one wait for a deleted object to be gone.
type ProgressWait struct {
	Kind  Kind
	Name  string
	Since time.Time // by the engine's clock
}

// tracker reports one step's progress to Engine.Progress, one call at a
// time. A nil tracker reports nothing.
type tracker struct {
	report func(Progress)
	now    func() time.Time
	mu     sync.Mutex
	p      Progress
	waits  map[*ProgressWait]struct{}
}

type trackerKey struct{}

// track returns ctx carrying a tracker of the step over total members of
// pool (nil when nobody listens), and reports that nothing is done yet.
func (e *Engine) track(ctx context.Context, pool string, step Step, total int) (context.Context, *tracker) {
	if e.Progress == nil {
		return ctx, nil
	}
	t := &tracker{report: e.Progress, now: e.Now, p: Progress{Pool: pool, Step: step, Total: total}}
	t.mu.Lock()
	t.send()
	t.mu.Unlock()
	return context.WithValue(ctx, trackerKey{}, t), t
}

// done counts one member of the step as done (whatever its outcome).
func (t *tracker) done() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.p.Done++
	t.send()
	t.mu.Unlock()
}

// waiting reports a wait for kind/name from now on; the function returned
// ends it. The wait counts for the step ctx carries, or alone when none.
func (e *Engine) waiting(ctx context.Context, kind Kind, name string) func() {
	t, _ := ctx.Value(trackerKey{}).(*tracker)
	if t == nil {
		if e.Progress == nil {
			return func() {}
		}
		t = &tracker{report: e.Progress, now: e.Now}
	}
	w := &ProgressWait{Kind: kind, Name: name, Since: t.now()}
	t.mu.Lock()
	if t.waits == nil {
		t.waits = map[*ProgressWait]struct{}{}
	}
	t.waits[w] = struct{}{}
	t.send()
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		delete(t.waits, w)
		t.send()
		t.mu.Unlock()
	}
}

// send reports the progress with the oldest wait; t.mu is held.
func (t *tracker) send() {
	p := t.p
	for w := range t.waits {
		if p.Wait.Kind == "" || w.Since.Before(p.Wait.Since) || (w.Since.Equal(p.Wait.Since) && w.Name < p.Wait.Name) {
			p.Wait = *w
		}
	}
	t.report(p)
}
