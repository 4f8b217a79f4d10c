package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// component is a view: it handles the messages the root routes to it (its
// keys, and the answers to its own reads) and draws itself. What it asks of
// the root comes back as an intent.
type component interface {
	update(ctx viewContext, msg tea.Msg) (intent, tea.Cmd)
	view(ctx viewContext) string
}

// shown is the view of the current screen (the audit trail while it is open
// over the members view).
func (m *Model) shown() component {
	switch m.screen {
	case screenMembers:
		if m.audit.open {
			return &m.audit
		}
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

// capturing reports whether the current view takes typed text (a filter or
// a search): then every key but ctrl+c is its own.
func (m *Model) capturing() bool {
	switch m.screen {
	case screenPools:
		return m.table.filter.typing
	case screenMembers:
		return m.members.filter.typing
	case screenLogs:
		return m.logs.searching
	}
	return false
}

// handleKey routes a key: ctrl+c, then an open dialog or the help, then the
// global keys (unless the view takes typed text), then the current view;
// the audit trail passes the keys it does not handle to the members view.
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
	capturing := m.capturing()
	if !capturing {
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
		case key.Matches(msg, k.Wall) && m.screen != screenDetail && m.screen != screenLogs:
			if m.screen == screenWall {
				m.screen = screenPools
			} else {
				m.screen = screenWall
			}
			return nil
		}
	}
	if capturing {
		// The members view's filter is typed even under the audit trail.
		if m.screen == screenMembers {
			return m.apply(m.members.update(ctx, msg))
		}
	}
	in, cmd := m.shown().update(ctx, msg)
	if _, pass := in.(passOn); pass {
		in, cmd = m.members.update(ctx, msg)
	}
	return m.apply(in, cmd)
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
	case openAudit:
		return tea.Batch(cmd, m.audit.show(m.ctx, m.eventsFor(in.pool), m.namespaceOf(in.pool), in.pool, m.title(in.pool)))
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
		filtering := m.screen == screenMembers && m.members.filter.typing || m.screen == screenPools && m.table.filter.typing
		keys = m.shownKeys().helpFor(m.screen, filtering).short
	}
	return fitHelp(ctx, &m.help, keys)
}

func (m *Model) openMembers(pool engine.PoolRef) {
	if m.members.pool != pool {
		m.members.open(pool)
	}
	m.members.setData(m.pool(pool))
	m.screen = screenMembers
	m.layout()
}

// openDetail shows a member's details and starts loading its Events.
func (m *Model) openDetail(pool engine.PoolRef, member string) tea.Cmd {
	m.detail.open(pool, member)
	m.screen = screenDetail
	// The nodes may have changed since start (a virtual node came up).
	var nodes tea.Cmd
	if !m.side.noNodes {
		nodes = nodesCmd(m.ctx, m.opts.Nodes)
	}
	src := m.eventsFor(pool)
	if src == nil {
		return nodes
	}
	events := m.detail.ask(m.ctx, src, m.namespaceOf(pool), memberVersions(m.pool(pool), member), m.now)
	return tea.Batch(events, nodes)
}

// refreshEvents reads the open pane's Events again when its member changed
// (detailView.stale). The Events shown stay until the answer comes.
func (m *Model) refreshEvents() tea.Cmd {
	d := &m.detail
	if m.screen != screenDetail || !m.hasEvents() {
		return nil
	}
	cur := memberVersions(m.pool(d.pool), d.member)
	if !d.stale(cur, m.now) {
		return nil
	}
	return d.ask(m.ctx, m.eventsFor(d.pool), m.namespaceOf(d.pool), cur, m.now)
}

// openLogs shows the member's log and starts streaming it, or says why not.
func (m *Model) openLogs(pool engine.PoolRef, mm *engine.Member) tea.Cmd {
	if why := toolUnavailable(engine.ActionLogs, m.pool(pool), mm); why != "" {
		m.setNote(render.GlyphBad+" "+why, levelError)
		return nil
	}
	src := m.logsFor(pool)
	if src == nil {
		m.setNote(render.GlyphBad+" logs unavailable: no log connection", levelError)
		return nil
	}
	cmd := m.logs.open(m.ctx, src, m.st, pool, mm.Name, m.namespaceOf(pool), m.screen)
	m.screen = screenLogs
	return cmd
}

// namespaceOf is the namespace of the pool (the dashboard's when unknown).
func (m *Model) namespaceOf(pool engine.PoolRef) string {
	if m.opts.Fleet || pool.Namespace != "" {
		return pool.Namespace
	}
	return m.opts.Namespace
}

// The Events, logs and console of a pool are its cluster's in a fleet of
// clusters (Options.EventsIn, LogsIn, ConsoleIn), else the dashboard's.

// hasEvents reports whether the dashboard reads Events at all.
func (m *Model) hasEvents() bool { return m.opts.Events != nil || m.opts.EventsIn != nil }

// eventsFor is where the pool's Events are read (nil: nowhere).
func (m *Model) eventsFor(pool engine.PoolRef) EventSource {
	if m.opts.EventsIn != nil {
		return m.opts.EventsIn(pool.Context)
	}
	return m.opts.Events
}

// logsFor is where the pool's member logs are streamed from (nil: nowhere).
func (m *Model) logsFor(pool engine.PoolRef) LogSource {
	if m.opts.LogsIn != nil {
		return m.opts.LogsIn(pool.Context)
	}
	return m.opts.Logs
}

// consoleFor runs the pool's members' consoles (nil: no console).
func (m *Model) consoleFor(pool engine.PoolRef) ConsoleRunner {
	if m.opts.ConsoleIn != nil {
		return m.opts.ConsoleIn(pool.Context)
	}
	return m.opts.Console
}
