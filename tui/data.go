package tui

import (
	"errors"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// tickMsg carries the time, once a second.
type tickMsg time.Time

// dataMsg carries freshly observed pools and the connection health.
type dataMsg struct {
	gen   int // feed.gen of the source read
	seq   int // incremental.seq of the load (0: outside the coalescing loop)
	pools []engine.PoolView
	// states: the pools kept by difference from a ChangeSource (with
	// pools: their observed pools); nil from another source.
	states []*engine.PoolState
	// delta: from a ChangeSource, only what changed since the last load
	// (pools and states are then nil).
	delta  []poolDelta
	health health
	at     time.Time
	// contexts: each context's health (a ContextSource).
	contexts []engine.ContextHealth
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
		if cs, ok := src.(ContextSource); ok {
			msg.contexts = cs.Health()
		}
		if !h.synced && !partial {
			msg.unsynced = true
			return msg
		}
		cs, ok := src.(ChangeSource)
		if !ok {
			msg.pools = engine.ObserveAll(src.Snapshots(), at)
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
		msg.pools = make([]engine.PoolView, len(snaps))
		for i, snap := range snaps {
			msg.states[i] = engine.NewPoolState(snap, at)
			msg.pools[i] = *msg.states[i].View()
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
		return render.GlyphBad + " " + h.lostWord() + " · " + age, levelError
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

// lostWord names why the header no longer shows the data as live:
// "credentials refused" when the API server answered 401 (the kubeconfig's
// token or certificate is expired, revoked or not yet rotated in),
// "forbidden" when it answered 403, else "disconnected".
func (h health) lostWord() string {
	switch {
	case credentialsRefused(h.err):
		return "credentials refused"
	case errors.Is(h.err, engine.ErrForbidden):
		return "forbidden"
	}
	return "disconnected"
}

// credentialsRefused reports whether err is the API server's refusal of the
// credentials (kube.CredentialsError, known by its method).
func credentialsRefused(err error) bool {
	var r interface{ CredentialsRefused() bool }
	return errors.As(err, &r) && r.CredentialsRefused()
}

// Levels of a status (render's), mapped onto styles.
const (
	levelNone  = int(render.LevelNone)
	levelOK    = int(render.LevelOK)
	levelInfo  = int(render.LevelInfo)
	levelWarn  = int(render.LevelWarn)
	levelError = int(render.LevelError)
)
