package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// actionKind is one of the dashboard's operations, named as the engine names
// them for the audit Events and the RBAC roles.
type actionKind = engine.Action

const (
	actReconcile    = engine.ActionReconcile
	actForceRelease = engine.ActionForceRelease
	actResize       = engine.ActionResize
	actDelete       = engine.ActionDelete
	actClaim        = engine.ActionClaim   // claim a free member for an identity (claim.go)
	actConsole      = engine.ActionConsole // a terminal in a member (console.go)
	actLogs         = engine.ActionLogs    // a member's log (logs.go); a read, never logged
)

// actionRequest is everything an action needs, copied out of the model.
type actionRequest struct {
	kind actionKind
	ref  engine.PoolRef
	// pool is ref as the user sees it (poolTitle): the log and the
	// status line show it, the delete dialog asks for it.
	pool, member string
	holder       string // force-release: the holder of the claim it ends (raw, unsanitised)
	identity     string // claim: the identity a member is claimed for (raw, unsanitised)
	size, from   int    // resize: new and old size
}

// describe names the action for the status line and the log.
func (r actionRequest) describe() string {
	switch r.kind {
	case actForceRelease:
		if r.holder != "" {
			return fmt.Sprintf("force-release %s (%s)", r.member, r.holder)
		}
		return "force-release " + r.member
	case actResize:
		return fmt.Sprintf("resize %s %d → %d", r.pool, r.from, r.size)
	case actDelete:
		return "delete pool " + r.pool
	case actClaim:
		return fmt.Sprintf("claim %s for %s", r.pool, r.identity)
	case actConsole:
		return "console " + r.member
	case actLogs:
		return "logs " + r.member
	}
	return "reconcile " + r.pool
}

// actionDoneMsg is the result of an action.
type actionDoneMsg struct {
	id   int
	req  actionRequest
	text string
	err  error
}

// actionState tracks the running actions and the last note.
type actionState struct {
	nextID  int
	running map[int]actionRequest
	note    string // a transient line (cleared by the next key)
	noteLvl int
}

// actionCmd runs one action on pool, the name in its namespace of the pool
// req names (req.ref). It reads nothing from the model.
func actionCmd(ctx context.Context, a Actions, pool string, timeout time.Duration, id int, req actionRequest) tea.Cmd {
	return func() (msg tea.Msg) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		defer func() {
			if r := recover(); r != nil {
				msg = actionDoneMsg{id: id, req: req, err: fmt.Errorf("internal error: %v", r)}
			}
		}()
		done := func(text string, err error) tea.Msg { return actionDoneMsg{id: id, req: req, text: text, err: err} }
		switch req.kind {
		case actReconcile:
			res, err := a.Reconcile(ctx, pool)
			return done(reconcileText(res), err)
		case actForceRelease:
			res, err := a.ForceRelease(ctx, pool, req.member)
			return done(releaseText(req, res), err)
		case actResize:
			res, err := a.Resize(ctx, pool, req.size)
			return done(fmt.Sprintf("size %d; %s", req.size, reconcileText(res)), err)
		case actDelete:
			res, err := a.Delete(ctx, pool)
			return done(deleteText(res), err)
		case actClaim:
			res, err := a.Claim(ctx, pool, req.identity)
			return done(claimText(req, res), err)
		}
		return done("", fmt.Errorf("unknown action %q", req.kind))
	}
}

func reconcileText(r engine.ReconcileResult) string {
	skipped := 0
	for _, a := range r.Actions {
		if a.Skipped != "" {
			skipped++
		}
	}
	s := render.Plural(r.Done(), "change", "changes")
	if skipped > 0 {
		s += fmt.Sprintf(", %d skipped", skipped)
	}
	if n := len(r.Errors); n > 0 {
		s += ", " + render.Plural(n, "error", "errors") + ": " + engine.ErrorSummary(r.Errors, maxErrorLines)
	}
	return s
}

func deleteText(r engine.DeleteResult) string {
	if len(r.LeftAlone) == 0 {
		return "pool deleted"
	}
	return "pool deleted; left alone: " + strings.Join(r.LeftAlone, "; ")
}

func releaseText(req actionRequest, r engine.ReleaseResult) string {
	switch {
	case r.NoOp:
		return req.member + " had no claim: nothing done"
	case r.RemovedUnheld:
		return req.member + " had a Lease with no holder: removed"
	case r.Recreated:
		return fmt.Sprintf("released from %s, rebuilt from the current image", render.OrWord(r.PreviousHolder, req.holder))
	}
	return fmt.Sprintf("released from %s, not rebuilt (above the size)", render.OrWord(r.PreviousHolder, req.holder))
}

// startAction records and runs an action. Read-only mode never gets here
// (the keys are not bound), and refuses again if it ever did.
func (m *Model) startAction(req actionRequest) tea.Cmd {
	a, pool := m.actionsFor(req.ref)
	if m.opts.ReadOnly || a == nil {
		m.setNote(render.GlyphBad+" read-only: actions are disabled", levelError)
		return nil
	}
	if why := m.refusal(req.kind, req.ref); why != "" {
		m.setNote(render.GlyphBad+" "+why, levelError)
		return nil
	}
	id := m.logStart(req)
	m.acts.note = ""
	cmds := []tea.Cmd{actionCmd(m.ctx, a, pool, m.opts.ActionTimeout, id, req)}
	if len(m.acts.running) == 1 {
		cmds = append(cmds, m.spin.Tick)
	}
	return tea.Batch(cmds...)
}

// logStart records an action as running in the action log and returns its id.
func (m *Model) logStart(req actionRequest) int {
	m.acts.nextID++
	id := m.acts.nextID
	m.acts.running[id] = req
	m.actlog.start(m.now, id, req)
	return id
}

func (m *Model) setNote(s string, level int) { m.acts.note, m.acts.noteLvl = s, level }

// actionKey maps an action key onto a dialog or an action for pool (and the
// selected member when mm is set).
func (m *Model) actionKey(msg tea.KeyMsg, pool engine.PoolRef, mm *engine.Member) tea.Cmd {
	if pool == (engine.PoolRef{}) {
		return nil
	}
	k := &m.keys
	b, kind := k.actionFor(msg)
	if b == nil {
		return nil
	}
	if why := m.refusal(kind, pool); why != "" {
		m.setNote(render.GlyphBad+" "+why, levelError)
		return nil
	}
	v := m.pool(pool)
	switch b {
	case &k.Console:
		return m.openConsole(pool, mm)
	case &k.Logs:
		return m.openLogs(pool, mm)
	case &k.Claim:
		return m.openClaim(pool)
	case &k.Reconcile:
		return m.startAction(actionRequest{kind: actReconcile, ref: pool, pool: m.title(pool)})
	case &k.Resize:
		if v == nil || !v.Defined {
			m.setNote(render.GlyphBad+" "+sanitize.Sanitize(m.title(pool))+" has no definition to resize", levelError)
			return nil
		}
		m.dialog = newResizeDialog(m.st, v)
		m.dialog.req.ref, m.dialog.req.pool = pool, m.title(pool)
		return m.dialog.input.Focus()
	case &k.Delete:
		m.dialog = newDeleteDialog(m.st, pool, m.title(pool), v)
		return m.dialog.input.Focus()
	case &k.Release, &k.ForceRelease:
		if mm == nil {
			m.setNote("select a member first (enter opens the pool)", levelWarn)
			return nil
		}
		force := b == &k.ForceRelease
		switch {
		case !force && !mm.Claimed:
			m.setNote(sanitize.Sanitize(mm.Name)+" is not claimed by a user: nothing to release", levelWarn)
			return nil
		case force && mm.Lease == nil:
			m.setNote(sanitize.Sanitize(mm.Name)+" has no claim: nothing to release", levelWarn)
			return nil
		}
		// The dashboard has no claim identity of its own: releasing a claim
		// from it always releases another identity's claim, which is a
		// force-release (the same permission check, confirmation and audit
		// as f and release --force).
		m.dialog = newReleaseDialog(v, mm, m.now)
		m.dialog.req.ref, m.dialog.req.pool = pool, m.title(pool)
	}
	return nil
}
