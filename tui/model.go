package tui

import (
	"context"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// screen is what the body shows.
type screen int

const (
	screenPools screen = iota
	screenMembers
	screenDetail
	screenWall
	screenLogs // a member's container log (logs_view.go)
)

// Model is the root model. It routes messages to the views (route.go), owns
// the data (the snapshot, the connection state, the running actions) and
// the overlays (a dialog, the help, the action log pane), and composes the
// views' drawings; the views draw every row.
type Model struct {
	ctx  context.Context
	opts Options
	st   themes.Styles
	keys keyMap
	help help.Model
	spin spinner.Model

	width, height int
	now           time.Time

	// feed loads the pools and the connection's health (feed.go).
	feed   feed
	pools  []engine.PoolView // the pools shown: the feed's watched, narrowed (contexts.go)
	narrow narrowing         // `:ctx NAME`, and `:ns NAME` with several contexts
	seenNS map[string]bool   // every namespace seen, for the command line's completion
	// scopeGen counts `:ns` commands (an older one's answer is dropped).
	scopeGen int

	// The views: screen says which one is shown (route.go).
	screen  screen
	table   poolsView
	members membersView // and the pool's audit trail over it
	detail  detailView
	logs    logsView
	wall    wallView

	dialog   *dialogModel
	command  commandLine
	showHelp bool
	showLog  bool
	actlog   actionLog
	acts     actionState
	side     sideState

	// The last screen composed, and whether the last Update changed nothing
	// it shows (the program composes the screen after every message; the
	// change signals and the coalescing ticks of a steady churn are two in
	// three of them, and an idle dashboard's health reads one in two).
	// seen counts the messages that changed what it shows, lastSeen is
	// seen when lastView was composed: a screen composed before one of them
	// is never reused.
	lastView       string
	reuseView      bool
	seen, lastSeen int
	// trends is what the frames drew of the pools' trends, drawn again
	// only when the data or the clock's slot changes (trend.go).
	trends trendCache
}

func newModel(ctx context.Context, opts Options) *Model {
	opts.defaults()
	st := themes.NewStyles(opts.Theme, opts.Renderer)
	h := help.New()
	h.ShortSeparator = "  "
	h.Styles.ShortKey, h.Styles.FullKey = st.Key, st.Key
	h.Styles.ShortDesc, h.Styles.FullDesc = st.KeyDesc, st.KeyDesc
	h.Styles.ShortSeparator, h.Styles.FullSeparator, h.Styles.Ellipsis = st.Muted, st.Muted, st.Muted
	frames := spinner.Dot
	if opts.ASCII {
		frames = spinner.Line // no braille
	}
	sp := spinner.New(spinner.WithSpinner(frames), spinner.WithStyle(st.Info))
	now := opts.Now()
	m := &Model{
		ctx: ctx, opts: opts, st: st, keys: newKeyMap(opts.ReadOnly, opts.Keys), help: h, spin: sp,
		width: 80, height: 24, now: now,
		feed:    newFeed(opts.Data, opts.Now, opts.StopData, now),
		members: newMembersView(st),
		table:   newPoolsView(st),
		acts:    actionState{running: map[int]actionRequest{}},
		command: newCommandLine(st),
	}
	m.keys.Command.SetEnabled(opts.Scoper != nil || opts.Contexts)
	m.screen = firstScreen(opts)
	return m
}

// Init starts the clock, the first load and the change watch.
func (m *Model) Init() tea.Cmd {
	var cmds []tea.Cmd
	cmds = append(cmds, tickCmd(m.opts.Now))
	if start := m.feed.start(m.now); start != nil {
		cmds = append(cmds, start)
	}
	cmds = append(cmds, m.startCmds()...)
	return tea.Batch(cmds...)
}

// Update handles one message. It does no I/O and never reads the clock.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.reuseView = m.unseen(msg)
	if !m.reuseView {
		m.seen++
	}
	return m.update(msg)
}

// unseen reports whether a message changes nothing the screen shows: a
// change signal and the end of the coalescing delay only schedule a read
// (the data it reads is shown when it arrives, a dataMsg); the health read
// on each tick mostly answers what the model has already (the tick just
// drew the data's age).
func (m *Model) unseen(msg tea.Msg) bool {
	switch msg := msg.(type) {
	case changedMsg, rebuildMsg:
		return true
	case healthMsg:
		return m.feed.health.same(msg.health) && (msg.contexts == nil || sameContexts(m.feed.contexts, msg.contexts))
	}
	return false
}

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.Width = msg.Width
		m.layout()
		return m, nil
	case tickMsg:
		m.now = time.Time(msg)
		m.feed.tickLive(m.now)
		cmds := []tea.Cmd{tickCmd(m.opts.Now), healthCmd(m.feed.src), m.refresh()}
		if poll := m.feed.tick(m.now); poll != nil {
			cmds = append(cmds, poll)
		}
		return m, tea.Batch(cmds...)
	case changedMsg:
		return m, m.feed.changed(msg, m.now)
	case rebuildMsg:
		return m, m.feed.rebuild(m.now)
	case scopeMsg:
		return m, m.applyScope(msg)
	case dataMsg:
		return m, m.takeData(msg)
	case eventsMsg:
		_, cmd := m.detail.update(m.viewCtx(), msg)
		return m, cmd
	case auditMsg:
		_, cmd := m.members.update(m.viewCtx(), msg)
		return m, cmd
	case nodesMsg, capsMsg, healthMsg:
		return m, m.updateSide(msg)
	case copiedMsg:
		if msg.err != nil {
			m.setNote(render.GlyphBad+" copy failed: "+msg.err.Error(), levelError)
		} else {
			m.setNote(render.GlyphOK+" copied "+msg.what+" to the clipboard", levelOK)
		}
		return m, nil
	case actionDoneMsg:
		delete(m.acts.running, msg.id)
		m.actlog.update(m.viewCtx(), msg)
		// An open audit trail reads the Event the action wrote.
		_, cmd := m.members.update(m.viewCtx(), msg)
		return m, cmd
	case spinner.TickMsg:
		if len(m.acts.running) == 0 {
			return m, nil
		}
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	case logOpenedMsg, logLinesMsg:
		_, cmd := m.logs.update(m.viewCtx(), msg)
		return m, cmd
	case tea.KeyMsg:
		cmd := m.handleKey(msg)
		if caps := m.askCaps(); caps != nil {
			cmd = tea.Batch(cmd, caps)
		}
		return m, cmd
	}
	return m, nil
}

// takeData applies a load's answer the feed accepts, then lets the feed
// schedule the next load; the open detail pane's Events and the current
// pool's capabilities follow the new data.
func (m *Model) takeData(msg dataMsg) tea.Cmd {
	if !m.feed.accept(msg) {
		return nil
	}
	m.applyData(msg)
	next := m.feed.settle(m.now)
	events := tea.Batch(m.refresh(), m.askCaps())
	if next != nil {
		return tea.Batch(next, events)
	}
	return events
}

// pool returns the pool with this ref (fleet.go), or nil.
func (m *Model) pool(ref engine.PoolRef) *engine.PoolView { return findPool(m.pools, ref) }

// layout recomputes the heights the views scroll within.
func (m *Model) layout() {
	h := m.bodyHeight()
	m.table.setHeight(h)
	m.members.setHeight(h)
}

// bodyHeight is the height between the header and the two footer lines.
func (m *Model) bodyHeight() int {
	h := m.height - 3
	if m.opts.Contexts {
		h-- // the contexts' states
	}
	if m.showLog {
		h -= logPaneHeight
	}
	return max(h, 3)
}

// viewCtx is what the views read for this message or frame, sized for the
// body.
func (m *Model) viewCtx() viewContext {
	f := &m.feed
	conn, level := f.health.connState(m.now, f.started, f.loaded)
	dataAt := f.health.lastSync
	if dataAt.IsZero() {
		dataAt = f.observedAt
	}
	kctx, ns := m.where()
	return viewContext{
		st: &m.st, keys: &m.keys, now: m.now, width: m.width, height: m.bodyHeight(),
		pools: m.pools, loaded: f.loaded, nodes: m.side.nodes,
		conn: conn, connLevel: level, dataAt: dataAt,
		kubeContext: kctx, namespace: ns, readOnly: m.opts.ReadOnly, demo: m.opts.Demo,
		readOnlyWhy: m.opts.ReadOnlyWhy, readOnlyContexts: m.opts.ReadOnlyContexts, wall: m.opts.Wall,
		hints: hintsFrom(&m.keys, m.canAct()), reach: m.reach(), fleet: m.opts.Fleet,
		contexts: m.opts.Contexts, contextStates: m.contextStates(),
		live: m.feed.live, liveTrend: m.feed.liveTrend, ascii: m.opts.ASCII,
		trends: &m.trends, trendGen: f.trendGen,
	}
}

// contextStates is each context's state at the model's time.
func (m *Model) contextStates() []contextState {
	if !m.opts.Contexts {
		return nil
	}
	out := make([]contextState, 0, len(m.feed.contexts))
	for _, h := range m.feed.contexts {
		out = append(out, stateOf(h, m.now))
	}
	return out
}

// View composes the screen: the header, the current view or an overlay,
// the action log pane, the status line and the help line.
func (m *Model) View() string {
	if m.reuseView && m.lastView != "" && m.lastSeen == m.seen {
		return m.lastView
	}
	m.lastView, m.lastSeen = m.compose(), m.seen
	if m.opts.ASCII {
		m.lastView = render.ASCII(m.lastView)
	}
	return m.lastView
}

func (m *Model) compose() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	ctx := m.viewCtx()
	if _, ok := m.shown().(fullScreen); ok && m.dialog == nil && !m.showHelp {
		full := ctx
		full.height = m.height - 1
		wall := m.shown().view(full)
		// The command line or a note takes the wall's last line (the
		// tiles keep their size).
		status := ""
		if m.command.open {
			status = m.command.view(ctx)
		} else if m.acts.note != "" {
			status = statusLine(ctx, &m.acts, &m.spin, &m.actlog)
		}
		if status != "" {
			wall = wall[:strings.LastIndexByte(wall, '\n')+1] + sanitize.Pad(status, m.width)
		}
		return wall + "\n" + m.helpLine(ctx)
	}
	var body string
	switch {
	case m.dialog != nil:
		body = m.placeCenter(m.dialog.view(ctx))
	case m.showHelp:
		body = m.placeCenter(helpOverlay(ctx, &m.help, m.shownKeys(), m.unavailableLines()))
	default:
		body = m.shown().view(ctx)
	}
	conn, level := ctx.conn, ctx.connLevel
	if m.feed.src == nil {
		conn, level = render.GlyphBad+" no data source", levelError
	}
	lines := []string{headerLine(ctx, conn, level)}
	if m.opts.Contexts {
		lines = append(lines, contextsLine(ctx))
	}
	lines = append(lines, fitBlock(body, m.width, ctx.height))
	if m.showLog {
		pane := ctx
		pane.height = logPaneHeight
		lines = append(lines, m.actlog.view(pane))
	}
	status := statusLine(ctx, &m.acts, &m.spin, &m.actlog)
	if m.command.open {
		status = m.command.view(ctx)
	}
	lines = append(lines, status, m.helpLine(ctx))
	return lipgloss.JoinVertical(lipgloss.Left, lines...)
}

// placeCenter centres an overlay in the body.
func (m *Model) placeCenter(s string) string {
	return lipgloss.Place(m.width, m.bodyHeight(), lipgloss.Center, lipgloss.Center, s)
}
