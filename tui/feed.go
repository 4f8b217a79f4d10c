package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The data feed: the change signals, their coalescing into one load per
// interval, the loads by generation and by difference, and what a load
// brings to the model.

// coalesceDelay is the least time between two rebuilds: a storm of change
// signals yields at most one rebuild (and a few renders) per interval.
const coalesceDelay = 100 * time.Millisecond

// syncDeadline is how long the first sync may take before the header says so.
const syncDeadline = 30 * time.Second

// changedMsg: the data source (of generation gen: Model.dataGen)
// signalled a change.
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

// load reads the current data source, tagged with its generation. Until
// every cache has synced it observes nothing, so that no alarm is raised on
// a partial picture; past the sync deadline (the header then says the sync
// failed) it shows what there is.
//
// From a ChangeSource, once a load gave pool states, a load reads only what
// changed (a delta), unless the last delta could not be applied.
func (m *Model) load() tea.Cmd {
	partial := m.now.Sub(m.started) > syncDeadline
	byDifference := m.loaded && m.incr.states != nil && !m.incr.needFull
	read := readChangesCmd(m.opts.Data, m.opts.Now, partial, byDifference)
	if read == nil {
		return nil
	}
	if !byDifference {
		m.incr.needFull = false
	}
	m.incr.seq++
	gen, seq := m.dataGen, m.incr.seq
	return func() tea.Msg {
		msg := read().(dataMsg)
		msg.gen, msg.seq = gen, seq
		return msg
	}
}

// waitChange waits for the current data source's next signal.
func (m *Model) waitChange() tea.Cmd {
	if m.opts.Data == nil {
		return nil
	}
	return waitChangeCmd(m.opts.Data.Changed(), m.scopeDone, m.dataGen)
}

func coalesceCmd() tea.Cmd {
	return tea.Tick(coalesceDelay, func(time.Time) tea.Msg { return rebuildMsg{} })
}

// incremental is the model's part of the pools kept by difference.
type incremental struct {
	// states: one per m.views entry, in its order (nil: the source is no
	// ChangeSource, or nothing was loaded yet).
	states []*engine.PoolState
	index  map[engine.PoolRef]int // views entry of a pool
	// needFull: the next load is a whole one (a delta could not be applied).
	needFull bool
	// seq numbers the loads; only the answer of the last one is applied.
	seq int
	// deltas counts the loads applied by difference (tests).
	deltas int
}

// adopt takes the states of a whole load (nil from another source).
func (in *incremental) adopt(states []*engine.PoolState, views []engine.PoolView) {
	in.states = states
	if states == nil {
		in.index = nil
		return
	}
	in.index = make(map[engine.PoolRef]int, len(views))
	for i := range views {
		in.index[views[i].Ref()] = i
	}
}

// applyDelta brings the pools up to date from a delta (dataMsg.delta): each
// changed pool's state re-observes its changed members, every other pool's
// follows the time; the member list updates the rows that changed. A change
// it cannot apply (a pool's shape changed, a pool appeared) leaves the rest
// and asks for a whole load (needFull, dirty).
func (m *Model) applyDelta(msg dataMsg) {
	in := &m.incr
	m.health, m.observedAt = msg.health, msg.at
	m.clusters = msg.clusters
	if m.now.Before(msg.at) {
		m.now = msg.at
	}
	changed := make(map[int]engine.PoolUpdate, len(msg.delta))
	for _, d := range msg.delta {
		i, ok := in.index[d.ref]
		if !ok {
			m.wantFull() // a new pool
			return
		}
		changed[i] = d.update
	}
	// The states follow the watched pools (m.watched); the pools shown are
	// those of a narrowing (`:ctx`, `:ns` in a fleet of clusters) or the
	// same slice.
	var (
		open          = -1 // the watched pool of the members view
		memberChanges []engine.MemberChange
	)
	for i, s := range in.states {
		changes, ok := s.Update(changed[i], msg.at)
		if !ok {
			m.wantFull()
			return
		}
		m.watched[i] = *s.View()
		if m.members.pool != (engine.PoolRef{}) && m.watched[i].Ref() == m.members.pool {
			open, memberChanges = i, changes
		}
	}
	m.views = m.narrowed(m.watched)
	if open >= 0 {
		if v := m.view(m.members.pool); v != nil {
			m.members.applyChanges(v, memberChanges)
		}
	}
	in.deltas++
	m.rebuilds++
	m.pools.sync(m.views, m.opts.Fleet, m.opts.Contexts)
	m.layout()
}

// wantFull makes the next load a whole one, soon.
func (m *Model) wantFull() {
	m.incr.needFull = true
	m.dirty = true
}

// rebuild reads the data source and re-arms the change watch.
func (m *Model) rebuild() tea.Cmd {
	cmds := []tea.Cmd{m.load()}
	if !m.armed && m.opts.Data != nil {
		m.armed = true
		cmds = append(cmds, m.waitChange())
	}
	return tea.Batch(cmds...)
}

// applyData takes a new set of observed pools and re-derives every view's
// rows (sorting and filtering happen here, not per frame).
func (m *Model) applyData(msg dataMsg) {
	if msg.unsynced {
		// Nothing observed yet: the screen stays neutral ("syncing…").
		m.health = msg.health
		if m.now.Before(msg.at) {
			m.now = msg.at
		}
		return
	}
	if msg.delta != nil {
		m.applyDelta(msg)
		return
	}
	m.views, m.health, m.observedAt, m.loaded = m.takeViews(msg.views), msg.health, msg.at, true
	m.incr.adopt(msg.states, msg.views)
	m.clusters = msg.clusters
	if m.now.Before(msg.at) {
		m.now = msg.at
	}
	m.rebuilds++
	m.pools.sync(m.views, m.opts.Fleet, m.opts.Contexts)
	if m.members.pool != (engine.PoolRef{}) {
		m.members.setData(m.view(m.members.pool))
	}
	m.layout()
}
