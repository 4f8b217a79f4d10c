package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// action is one entry of actionTable (actions.go): what the dashboard
// derives an action's key handling, help, permission check and dialog from.
type action struct {
	// name is how messages name the action ("delete is not allowed: ...").
	name string
	// kind is the engine's action: the permission it is checked for, and
	// the one name audit and RBAC use (two actions may share one: the
	// engine call decides).
	kind engine.Action
	// keys are its keys; help is its label in the help ("f/x force-release").
	keys []string
	help string
	// write: it changes something (pods/exec for the console), so its key is
	// not bound in read-only mode.
	write bool
	// on: the screens whose short help lists it (its key works wherever a
	// pool is selected; the full help lists every action).
	on listing
	// listed, when set, says whether the short help lists it for the
	// selected pool (v, nil when none): an action that only some states
	// have (a halted rollout's resume) takes no room in the others.
	listed func(v *engine.PoolView) bool
	// scope is what it acts on: the selected member (needed), the pool's
	// members or the pool.
	scope actionScope
	// mark, when set, is shown after its label in the help when the
	// selected member cannot have it ("✗ sandboxd"); "" when it can.
	mark func(t target) string
	// prepare checks the target before anything opens and fills the
	// request (nil: nothing to check): a note and its level say why not.
	prepare func(t target, r *actionRequest) (note string, level int)
	// dialog is its confirmation (nil: it runs at once).
	dialog func(t target, r actionRequest) dialogStep
	// run is its engine call on pool (the name in its namespace) and the
	// text the log shows of the result.
	run func(ctx context.Context, a Actions, pool string, r actionRequest) (string, error)
	// open, instead of dialog and run, starts a tool that takes the screen
	// or the terminal (the logs, the console) for the request r.
	open func(m *Model, t target, r actionRequest) tea.Cmd
	// describe names a request for the status line and the log.
	describe func(r actionRequest) string
}

// actionScope is what an action acts on.
type actionScope int

const (
	// scopeMember: the selected member; the key says so without one.
	scopeMember actionScope = iota
	// scopeMembers: the pool's members, none selected (a claim).
	scopeMembers
	// scopePool: the pool.
	scopePool
)

// listing is a set of screens whose short help lists an action.
type listing uint8

func actsOn(screens ...screen) listing {
	var l listing
	for _, s := range screens {
		l |= 1 << s
	}
	return l
}

func (l listing) has(s screen) bool { return l&(1<<s) != 0 }

// binding is the action's key binding, disabled in read-only mode when it
// writes (then it matches nothing and the help leaves it out).
func (a *action) binding(readOnly bool) key.Binding {
	b := key.NewBinding(key.WithKeys(a.keys...), key.WithHelp(strings.Join(a.keys, "/"), a.help))
	b.SetEnabled(!readOnly || !a.write)
	return b
}

// tableKinds are the engine actions of the table, each once, in its order.
func tableKinds() []engine.Action {
	var out []engine.Action
	for i := range actionTable {
		if k := actionTable[i].kind; !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// target is what an action key acts on: a pool and, on a member's row or
// pane, the member.
type target struct {
	ref engine.PoolRef
	// title is the pool as the user sees it (poolTitle).
	title string
	// pool is the pool's data (nil: not in the snapshot), member the
	// selected member (nil: none).
	pool   *engine.PoolView
	member *engine.Member
	now    time.Time
}

// refused is a note of a refusal, as an error.
func refused(why string) (string, int) { return render.GlyphBad + " " + why, levelError }

// actionRequest is everything an action needs, copied out of the model.
type actionRequest struct {
	act *action
	ref engine.PoolRef
	// pool is ref as the user sees it (poolTitle): the log and the
	// status line show it, the delete dialog asks for it.
	pool, member string
	holder       string // force-release: the holder of the claim it ends (raw, unsanitised)
	identity     string // claim: the identity a member is claimed for (raw, unsanitised)
	size, from   int    // resize: new and old size
}

// kind is the request's engine action ("" for none).
func (r actionRequest) kind() engine.Action {
	if r.act == nil {
		return ""
	}
	return r.act.kind
}

// describe names the action for the status line and the log.
func (r actionRequest) describe() string {
	if r.act == nil {
		return "action on " + r.pool
	}
	return r.act.describe(r)
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
		if req.act == nil || req.act.run == nil {
			return actionDoneMsg{id: id, req: req, err: fmt.Errorf("unknown action %q", req.kind())}
		}
		text, err := req.act.run(ctx, a, pool, req)
		return actionDoneMsg{id: id, req: req, text: text, err: err}
	}
}

// actionKey runs the action of a key the view did not handle on pool (and
// the selected member when mm is set): its checks, then its tool, its
// dialog or the action itself.
func (m *Model) actionKey(msg tea.KeyMsg, pool engine.PoolRef, mm *engine.Member) tea.Cmd {
	if pool == (engine.PoolRef{}) {
		return nil
	}
	a := m.keys.actionFor(msg)
	if a == nil {
		return nil
	}
	if why := m.refusal(a, pool); why != "" {
		m.setNote(render.GlyphBad+" "+why, levelError)
		return nil
	}
	t := target{ref: pool, title: m.title(pool), pool: m.pool(pool), member: mm, now: m.now}
	if a.scope == scopeMember && mm == nil {
		m.setNote("select a member first (enter opens the pool)", levelWarn)
		return nil
	}
	req := actionRequest{act: a, ref: pool, pool: t.title}
	if mm != nil {
		req.member = mm.Name
	}
	if a.open != nil {
		return a.open(m, t, req)
	}
	if a.dialog != nil && !m.canAct() {
		m.setNote(render.GlyphBad+" read-only: "+a.name+" is a write", levelError)
		return nil
	}
	if a.prepare != nil {
		if note, level := a.prepare(t, &req); note != "" {
			m.setNote(note, level)
			return nil
		}
	}
	if a.dialog == nil {
		return m.startAction(req)
	}
	m.dialog = newDialog(m.st, req, a.dialog(t, req))
	return m.dialog.focusInput()
}

// startAction records and runs an action. Read-only mode never gets here
// (the keys are not bound), and refuses again if it ever did.
func (m *Model) startAction(req actionRequest) tea.Cmd {
	a, pool := m.reach().actions(req.ref)
	if m.opts.ReadOnly || a == nil {
		m.setNote(render.GlyphBad+" read-only: actions are disabled", levelError)
		return nil
	}
	if why := m.refusal(req.act, req.ref); why != "" {
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
