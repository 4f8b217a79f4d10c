package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// coalesceDelay is the least time between two rebuilds: a storm of change
// signals yields at most one rebuild (and a few renders) per interval.
const coalesceDelay = 100 * time.Millisecond

// syncDeadline is how long the first sync may take before the header says so.
const syncDeadline = 30 * time.Second

// tickMsg carries the time, once a second.
type tickMsg time.Time

// changedMsg: the data source (of generation gen: Model.dataGen)
// signalled a change.
type changedMsg struct{ gen int }

// rebuildMsg: the coalescing delay has passed; read the data now.
type rebuildMsg struct{}

// dataMsg carries freshly observed pools and the connection health.
type dataMsg struct {
	gen   int // Model.dataGen of the source read
	seq   int // incremental.seq of the load (0: outside the coalescing loop)
	views []engine.PoolView
	// states: the pools kept by difference from a ChangeSource (with
	// views: their views); nil from another source.
	states []*engine.PoolState
	// delta: from a ChangeSource, only what changed since the last load
	// (views and states are then nil).
	delta  []poolDelta
	health health
	at     time.Time
	// clusters: each cluster's health (a ClusterSource).
	clusters []ClusterHealth
	// unsynced: the caches had not all synced, so nothing was observed (a
	// pool whose Pods are listed but not yet its PVCs would look failed and
	// exhausted).
	unsynced bool
}

// health is the data source's connection state, read with the data.
type health struct {
	synced   bool
	lastSync time.Time
	errAt    time.Time
	err      error
}

func tickCmd(now func() time.Time) tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return tickMsg(now()) })
}

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

// loadCmd reads every pool from the data source and observes it.
func loadCmd(src DataSource, now func() time.Time) tea.Cmd { return readCmd(src, now, true) }

// readCmd reads every pool from the data source and observes it; unless
// partial, only once every cache has synced.
func readCmd(src DataSource, now func() time.Time, partial bool) tea.Cmd {
	return readChangesCmd(src, now, partial, false)
}

// readChangesCmd is readCmd; from a ChangeSource it takes the changes
// first and, byDifference and unless everything changed, reads only them.
func readChangesCmd(src DataSource, now func() time.Time, partial, byDifference bool) tea.Cmd {
	if src == nil {
		return nil
	}
	return func() tea.Msg {
		h := health{synced: src.Synced(), lastSync: src.LastSync()}
		h.errAt, h.err = src.LastWatchError()
		at := now()
		msg := dataMsg{health: h, at: at}
		if cs, ok := src.(ClusterSource); ok {
			msg.clusters = cs.Clusters()
		}
		if !h.synced && !partial {
			msg.unsynced = true
			return msg
		}
		cs, ok := src.(ChangeSource)
		if !ok {
			msg.views = engine.ObserveAll(src.Snapshots(), at)
			return msg
		}
		// Take, then read: the read sees every change taken.
		all, pools := cs.TakeChanges()
		if byDifference && !all && readableChanges(pools) {
			msg.delta = make([]poolDelta, 0, len(pools))
			for _, pc := range pools {
				msg.delta = append(msg.delta, poolDelta{ref: pc.Ref(), update: cs.ReadChanges(pc)})
			}
			return msg
		}
		snaps := src.Snapshots()
		msg.states = make([]*engine.PoolState, len(snaps))
		msg.views = make([]engine.PoolView, len(snaps))
		for i, snap := range snaps {
			msg.states[i] = engine.NewPoolState(snap, at)
			msg.views[i] = *msg.states[i].View()
		}
		return msg
	}
}

// ChangeSource is a DataSource that tells what changed (*kube.Watcher):
// a rebuild then observes again only the members whose objects changed
// (engine.PoolState), and the member list updates only their rows. A
// change it cannot apply so makes the next load a whole one.
type ChangeSource interface {
	DataSource
	// TakeChanges returns what changed since the last call and forgets it
	// (all: read everything). A read that follows sees every change taken.
	TakeChanges() (all bool, pools []engine.PoolChanges)
	// ReadChanges reads the objects a change names.
	ReadChanges(engine.PoolChanges) engine.PoolUpdate
}

// maxDeltaMembers: a load with more changed members than this reads
// everything (one Observe costs less than that many members one by one,
// and the model applies a delta in Update).
const maxDeltaMembers = 2048

// readableChanges reports whether the changes can be read as a delta: no
// pool is to be observed whole, and not too many members changed.
func readableChanges(pools []engine.PoolChanges) bool {
	n := 0
	for _, pc := range pools {
		if pc.Full {
			return false
		}
		n += len(pc.Members)
	}
	return n <= maxDeltaMembers
}

// poolDelta is what a load read of one pool's changes.
type poolDelta struct {
	ref    engine.PoolRef
	update engine.PoolUpdate
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

// connState describes the connection for the header: a glyph, a word and
// how stale the data is, and its level (levelError when the data cannot be
// trusted).
func (h health) connState(now, started time.Time, loaded bool) (text string, level int) {
	switch {
	case !h.errAt.IsZero() && !h.errAt.Before(h.lastSync):
		age := "no data"
		if !h.lastSync.IsZero() {
			age = "data " + render.Duration(now.Sub(h.lastSync)) + " old"
		}
		return render.GlyphBad + " disconnected · " + age, levelError
	case !h.synced || !loaded:
		if now.Sub(started) > syncDeadline {
			msg := render.GlyphBad + " not synced after " + render.Duration(now.Sub(started))
			if h.err != nil {
				msg += ": " + h.err.Error()
			}
			return msg, levelError
		}
		return render.GlyphSyncing + " syncing…", levelWarn
	case h.lastSync.IsZero():
		return render.GlyphLive + " live", levelOK
	}
	return render.GlyphLive + " live · synced " + render.Ago(now, h.lastSync), levelOK
}

// Levels of a status (render's), mapped onto styles.
const (
	levelNone  = int(render.LevelNone)
	levelOK    = int(render.LevelOK)
	levelInfo  = int(render.LevelInfo)
	levelWarn  = int(render.LevelWarn)
	levelError = int(render.LevelError)
)
