package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
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
	gen    int // Model.dataGen of the source read
	views  []engine.PoolView
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
func (m *Model) load() tea.Cmd {
	read := readCmd(m.opts.Data, m.opts.Now, m.now.Sub(m.started) > syncDeadline)
	if read == nil {
		return nil
	}
	gen := m.dataGen
	return func() tea.Msg {
		msg := read().(dataMsg)
		msg.gen = gen
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
		msg.views = engine.ObserveAll(src.Snapshots(), at)
		return msg
	}
}

// connState describes the connection for the header: a glyph, a word and
// how stale the data is, and its level (levelError when the data cannot be
// trusted).
func (h health) connState(now, started time.Time, loaded bool) (text string, level int) {
	switch {
	case !h.errAt.IsZero() && !h.errAt.Before(h.lastSync):
		age := "no data"
		if !h.lastSync.IsZero() {
			age = "data " + short(now.Sub(h.lastSync)) + " old"
		}
		return glyphBad + " disconnected · " + age, levelError
	case !h.synced || !loaded:
		if now.Sub(started) > syncDeadline {
			msg := glyphBad + " not synced after " + short(now.Sub(started))
			if h.err != nil {
				msg += ": " + h.err.Error()
			}
			return msg, levelError
		}
		return glyphSyncing + " syncing…", levelWarn
	case h.lastSync.IsZero():
		return glyphLive + " live", levelOK
	}
	return glyphLive + " live · synced " + ago(now, h.lastSync), levelOK
}

// Levels of a status, mapped onto styles.
const (
	levelNone = iota
	levelOK
	levelInfo
	levelWarn
	levelError
)
