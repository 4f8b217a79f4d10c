package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// Routing: the root knows which screen is shown and sends keys, messages
// and intents to its view; everything else it asks of the view
// (component). This file is the only one that checks the screen.

// firstScreen is the screen the dashboard starts on: the wall in read-only
// mode, else the pools.
func firstScreen(opts Options) screen {
	if opts.ReadOnly {
		return screenWall
	}
	return screenPools
}

// shown is the view of the current screen.
func (m *Model) shown() component {
	switch m.screen {
	case screenMembers:
		return &m.members
	case screenDetail:
		return &m.detail
	case screenLogs:
		return &m.logs
	case screenWall:
		return m.wall
	}
	return &m.table
}

// handleKey routes a key: ctrl+c, then an open dialog or the help, then the
// global keys (unless the view takes typed text), then the current view.
func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	k := &m.keys
	if key.Matches(msg, k.Interrupt) {
		return tea.Quit
	}
	if m.command.open {
		return m.updateCommand(msg)
	}
	m.acts.note = "" // a note lasts until the next key
	ctx := m.viewCtx()
	if m.dialog != nil {
		return m.apply(m.dialog.update(ctx, msg))
	}
	if m.showHelp {
		if key.Matches(msg, k.Help, k.Back) {
			m.showHelp = false
		} else if key.Matches(msg, k.Quit) {
			return tea.Quit
		}
		return nil
	}
	if !m.shown().capturing() {
		switch {
		case key.Matches(msg, k.Quit):
			return tea.Quit
		case key.Matches(msg, k.Help):
			m.showHelp = true
			return nil
		case key.Matches(msg, k.Log):
			m.showLog = !m.showLog
			m.layout()
			return nil
		case key.Matches(msg, k.Command):
			return m.openCommand()
		case key.Matches(msg, k.Copy, k.CopyConsole) && m.screen != screenLogs:
			if c := m.copyCmd(key.Matches(msg, k.CopyConsole)); c != nil {
				return func() tea.Msg { return c() }
			}
			return nil
		case key.Matches(msg, k.Wall) && m.screen != screenDetail && m.screen != screenLogs:
			if m.screen == screenWall {
				m.screen = screenPools
			} else {
				m.screen = screenWall
			}
			return nil
		}
	}
	return m.apply(m.shown().update(ctx, msg))
}

// apply does what a view asked for; cmd is the view's own.
func (m *Model) apply(in intent, cmd tea.Cmd) tea.Cmd {
	switch in := in.(type) {
	case showScreen:
		m.screen = in.screen
	case openPool:
		m.openMembers(in.pool)
	case openMember:
		return tea.Batch(cmd, m.openDetail(in.pool, in.member))
	case actionKey:
		return tea.Batch(cmd, m.actionKey(in.msg, in.pool, in.member))
	case dialogDone:
		m.dialog = nil
		if !in.confirmed {
			m.setNote("cancelled: "+in.req.describe(), levelNone)
			return cmd
		}
		return tea.Batch(cmd, m.startAction(in.req))
	}
	return cmd
}

// about is the pool the current view is about and its selected member.
func (m *Model) about() (engine.PoolRef, *engine.Member) { return m.shown().about(m.viewCtx()) }

// currentPool is the pool the screen is about (zero for none).
func (m *Model) currentPool() engine.PoolRef {
	ref, _ := m.about()
	return ref
}

// leaveGonePool goes back to the pools when the screen is about a pool no
// longer shown (a narrowing took it away).
func (m *Model) leaveGonePool() {
	if m.screen == screenPools || m.screen == screenWall {
		return
	}
	if pool := m.currentPool(); pool != (engine.PoolRef{}) && m.pool(pool) != nil {
		return
	}
	m.logs.stop()
	m.members.closeAudit()
	m.screen = screenPools
}

// home shows the pools again, as the table or the wall (a switch of
// namespaces starts the views over).
func (m *Model) home() {
	m.logs.stop()
	if m.screen != screenWall {
		m.screen = screenPools
	}
}

// helpLine is the bottom line: the keys of the current screen or dialog.
func (m *Model) helpLine(ctx viewContext) string {
	k := &m.keys
	var keys []key.Binding
	switch {
	case m.dialog != nil:
		keys = m.dialog.help(k)
	case m.showHelp:
		keys = []key.Binding{withHelp(k.Back, "close help"), k.Quit}
	case m.command.open:
		keys = commandKeys()
	default:
		shown := m.shownKeys()
		c := ctx
		c.keys = &shown
		keys = m.shown().help(c)
	}
	return fitHelp(ctx, &m.help, keys)
}

// openMembers shows a pool's members.
func (m *Model) openMembers(pool engine.PoolRef) {
	m.members.show(m.viewCtx(), pool)
	m.screen = screenMembers
	m.layout()
}

// openDetail shows a member's details, which read their Events.
func (m *Model) openDetail(pool engine.PoolRef, member string) tea.Cmd {
	events := m.detail.open(m.viewCtx(), pool, member)
	m.screen = screenDetail
	// The nodes may have changed since start (a virtual node came up).
	if m.side.noNodes || m.opts.Nodes == nil {
		return events
	}
	return tea.Batch(events, nodesCmd(m.ctx, m.opts.Nodes))
}

// refresh asks the view on screen to read again what it shows.
func (m *Model) refresh() tea.Cmd {
	if r, ok := m.shown().(refresher); ok {
		return r.refresh(m.viewCtx())
	}
	return nil
}

// openLogs shows the member's log and starts streaming it, or says why not;
// esc goes back to the screen it was opened from.
func (m *Model) openLogs(pool engine.PoolRef, mm *engine.Member) tea.Cmd {
	if why := toolUnavailable(engine.ActionLogs, m.pool(pool), mm); why != "" {
		m.setNote(render.GlyphBad+" "+why, levelError)
		return nil
	}
	r := m.reach()
	src := r.logs(pool)
	if src == nil {
		m.setNote(render.GlyphBad+" logs unavailable: no log connection", levelError)
		return nil
	}
	cmd := m.logs.open(m.ctx, src, m.st, pool, mm.Name, r.namespaceOf(pool), m.screen)
	m.screen = screenLogs
	return cmd
}
