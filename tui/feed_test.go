package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
)

// quietData is a fakeData whose change watch is not started (Changed is
// nil): a rebuild's Cmd is then its load alone, which a test can run, and a
// Cmd that loads nothing is the coalescing tick, which a test fires by
// hand rather than waiting for it.
type quietData struct{ *fakeData }

func (quietData) Changed() <-chan struct{} { return nil }

// feedRig drives a feed by messages, without a model or a terminal: the
// load in flight is run on demand, and a coalescing tick is counted and
// fired by hand.
type feedRig struct {
	t      *testing.T
	f      feed
	src    quietData
	now    time.Time
	flight []tea.Cmd // loads asked, not yet answered, oldest first
	loads  int       // loads asked
	ticks  int       // coalescing ticks scheduled, not yet fired
}

func newFeedRig(t *testing.T, synced bool) *feedRig {
	src := quietData{newFakeData(fixture.FleetSnapshots())}
	src.synced = synced
	r := &feedRig{t: t, src: src, now: t0}
	r.f = newFeed(src, func() time.Time { return r.now }, nil, t0)
	return r
}

// took files a Cmd the feed returned: a load when it asked one (incr.seq
// moved), else a coalescing tick.
func (r *feedRig) took(cmd tea.Cmd, seq int) {
	switch {
	case cmd == nil:
	case r.f.incr.seq != seq:
		r.flight = append(r.flight, cmd)
		r.loads++
	default:
		r.ticks++
	}
}

// do runs one step: start, signal (a change signal of the current
// source), stale-signal (one of the source replaced), fire (the
// coalescing tick), answer (the oldest load in flight answers), replace
// (a `:ns` switch), +DURATION (the clock's tick).
func (r *feedRig) do(step string) {
	r.t.Helper()
	seq := r.f.incr.seq
	switch {
	case step == "start":
		r.took(r.f.start(r.now), seq)
	case step == "signal":
		r.took(r.f.changed(changedMsg{gen: r.f.gen}, r.now), seq)
	case step == "stale-signal":
		r.took(r.f.changed(changedMsg{gen: r.f.gen - 1}, r.now), seq)
	case step == "fire":
		if r.ticks == 0 {
			r.t.Fatal("fire: no coalescing tick scheduled")
		}
		r.ticks--
		r.took(r.f.rebuild(r.now), seq)
	case step == "answer":
		if len(r.flight) == 0 {
			r.t.Fatal("answer: no load in flight")
		}
		msg := r.flight[0]().(dataMsg)
		r.flight = r.flight[1:]
		if r.f.accept(msg) {
			r.f.take(msg, engine.PoolRef{})
			r.took(r.f.settle(r.now), seq)
		}
	case step == "replace":
		r.flight = r.flight[:0:0] // a load of the old source may still answer: see stale-answer
		r.took(r.f.replace(r.src, nil, r.now), seq)
	case strings.HasPrefix(step, "+"):
		d, err := time.ParseDuration(step[1:])
		if err != nil {
			r.t.Fatal(err)
		}
		r.now = r.now.Add(d)
		r.took(r.f.tick(r.now), seq)
	default:
		r.t.Fatalf("unknown step %q", step)
	}
}

func TestFeedUpdate(t *testing.T) {
	pools := len(fixture.FleetSnapshots())
	for _, tc := range []struct {
		name   string
		synced bool
		steps  []string
		// after the steps: loads asked, coalescing ticks pending, pools
		// watched, loaded, and whether a load is scheduled (pending)
		loads, ticks, watched int
		loaded, pending       bool
	}{
		{name: "the first load answers", synced: true, steps: []string{"start", "answer"},
			loads: 1, watched: pools, loaded: true},
		{name: "before the first answer a signal waits for the load in flight", synced: true,
			steps: []string{"start", "signal", "signal"}, loads: 1, pending: true},
		{name: "a signal during the first load schedules the next one", synced: true,
			steps: []string{"start", "signal", "answer"}, loads: 1, ticks: 1, watched: pools, loaded: true, pending: true},
		{name: "a signal during an unsynced load loads again at once", synced: false,
			steps: []string{"start", "signal", "answer"}, loads: 2, pending: true},
		{name: "signals coalesce into one load per interval", synced: true,
			steps: []string{"start", "answer", "signal", "signal", "signal", "signal", "signal"},
			loads: 1, ticks: 1, watched: pools, loaded: true, pending: true},
		{name: "the interval's end loads once", synced: true,
			steps: []string{"start", "answer", "signal", "signal", "signal", "fire"},
			loads: 2, watched: pools, loaded: true, pending: true},
		{name: "a signal during the load schedules one more interval", synced: true,
			steps: []string{"start", "answer", "signal", "fire", "signal", "signal", "answer"},
			loads: 2, ticks: 1, watched: pools, loaded: true, pending: true},
		{name: "a quiet source loads no more", synced: true,
			steps: []string{"start", "answer", "signal", "fire", "answer", "+1s", "+1s"},
			loads: 2, watched: pools, loaded: true},
		{name: "a stale source's signal is dropped", synced: true,
			steps: []string{"start", "answer", "replace", "answer", "stale-signal"},
			loads: 2, watched: pools, loaded: true},
		{name: "unsynced: nothing observed, each clock tick asks again", synced: false,
			steps: []string{"start", "answer", "+1s", "answer", "+1s"},
			loads: 3, pending: true},
		{name: "unsynced: what there is is shown past the deadline", synced: false,
			steps: []string{"start", "answer", "+29s", "answer", "+2s", "answer"},
			loads: 3, watched: pools, loaded: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newFeedRig(t, tc.synced)
			for _, s := range tc.steps {
				r.do(s)
			}
			f := &r.f
			if r.loads != tc.loads || r.ticks != tc.ticks || len(f.watched) != tc.watched || f.loaded != tc.loaded || f.pending != tc.pending {
				t.Errorf("loads %d, ticks %d, watched %d, loaded %v, pending %v; want %d, %d, %d, %v, %v",
					r.loads, r.ticks, len(f.watched), f.loaded, f.pending, tc.loads, tc.ticks, tc.watched, tc.loaded, tc.pending)
			}
		})
	}
}

// An answer of the source a `:ns` replaced is dropped, even when it comes
// after the new source's load was asked.
func TestFeedDropsAStaleGeneration(t *testing.T) {
	r := newFeedRig(t, true)
	r.do("start")
	old := r.flight[0]
	r.do("replace")
	if msg := old().(dataMsg); r.f.accept(msg) {
		t.Fatalf("the answer of generation %d was accepted in generation %d", msg.gen, r.f.gen)
	}
	if r.f.loaded || r.f.watched != nil {
		t.Fatal("the stale answer was taken")
	}
	r.do("answer")
	if !r.f.loaded || len(r.f.watched) != len(fixture.FleetSnapshots()) {
		t.Fatalf("the new source's answer was not taken: loaded %v, %d pools", r.f.loaded, len(r.f.watched))
	}
}

// wholeStates is a whole load's answer kept by difference (as from a
// ChangeSource).
func wholeStates(f *feed, snaps []engine.Snapshot) dataMsg {
	msg := dataMsg{gen: f.gen, seq: f.incr.seq, at: t0, health: health{synced: true}}
	for _, s := range snaps {
		st := engine.NewPoolState(s, t0)
		msg.states, msg.pools = append(msg.states, st), append(msg.pools, *st.View())
	}
	return msg
}

func TestFeedDeltas(t *testing.T) {
	snaps := fixture.FleetSnapshots()
	known := engine.PoolRef{Namespace: snaps[0].Namespace, Name: snaps[0].Pool}
	for _, tc := range []struct {
		name     string
		delta    []poolDelta
		staleSeq bool // the answer is of a load older than the one in flight
		took     taken
		needFull bool
	}{
		{name: "a delta of a known pool is applied", delta: []poolDelta{{ref: known}}, took: tookDelta},
		{name: "a delta of a pool not seen asks for a whole load",
			delta: []poolDelta{{ref: engine.PoolRef{Namespace: "vdi-new", Name: "desk"}}}, took: tookNothing, needFull: true},
		{name: "a delta of the same name in another cluster asks for a whole load",
			delta: []poolDelta{{ref: engine.PoolRef{Context: "prod-eu", Namespace: known.Namespace, Name: known.Name}}}, took: tookNothing, needFull: true},
		{name: "an older load's delta is dropped, and its changes read again whole",
			delta: []poolDelta{{ref: known}}, staleSeq: true, took: tookNothing, needFull: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeed(nil, func() time.Time { return t0 }, nil, t0)
			f.incr.seq = 1
			whole := wholeStates(&f, snaps)
			if !f.accept(whole) {
				t.Fatal("the whole load was dropped")
			}
			if took, _, _ := f.take(whole, engine.PoolRef{}); took != tookWhole {
				t.Fatalf("the whole load took %v", took)
			}
			f.pending = true // the delta's load
			msg := dataMsg{gen: f.gen, seq: f.incr.seq, at: t0.Add(time.Second), delta: tc.delta, health: health{synced: true}}
			if tc.staleSeq {
				f.incr.seq++ // a newer load is in flight
			}
			took := tookNothing
			if f.accept(msg) {
				took, _, _ = f.take(msg, engine.PoolRef{})
			}
			if took != tc.took || f.incr.needFull != tc.needFull || f.dirty != tc.needFull {
				t.Fatalf("took %v, needFull %v, dirty %v; want %v, %v, %v", took, f.incr.needFull, f.dirty, tc.took, tc.needFull, tc.needFull)
			}
			if tc.took == tookDelta && (f.incr.deltas != 1 || f.watched[0].ObservedAt != msg.at) {
				t.Errorf("delta not applied: %d deltas, first pool observed at %v", f.incr.deltas, f.watched[0].ObservedAt)
			}
		})
	}
}
