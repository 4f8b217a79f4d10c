package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// fakeTTY is a terminal for the tests: it records what is written.
type fakeTTY struct{ bytes.Buffer }

func (*fakeTTY) IsTerminal() bool { return true }

func TestProgressLine(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	var tty fakeTTY
	l := &progressLine{w: &tty, now: func() time.Time { return now }}
	step := func(done int) engine.Progress {
		return engine.Progress{Pool: "big", Step: engine.StepDelete, Done: done, Total: 10000}
	}
	l.update(step(0))
	for i := 1; i <= 500; i++ { // 500 reports in the same instant: drawn once
		l.update(step(i))
	}
	if got, want := tty.String(), "\rdelete big: 0/10,000 members"; got != want {
		t.Fatalf("first draw %q, want %q", got, want)
	}
	tty.Reset()
	now = now.Add(progressEvery)
	p := step(8000)
	p.Wait = engine.ProgressWait{Kind: engine.KindPod, Name: "big-17", Since: t0}
	l.update(p)
	if got, want := tty.String(), "\rdelete big: 8,000/10,000 members · slowest wait Pod big-17, 0s"; got != want {
		t.Fatalf("second draw %q, want %q", got, want)
	}
	tty.Reset()
	now = now.Add(34 * time.Second)
	l.tick()
	if got := tty.String(); !strings.HasSuffix(got, "slowest wait Pod big-17, 34s") || !strings.HasPrefix(got, "\r") {
		t.Fatalf("tick %q", got)
	}
	tty.Reset()
	now = now.Add(time.Second)
	l.update(step(9000)) // shorter: the rest of the old line is blanked
	if got := tty.String(); !strings.HasPrefix(got, "\rdelete big: 9,000/10,000 members ") || strings.TrimRight(got, " ") != "\rdelete big: 9,000/10,000 members" {
		t.Fatalf("shorter draw %q", got)
	}
	shown := l.shown
	tty.Reset()
	l.wipe()
	if got, want := tty.String(), "\r"+strings.Repeat(" ", shown)+"\r"; got != want {
		t.Fatalf("wipe %q, want %q", got, want)
	}
	tty.Reset()
	l.wipe()
	now = now.Add(time.Second)
	l.tick()
	if tty.Len() != 0 {
		t.Fatalf("after the wipe: %q", tty.String())
	}
}

func TestProgressText(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		p    engine.Progress
		want string
	}{
		{engine.Progress{Pool: "desk", Step: engine.StepCreate, Done: 3, Total: 5}, "create desk: 3/5 members"},
		{engine.Progress{Wait: engine.ProgressWait{Kind: engine.KindPVC, Name: "desk-1-data", Since: t0.Add(-12 * time.Second)}}, "waiting for PersistentVolumeClaim desk-1-data to go, 12s"},
		{engine.Progress{Pool: "de\x1bsk", Step: engine.StepCreate, Done: 1, Total: 1}, `create de\x1bsk: 1/1 members`},
	}
	for _, c := range cases {
		if got := progressText(c.p, t0); got != c.want {
			t.Errorf("progressText(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestProgressOnlyOnATerminal: on a stderr that is no terminal the engine
// gets no progress callback and nothing is written.
func TestProgressOnlyOnATerminal(t *testing.T) {
	var plain bytes.Buffer
	e := &env{stderr: &plain}
	eng := &engine.Engine{}
	stop := e.showProgress(eng)
	if eng.Progress != nil {
		t.Fatal("a progress callback for a stderr that is no terminal")
	}
	stop()
	if plain.Len() != 0 {
		t.Fatalf("wrote %q", plain.String())
	}
	var tty fakeTTY
	e = &env{stderr: &tty}
	stop = e.showProgress(eng)
	if eng.Progress == nil {
		t.Fatal("no progress callback on a terminal")
	}
	eng.Progress(engine.Progress{Pool: "desk", Step: engine.StepCreate, Done: 1, Total: 2})
	stop()
	if eng.Progress != nil {
		t.Error("the callback outlives the command")
	}
	if got := tty.String(); !strings.HasPrefix(got, "\rcreate desk: 1/2 members") || !strings.HasSuffix(got, "\r") {
		t.Fatalf("terminal got %q", got)
	}
}
