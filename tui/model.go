package tui

import (
	"context"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// screen is what the body shows.
type screen int

const (
	screenPools screen = iota
	screenMembers
	screenDetail
	screenWall
	screenLogs // a member's container log (logs.go)
)

// Model is the root model: it owns the data, the layout and the overlays,
// and composes the views.
type Model struct {
	ctx  context.Context
	opts Options
	st   themes.Styles
	keys keyMap
	help help.Model
	spin spinner.Model

	width, height int
	now, started  time.Time

	views      []engine.PoolView
	loaded     bool
	observedAt time.Time
	health     health

	// Coalescing: armed while a waitChangeCmd runs, pending while a rebuild
	// is scheduled or loading, dirty when a change arrived meanwhile.
	armed, pending, dirty bool
	rebuilds              int

	screen   screen
	pools    poolsModel
	members  membersModel
	detail   detailModel
	logs     logsModel
	dialog   *dialogModel
	showHelp bool
	showLog  bool
	acts     actionState
	side     sideState
}

func newModel(ctx context.Context, opts Options) *Model {
	opts.defaults()
	st := themes.NewStyles(opts.Theme, opts.Renderer)
	h := help.New()
	h.ShortSeparator = "  "
	h.Styles.ShortKey, h.Styles.FullKey = st.Key, st.Key
	h.Styles.ShortDesc, h.Styles.FullDesc = st.KeyDesc, st.KeyDesc
	h.Styles.ShortSeparator, h.Styles.FullSeparator, h.Styles.Ellipsis = st.Muted, st.Muted, st.Muted
	sp := spinner.New(spinner.WithSpinner(spinner.Dot), spinner.WithStyle(st.Info))
	now := opts.Now()
	m := &Model{
		ctx: ctx, opts: opts, st: st, keys: newKeyMap(opts.ReadOnly), help: h, spin: sp,
		width: 80, height: 24, now: now, started: now,
		members: newMembersModel(st),
		pools:   newPoolsModel(st),
		acts:    actionState{running: map[int]actionRequest{}},
	}
	if opts.ReadOnly {
		m.screen = screenWall
	}
	return m
}

// Init starts the clock, the first load and the change watch.
func (m *Model) Init() tea.Cmd {
	var cmds []tea.Cmd
	cmds = append(cmds, tickCmd(m.opts.Now))
	if m.opts.Data != nil {
		m.pending, m.armed = true, true
		cmds = append(cmds, loadCmd(m.opts.Data, m.opts.Now), waitChangeCmd(m.opts.Data.Changed()))
	}
	cmds = append(cmds, m.startCmds()...)
	return tea.Batch(cmds...)
}

// Update handles one message. It does no I/O and never reads the clock.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.Width = msg.Width
		m.layout()
		return m, nil
	case tickMsg:
		m.now = time.Time(msg)
		cmds := []tea.Cmd{tickCmd(m.opts.Now), healthCmd(m.opts.Data), m.refreshEvents()}
		// Until the first sync, poll: an empty namespace sends no signal.
		if (!m.health.synced || !m.loaded) && !m.pending && m.opts.Data != nil {
			m.pending = true
			cmds = append(cmds, loadCmd(m.opts.Data, m.opts.Now))
		}
		return m, tea.Batch(cmds...)
	case changedMsg:
		m.armed = false
		if m.pending {
			m.dirty = true
			return m, nil
		}
		m.pending = true
		return m, coalesceCmd()
	case rebuildMsg:
		cmds := []tea.Cmd{loadCmd(m.opts.Data, m.opts.Now)}
		if !m.armed && m.opts.Data != nil {
			m.armed = true
			cmds = append(cmds, waitChangeCmd(m.opts.Data.Changed()))
		}
		return m, tea.Batch(cmds...)
	case dataMsg:
		m.applyData(msg)
		m.pending = false
		events := m.refreshEvents()
		if m.dirty || !m.armed {
			m.dirty = false
			m.pending = true
			return m, tea.Batch(coalesceCmd(), events)
		}
		return m, events
	case eventsMsg:
		m.detail.setEvents(msg)
		return m, nil
	case nodesMsg, capsMsg, healthMsg, auditMsg:
		return m, m.updateSide(msg)
	case actionDoneMsg:
		m.finishAction(msg)
		return m, m.refreshAudit()
	case spinner.TickMsg:
		if len(m.acts.running) == 0 {
			return m, nil
		}
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	case logOpenedMsg, logLinesMsg:
		return m, m.updateLogs(msg)
	case tea.KeyMsg:
		return m, m.handleKey(msg)
	}
	return m, nil
}

// applyData takes a new set of observed pools and re-derives every view's
// rows (sorting and filtering happen here, not per frame).
func (m *Model) applyData(msg dataMsg) {
	m.views, m.health, m.observedAt, m.loaded = msg.views, msg.health, msg.at, true
	if m.now.Before(msg.at) {
		m.now = msg.at
	}
	m.rebuilds++
	m.pools.sync(m.views)
	if m.members.pool != "" {
		m.members.setData(m.view(m.members.pool))
	}
	m.layout()
}

// view returns the named pool, or nil.
func (m *Model) view(pool string) *engine.PoolView {
	for i := range m.views {
		if m.views[i].Name == pool {
			return &m.views[i]
		}
	}
	return nil
}

// layout recomputes the heights the views scroll within.
func (m *Model) layout() {
	h := m.bodyHeight()
	m.pools.setHeight(h)
	m.members.setSize(m.width, h)
}

// bodyHeight is the height between the header and the two footer lines.
func (m *Model) bodyHeight() int {
	h := m.height - 3
	if m.showLog {
		h -= logPaneHeight
	}
	return max(h, 3)
}

func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	if msg.String() == "ctrl+c" {
		return tea.Quit
	}
	m.acts.note = "" // a note lasts until the next key
	// Fast typing can deliver "/" and what follows in one message.
	if m.dialog == nil && !m.showHelp && msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && msg.Runes[0] == '/' {
		rest := tea.KeyMsg{Type: tea.KeyRunes, Runes: msg.Runes[1:]}
		switch {
		case m.screen == screenMembers && !m.members.filter.typing:
			cmd := m.members.startFilter()
			m.members.updateFilter(rest)
			return cmd
		case m.screen == screenPools && !m.pools.filter.typing:
			cmd := m.pools.startFilter()
			m.pools.updateFilter(rest)
			return cmd
		}
	}
	if m.dialog != nil {
		return m.updateDialog(msg)
	}
	if m.showHelp {
		if key.Matches(msg, m.keys.Help, m.keys.Back) {
			m.showHelp = false
		} else if key.Matches(msg, m.keys.Quit) {
			return tea.Quit
		}
		return nil
	}
	if m.screen == screenMembers && m.members.filter.typing {
		m.members.updateFilter(msg)
		return nil
	}
	if m.screen == screenPools && m.pools.filter.typing {
		m.pools.updateFilter(msg)
		return nil
	}
	if m.screen == screenLogs && m.logs.searching {
		return m.logs.updateSearch(msg, m.bodyHeight()-2)
	}
	switch {
	case key.Matches(msg, m.keys.Quit):
		return tea.Quit
	case key.Matches(msg, m.keys.Help):
		m.showHelp = true
		return nil
	case key.Matches(msg, m.keys.Log):
		m.showLog = !m.showLog
		m.layout()
		return nil
	case key.Matches(msg, m.keys.Wall) && m.screen != screenDetail && m.screen != screenLogs:
		if m.screen == screenWall {
			m.screen = screenPools
		} else {
			m.screen = screenWall
		}
		return nil
	}
	switch m.screen {
	case screenPools:
		return m.poolsKey(msg)
	case screenMembers:
		return m.membersKey(msg)
	case screenDetail:
		return m.detailKey(msg)
	case screenLogs:
		return m.logsKey(msg)
	}
	return nil
}

func (m *Model) poolsKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Up):
		m.pools.move(-1)
	case key.Matches(msg, k.Down):
		m.pools.move(1)
	case key.Matches(msg, k.PageUp):
		m.pools.move(-m.pools.height)
	case key.Matches(msg, k.PageDown):
		m.pools.move(m.pools.height)
	case key.Matches(msg, k.Top):
		m.pools.move(-len(m.views))
	case key.Matches(msg, k.Bottom):
		m.pools.move(len(m.views))
	case key.Matches(msg, k.Filter):
		return m.pools.startFilter()
	case key.Matches(msg, k.Back) && m.pools.filter.Value() != "":
		m.pools.clearFilter()
	case key.Matches(msg, k.Open):
		if p := m.pools.selected; p != "" {
			m.openMembers(p)
		}
	default:
		return m.actionKey(msg, m.pools.selected, nil)
	}
	return nil
}

func (m *Model) openMembers(pool string) {
	if m.members.pool != pool {
		m.members.open(pool)
	}
	m.members.setData(m.view(pool))
	m.screen = screenMembers
	m.layout()
}

func (m *Model) membersKey(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Up):
		m.members.move(-1)
	case key.Matches(msg, k.Down):
		m.members.move(1)
	case key.Matches(msg, k.PageUp):
		m.members.move(-m.members.visible())
	case key.Matches(msg, k.PageDown):
		m.members.move(m.members.visible())
	case key.Matches(msg, k.Top):
		m.members.move(-len(m.members.rows))
	case key.Matches(msg, k.Bottom):
		m.members.move(len(m.members.rows))
	case key.Matches(msg, k.Filter):
		return m.members.startFilter()
	case key.Matches(msg, k.Sort):
		m.members.cycleSort()
	case key.Matches(msg, k.Audit):
		return m.toggleAudit()
	case m.side.audit.open && key.Matches(msg, k.Back):
		m.side.audit.open = false
	case key.Matches(msg, k.Back):
		if m.members.filter.Value() != "" {
			m.members.clearFilter()
		} else {
			m.screen = screenPools
		}
	case key.Matches(msg, k.Open):
		if mem := m.members.current(); mem != nil {
			return m.openDetail(m.members.pool, mem.Name)
		}
	default:
		return m.actionKey(msg, m.members.pool, m.members.current())
	}
	return nil
}

func (m *Model) detailKey(msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, m.keys.Back) {
		m.screen = screenMembers
		return nil
	}
	return m.actionKey(msg, m.detail.pool, m.members.lookup(m.detail.member))
}

// View renders the screen. Only visible rows are rendered.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	var body string
	switch {
	case m.dialog != nil:
		body = m.placeCenter(m.dialog.view(m.st, m.width))
	case m.showHelp:
		body = m.placeCenter(m.helpView())
	case m.screen == screenWall:
		return m.wallView()
	case m.screen == screenPools:
		body = m.poolsView()
	case m.screen == screenMembers && m.side.audit.open:
		body = m.auditView()
	case m.screen == screenMembers:
		body = m.membersView()
	case m.screen == screenDetail:
		body = m.detailView()
	case m.screen == screenLogs:
		body = m.logsView()
	}
	lines := []string{m.headerView(), fitBlock(body, m.width, m.bodyHeight())}
	if m.showLog {
		lines = append(lines, m.logView(logPaneHeight))
	}
	lines = append(lines, m.statusView(), m.helpLine())
	return lipgloss.JoinVertical(lipgloss.Left, lines...)
}

// placeCenter centres an overlay in the body.
func (m *Model) placeCenter(s string) string {
	return lipgloss.Place(m.width, m.bodyHeight(), lipgloss.Center, lipgloss.Center, s)
}
