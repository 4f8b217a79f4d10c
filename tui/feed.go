package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The data feed (feed) is the dashboard's loading state machine, driven by
// messages and free of the terminal: the data source's change signals
// (changedMsg), their coalescing into at most one load per coalesceDelay
// (rebuildMsg), the loads by generation (a `:ns` switch replaces the
// source: an older source's answer is dropped) and by difference (from a
// ChangeSource), and what an answer (dataMsg) brings: the watched pools, the
// connection's health, each cluster's. The root model routes the messages
// to it, takes the pools it holds, and re-derives its views.

// coalesceDelay is the least time between two rebuilds: a storm of change
// signals yields at most one rebuild (and a few renders) per interval.
const coalesceDelay = 100 * time.Millisecond

// syncDeadline is how long the first sync may take before the header says so.
const syncDeadline = 30 * time.Second

// changedMsg: the data source (of generation gen: feed.gen) signalled a
// change.
type changedMsg struct{ gen int }

// rebuildMsg: the coalescing delay has passed; read the data now.
type rebuildMsg struct{}

// waitChangeCmd blocks until the data source signals, or done closes (the
// source was replaced); the model re-arms it once per rebuild, so at most
// one changedMsg is handled per rebuild cycle.
func waitChangeCmd(ch <-chan struct{}, done <-chan struct{}, gen int) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case _, ok := <-ch:
			if !ok {
				return nil
			}
			return changedMsg{gen: gen}
		case <-done:
			return nil
		}
	}
}

// feed is the data feed: the pools the data source has, the connection's
// health, and the coalescing of change signals into loads.
type feed struct {
	src   DataSource
	clock func() time.Time // Options.Now, read only inside the loads' Cmds
	// gen counts the data sources (replace): an answer of an older one is
	// dropped. stop stops the current source's informers; done closes when
	// it is replaced.
	gen  int
	stop func()
	done chan struct{}
	// started is when the current source was taken (the sync deadline
	// counts from it).
	started time.Time

	watched    []engine.PoolView // every pool the data source has
	incr       incremental       // the watched pools kept by difference; only from a ChangeSource
	loaded     bool              // a load observed the pools
	observedAt time.Time
	health     health
	contexts   []engine.ContextHealth // several contexts: each one's health
	// live is each watched pool's counts as the dashboard saw them, a
	// sample per engine.HistoryInterval slot (trend.go); liveSlot is the
	// slot last sampled.
	live     map[engine.PoolRef]engine.History
	liveSlot time.Time
	// liveTrend: some pool's live history has two slots (a trend to draw).
	liveTrend bool
	// trendGen counts the changes of what the trends are drawn from: the
	// watched pools (their recorded histories) and the live samples
	// (trendCache).
	trendGen int

	// Coalescing: armed while a waitChangeCmd runs, pending while a rebuild
	// is scheduled or loading, dirty when a change arrived meanwhile.
	armed, pending, dirty bool
	rebuilds              int // answers applied (tests, benchmarks)
}

func newFeed(src DataSource, clock func() time.Time, stop func(), now time.Time) feed {
	return feed{src: src, clock: clock, stop: stop, done: make(chan struct{}), started: now}
}

// start makes the first load and watches for changes.
func (f *feed) start(now time.Time) tea.Cmd {
	if f.src == nil {
		return nil
	}
	f.pending, f.armed = true, true
	return tea.Batch(f.load(now), f.waitChange())
}

// replace takes a new data source (a `:ns` switch): the old one's informers
// stop, its watch ends, and an answer it still gives is dropped; nothing is
// loaded until the new one's first answer.
func (f *feed) replace(src DataSource, stop func(), now time.Time) tea.Cmd {
	if f.stop != nil {
		f.stop()
	}
	close(f.done)
	f.stop, f.done = stop, make(chan struct{})
	f.src = src
	f.gen++
	f.watched, f.loaded, f.health, f.started = nil, false, health{}, now
	f.trendGen++
	f.pending, f.armed, f.dirty = true, true, false
	return tea.Batch(f.load(now), f.waitChange())
}

// tick: until the first sync, every tick loads (an empty namespace sends
// no signal).
func (f *feed) tick(now time.Time) tea.Cmd {
	if (!f.health.synced || !f.loaded) && !f.pending && f.src != nil {
		f.pending = true
		return f.load(now)
	}
	return nil
}

// changed takes a change signal: a load is scheduled after the coalescing
// delay, unless one is already (then one more follows it: dirty).
func (f *feed) changed(msg changedMsg, now time.Time) tea.Cmd {
	if msg.gen != f.gen {
		return nil // the source a `:ns` replaced
	}
	f.armed = false
	if f.pending {
		f.dirty = true
		return nil
	}
	f.pending = true
	if !f.loaded {
		// Before the first screen a read costs no Observe (nothing is
		// observed until every cache has synced) and the signal may be
		// the end of the sync: read at once.
		return f.rebuild(now)
	}
	return coalesceCmd()
}

// accept reports whether a load's answer is to be applied: one of the
// current source, and of the last load (an older load's delta took
// changes the one in flight does not see: the next load is a whole one).
func (f *feed) accept(msg dataMsg) bool {
	if msg.gen != f.gen {
		return false // read from the source a `:ns` replaced
	}
	if msg.seq != 0 && msg.seq != f.incr.seq {
		if msg.delta != nil {
			f.wantFull() // the changes it took are read again by a whole load
		}
		return false // read by an older load than the one in flight
	}
	return true
}

// settle follows an applied answer: when a change came meanwhile, or the
// watch is not armed, the next load is scheduled.
func (f *feed) settle(now time.Time) tea.Cmd {
	f.pending = false
	if !f.dirty && f.armed {
		return nil
	}
	f.dirty = false
	f.pending = true
	if !f.loaded {
		return f.rebuild(now) // see changed
	}
	return coalesceCmd()
}

// rebuild reads the data source and re-arms the change watch.
func (f *feed) rebuild(now time.Time) tea.Cmd {
	cmds := []tea.Cmd{f.load(now)}
	if !f.armed && f.src != nil {
		f.armed = true
		cmds = append(cmds, f.waitChange())
	}
	return tea.Batch(cmds...)
}

// load reads the current data source, tagged with its generation. Until
// every cache has synced it observes nothing, so that no alarm is raised on
// a partial picture; past the sync deadline (the header then says the sync
// failed) it shows what there is.
//
// From a ChangeSource, once a load gave pool states, a load reads only what
// changed (a delta), unless the last delta could not be applied.
func (f *feed) load(now time.Time) tea.Cmd {
	partial := now.Sub(f.started) > syncDeadline
	byDifference := f.loaded && f.incr.states != nil && !f.incr.needFull
	read := readChangesCmd(f.src, f.clock, partial, byDifference)
	if read == nil {
		return nil
	}
	if !byDifference {
		f.incr.needFull = false
	}
	f.incr.seq++
	gen, seq := f.gen, f.incr.seq
	return func() tea.Msg {
		msg := read().(dataMsg)
		msg.gen, msg.seq = gen, seq
		return msg
	}
}

// waitChange waits for the current data source's next signal.
func (f *feed) waitChange() tea.Cmd {
	if f.src == nil {
		return nil
	}
	return waitChangeCmd(f.src.Changed(), f.done, f.gen)
}

// wantFull makes the next load a whole one, soon.
func (f *feed) wantFull() {
	f.incr.needFull = true
	f.dirty = true
}

// taken is what an accepted answer changed (feed.take).
type taken int

const (
	tookNothing taken = iota // nothing observed yet, or a delta it could not apply (a whole load follows)
	tookWhole                // every watched pool is new
	tookDelta                // the watched pools were updated in place
)

// take applies an accepted answer: the health, and the watched pools
// whole or by difference. For a delta it returns the member changes of
// the watched pool open (zero ref: none) and whether that pool changed.
//
// A delta brings each changed pool's state up to date by re-observing its
// changed members, and every other pool's to the time. A change it cannot
// apply (a pool's shape changed, a pool appeared) leaves the rest and asks
// for a whole load (wantFull).
func (f *feed) take(msg dataMsg, open engine.PoolRef) (took taken, changes []engine.MemberChange, opened bool) {
	if msg.unsynced {
		// Nothing observed yet: the screen stays neutral ("syncing…").
		f.health = msg.health
		return tookNothing, nil, false
	}
	f.health, f.observedAt = msg.health, msg.at
	f.contexts = msg.contexts
	if msg.delta == nil {
		f.watched, f.loaded = msg.pools, true
		f.incr.adopt(msg.states, msg.pools)
		f.rebuilds++
		f.trendGen++
		f.forgetLive()
		f.sampleLive(msg.at)
		return tookWhole, nil, false
	}
	in := &f.incr
	changed := make(map[int]engine.PoolUpdate, len(msg.delta))
	for _, d := range msg.delta {
		i, ok := in.index[d.ref]
		if !ok {
			f.wantFull() // a new pool
			return tookNothing, nil, false
		}
		changed[i] = d.update
	}
	f.trendGen++ // the watched pools change from here, even when a later one asks for a whole load
	for i, s := range in.states {
		ch, ok := s.Update(changed[i], msg.at)
		if !ok {
			f.wantFull()
			return tookNothing, nil, false
		}
		f.watched[i] = *s.View()
		if open != (engine.PoolRef{}) && f.watched[i].Ref() == open {
			opened, changes = true, ch
		}
	}
	in.deltas++
	f.rebuilds++
	f.sampleLive(msg.at)
	return tookDelta, changes, opened
}

func coalesceCmd() tea.Cmd {
	return tea.Tick(coalesceDelay, func(time.Time) tea.Msg { return rebuildMsg{} })
}

// incremental is the model's part of the pools kept by difference.
type incremental struct {
	// states: one per m.pools entry, in its order (nil: the source is no
	// ChangeSource, or nothing was loaded yet).
	states []*engine.PoolState
	index  map[engine.PoolRef]int // m.pools entry of a pool
	// needFull: the next load is a whole one (a delta could not be applied).
	needFull bool
	// seq numbers the loads; only the answer of the last one is applied.
	seq int
	// deltas counts the loads applied by difference (tests).
	deltas int
}

// adopt takes the states of a whole load (nil from another source).
func (in *incremental) adopt(states []*engine.PoolState, pools []engine.PoolView) {
	in.states = states
	if states == nil {
		in.index = nil
		return
	}
	in.index = make(map[engine.PoolRef]int, len(pools))
	for i := range pools {
		in.index[pools[i].Ref()] = i
	}
}

// applyData takes a load's answer (accepted by the feed) and re-derives
// every view's rows (sorting and filtering happen here, not per frame).
// The states follow the watched pools; the pools shown are those of a
// narrowing (`:ctx`, `:ns` with several contexts) or the same slice.
func (m *Model) applyData(msg dataMsg) {
	if m.now.Before(msg.at) {
		m.now = msg.at
	}
	took, changes, opened := m.feed.take(msg, m.members.opened())
	switch took {
	case tookNothing:
		return
	case tookWhole:
		m.pools = m.takePools(m.feed.watched)
		ctx := m.viewCtx()
		m.table.sync(ctx)
		m.members.reload(ctx)
	case tookDelta:
		m.pools = m.narrowed(m.feed.watched)
		ctx := m.viewCtx()
		if opened {
			m.members.follow(ctx, changes)
		}
		m.table.sync(ctx)
	}
	m.layout()
}
