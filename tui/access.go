package tui

import (
	"context"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// sideState is what the dashboard learns besides the pools: the nodes for
// the diagnosis and what the user may do.
type sideState struct {
	nodes   []*corev1.Node
	noNodes bool                                // the user may not read nodes: not asked again
	caps    map[engine.Action]engine.Capability // nil until known
	capsErr error
	// inNS: the fleet's capabilities, per cluster and namespace (nsRef,
	// fleet.go).
	inNS map[engine.PoolRef]*nsCaps
}

// capsMsg answers the capabilities request.
type capsMsg struct {
	in   engine.PoolRef // the fleet's cluster and namespace asked (nsRef; zero: the dashboard's)
	caps []engine.Capability
	err  error
}

// healthMsg carries the data source's connection state, read on each tick.
type healthMsg struct {
	health   health
	contexts []engine.ContextHealth // a ContextSource's
}

// capsTimeout bounds the capabilities request.
const capsTimeout = 15 * time.Second

// capsCmd asks the API server what the user may do.
func capsCmd(ctx context.Context, a Access) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, capsTimeout)
		defer cancel()
		caps, err := a.Capabilities(ctx, append([]engine.Action(nil), ActionNames...))
		return capsMsg{caps: caps, err: err}
	}
}

// healthCmd reads the connection state (cheap: two locked reads).
func healthCmd(src DataSource) tea.Cmd {
	if src == nil {
		return nil
	}
	return func() tea.Msg {
		msg := healthMsg{health: readHealth(src)}
		if cs, ok := src.(ContextSource); ok {
			msg.contexts = cs.Health()
		}
		return msg
	}
}

func readHealth(src DataSource) health {
	h := health{synced: src.Synced(), lastSync: src.LastSync()}
	h.errAt, h.err = src.LastWatchError()
	return h
}

// startCmds are the side requests of Init: nodes and capabilities.
func (m *Model) startCmds() []tea.Cmd {
	var cmds []tea.Cmd
	if m.opts.Nodes != nil {
		cmds = append(cmds, nodesCmd(m.ctx, m.opts.Nodes))
	}
	if caps := m.askCapsHere(); caps != nil {
		cmds = append(cmds, caps)
	}
	return cmds
}

// askCapsHere asks what the user may do in the dashboard's one namespace
// (nil in the fleet, which asks per namespace: askCaps).
func (m *Model) askCapsHere() tea.Cmd {
	if m.opts.Fleet {
		return nil
	}
	a := m.reach().access(engine.PoolRef{})
	if a == nil {
		return nil
	}
	return capsCmd(m.ctx, a)
}

// updateSide handles the side messages.
func (m *Model) updateSide(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case nodesMsg:
		if msg.err == nil {
			m.side.nodes, m.side.noNodes = msg.nodes, msg.nodes == nil
		}
	case capsMsg:
		var caps map[engine.Action]engine.Capability
		if msg.err == nil {
			caps = map[engine.Action]engine.Capability{}
			for _, c := range msg.caps {
				caps[c.Action] = c
			}
		}
		if m.opts.Fleet {
			if c := m.side.inNS[msg.in]; c != nil {
				c.caps, c.err = caps, msg.err
			}
			return nil
		}
		m.side.capsErr = msg.err
		if msg.err == nil {
			m.side.caps = caps
		}
	case healthMsg:
		f := &m.feed
		was := f.health.disconnected()
		f.health = msg.health
		if msg.contexts != nil {
			f.contexts = msg.contexts
		}
		// Capabilities asked during an outage are asked again on recovery.
		if was && !f.health.disconnected() && m.opts.Fleet {
			for ns, c := range m.side.inNS {
				if c.err != nil {
					delete(m.side.inNS, ns)
				}
			}
			return m.askCaps()
		}
		if was && !f.health.disconnected() && m.side.capsErr != nil {
			if caps := m.askCapsHere(); caps != nil {
				m.side.capsErr = nil
				return caps
			}
		}
	}
	return nil
}

// same reports whether o is h as the screen shows it (an error by its
// text).
func (h health) same(o health) bool {
	return h.synced == o.synced && h.lastSync.Equal(o.lastSync) && h.errAt.Equal(o.errAt) && sameError(h.err, o.err)
}

// sameContexts reports whether b is a as the screen shows them (every
// field of engine.ContextHealth, errors by their text).
func sameContexts(a, b []engine.ContextHealth) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Context != y.Context || x.Synced != y.Synced || !x.LastSync.Equal(y.LastSync) || !x.ErrAt.Equal(y.ErrAt) ||
			!sameError(x.Err, y.Err) || !sameError(x.Forbidden, y.Forbidden) {
			return false
		}
	}
	return true
}

// sameError compares errors by their text (an error's type need not be
// comparable).
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
}

// disconnected reports whether the header shows the API server as lost.
func (h health) disconnected() bool {
	return !h.errAt.IsZero() && !h.errAt.Before(h.lastSync)
}

// unreachable is the reason given for an action while disconnected.
const unreachable = "API server unreachable"

// refusal says why the action cannot run now on the pool, or "" when it
// may: the API server is unreachable, or the user lacks the permission of
// its engine action (in the pool's namespace).
func (m *Model) refusal(a *action, pool engine.PoolRef) string {
	if a == nil {
		return ""
	}
	if a.write && !m.opts.ReadOnly && m.reach().readOnlyAt(pool) {
		return a.name + " refused: context " + pool.Context + " is read-only (config)"
	}
	if m.feed.health.disconnected() {
		why := unreachable
		if w := m.feed.health.lostWord(); w != "disconnected" {
			why = w
		}
		return why + ": " + a.name + " needs the server (data " + render.Duration(m.now.Sub(m.feed.health.lastSync)) + " old)"
	}
	caps, _ := m.capsFor(pool)
	if c, ok := caps[a.kind]; ok && !c.Allowed {
		msg := a.name + " is not allowed: needs " + render.OrWord(c.MissingText(), "a permission")
		switch {
		case m.opts.Contexts:
			if pool.Context != "" {
				msg += " in context " + pool.Context + ", namespace " + pool.Namespace
			}
		case m.opts.Fleet:
			msg += " in namespace " + m.reach().namespaceOf(pool)
		}
		return msg
	}
	return ""
}

// missing is the permission an action lacks in caps, what the user may do
// on a pool ("" when allowed or unknown).
func missing(caps map[engine.Action]engine.Capability, kind engine.Action) (string, bool) {
	if c, ok := caps[kind]; ok && !c.Allowed {
		return render.OrWord(c.MissingText(), "a permission"), true
	}
	return "", false
}

// capsPending reports whether what the user may do on the pool is still
// being asked: its action keys then show as pending.
func (m *Model) capsPending(pool engine.PoolRef) bool {
	if m.opts.ReadOnly {
		return false
	}
	if !m.opts.Fleet {
		return m.side.caps == nil && m.side.capsErr == nil && m.reach().access(engine.PoolRef{}) != nil
	}
	c := m.side.inNS[nsRef(pool)]
	return c != nil && c.caps == nil && c.err == nil
}

// shownKeys is the keymap as the help shows it: an unavailable action's
// description ends in "✗", and while the permissions are asked in "◌"
// (an error leaves them unknown: shown as available); an action the
// selected member cannot have carries its mark ("console ✗ sandboxd").
func (m *Model) shownKeys() keyMap {
	k := m.keys
	k.actions = slices.Clone(m.keys.actions)
	t := m.currentTarget()
	pending := m.capsPending(t.ref)
	caps, _ := m.capsFor(t.ref)
	for i := range k.actions {
		ab := &k.actions[i]
		h := ab.b.Help()
		_, no := missing(caps, ab.act.kind)
		no = no || ab.act.write && m.reach().readOnlyAt(t.ref)
		switch {
		case ab.act.mark != nil && ab.act.mark(t) != "":
			ab.b.SetHelp(h.Key, h.Desc+" "+ab.act.mark(t))
		case no || (m.feed.health.disconnected() && ab.b.Enabled()):
			ab.b.SetHelp(h.Key, h.Desc+" "+render.GlyphBad)
		case pending && ab.b.Enabled():
			ab.b.SetHelp(h.Key, h.Desc+" "+render.GlyphSyncing)
		}
	}
	return k
}

// unavailableLines lists the unavailable actions for the help overlay.
func (m *Model) unavailableLines() []string {
	var out []string
	pool := m.currentPool()
	caps, err := m.capsFor(pool)
	for _, ab := range m.keys.actions {
		if !ab.b.Enabled() {
			continue
		}
		if ab.act.write && m.reach().readOnlyAt(pool) {
			out = append(out, m.st.Muted.Render(render.GlyphBad+" "+ab.b.Help().Key+" "+ab.act.name+" · context "+sanitize.Sanitize(pool.Context)+" is read-only (config)"))
		} else if perm, no := missing(caps, ab.act.kind); no {
			out = append(out, m.st.Muted.Render(render.GlyphBad+" "+ab.b.Help().Key+" "+ab.act.name+" · needs: "+sanitize.Sanitize(perm)))
		} else if m.feed.health.disconnected() {
			out = append(out, m.st.Muted.Render(render.GlyphBad+" "+ab.b.Help().Key+" "+ab.act.name+" · "+unreachable))
		}
	}
	if err != nil {
		out = append(out, m.st.Warn.Render(render.GlyphWarn+" permissions unknown: "+sanitize.Sanitize(err.Error())))
	} else if m.capsPending(pool) {
		out = append(out, m.st.Muted.Render(render.GlyphSyncing+" permissions pending: the API server is asked what you may do"))
	}
	return out
}
