package tui

import (
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// levelStyle maps a level onto a style.
func (m *Model) levelStyle(level int) lipgloss.Style {
	switch level {
	case levelOK:
		return m.st.OK
	case levelInfo:
		return m.st.Info
	case levelWarn:
		return m.st.Warn
	case levelError:
		return m.st.Error
	}
	return m.st.Text
}

// modeTag is [RW] or [READ-ONLY] (and DEMO for a simulated cluster).
func (m *Model) modeTag() string {
	tag := "[RW]"
	if m.opts.ReadOnly {
		tag = "[READ-ONLY]"
	}
	if m.opts.Demo {
		tag = "[DEMO] " + tag
	}
	return tag
}

// headerView is the top line: app, context, namespace, connection, mode.
func (m *Model) headerView() string {
	conn, level := m.health.connState(m.now, m.started, m.loaded)
	if m.opts.Data == nil {
		conn, level = glyphBad+" no data source", levelError
	}
	ctx, ns := clean(orWord(m.opts.Context, "(current)")), clean(orWord(m.opts.Namespace, "(default)"))
	left := " " + m.st.Accent.Render("ctpool-tui") + "  ctx: " + ctx + "  ns: " + ns + "   " + m.levelStyle(level).Render(clean(conn))
	right := m.st.Bold.Render(m.modeTag()) + m.st.Muted.Render(" ? help  q quit ")
	if ansi.StringWidth(left)+ansi.StringWidth(right) < m.width {
		return spread(left, right, m.width)
	}
	// Narrow: drop the labels and the keys (the help line has them); the
	// connection state is what must stay whole.
	right = m.st.Bold.Render(m.modeTag()) + " "
	left = " " + m.st.Accent.Render("ctpool-tui") + " " + ctx + "/" + ns + "  " + m.levelStyle(level).Render(clean(conn))
	return spread(left, right, m.width)
}

// statusView is the line above the help: running actions, or the last
// result, or a note.
func (m *Model) statusView() string {
	if n := len(m.acts.running); n > 0 {
		ids := make([]int, 0, n)
		for id := range m.acts.running {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		var names []string
		for _, id := range ids {
			names = append(names, m.acts.running[id].describe())
		}
		return cut(" "+m.spin.View()+" "+clean(strings.Join(names, ", "))+"…", m.width)
	}
	if m.acts.note != "" {
		return cut(" "+m.levelStyle(m.acts.noteLvl).Render(clean(m.acts.note)), m.width)
	}
	for i := len(m.acts.log) - 1; i >= 0; i-- {
		if e := m.acts.log[i]; e.done {
			return cut(" "+m.logLine(e), m.width)
		}
	}
	return ""
}

// logLine renders one action log entry.
func (m *Model) logLine(e logEntry) string {
	at := e.at.Format("15:04:05")
	switch {
	case !e.done:
		return m.st.Muted.Render(at) + " " + m.st.Info.Render(glyphSyncing+" "+clean(e.req.describe())+": running")
	case e.err != nil:
		return m.st.Muted.Render(at) + " " + m.st.Error.Render(glyphBad+" "+clean(e.req.describe())+": "+clean(e.err.Error()))
	}
	return m.st.Muted.Render(at) + " " + m.st.OK.Render(glyphOK+" "+clean(e.req.describe())+": "+clean(e.text))
}

// logView is the action log pane: the newest entries, wrapped to the width.
func (m *Model) logView(height int) string {
	lines := []string{m.st.ColumnHeader.Render(fmt.Sprintf(" ACTION LOG (%d since start) ", len(m.acts.log))) + m.st.Muted.Render(strings.Repeat("─", max(0, m.width-30)))}
	var body []string
	for i := len(m.acts.log) - 1; i >= 0 && len(body) < height-1; i-- {
		body = append(wrapStyled(m.logLine(m.acts.log[i]), m.width-1), body...)
	}
	if len(body) > height-1 {
		body = body[len(body)-(height-1):]
	}
	for _, l := range body {
		lines = append(lines, " "+l)
	}
	if len(m.acts.log) == 0 {
		lines = append(lines, m.st.Muted.Render(" no actions yet"))
	}
	return fitBlock(strings.Join(lines, "\n"), m.width, height)
}

// helpLine is the bottom line: the keys of the current screen or dialog.
func (m *Model) helpLine() string {
	var keys []key.Binding
	switch {
	case m.dialog != nil && m.dialog.hasInput:
		keys = []key.Binding{m.keys.Confirm, m.keys.Cancel}
	case m.dialog != nil:
		keys = []key.Binding{m.keys.NextButton, m.keys.Confirm, m.keys.Cancel}
	case m.showHelp:
		keys = []key.Binding{withHelp(m.keys.Back, "close help"), m.keys.Quit}
	default:
		shown := m.shownKeys()
		filtering := m.screen == screenMembers && m.members.filter.typing || m.screen == screenPools && m.pools.filter.typing
		keys = shown.helpFor(m.screen, filtering).short
	}
	return m.fitHelp(keys)
}

// fitHelp renders a short help line within the width: when it is too long,
// keys are left out from the end, never "? help" and "q quit", so that the
// way to every other key stays on screen.
func (m *Model) fitHelp(keys []key.Binding) string {
	var body, tail []key.Binding
	for _, k := range keys {
		if k.Help() == m.keys.Help.Help() || k.Help() == m.keys.Quit.Help() {
			tail = append(tail, k)
		} else {
			body = append(body, k)
		}
	}
	h := m.help
	h.Width = 0 // measured here, not cut by the help model
	if line := " " + h.ShortHelpView(append(body[:len(body):len(body)], tail...)); lipgloss.Width(line) <= m.width {
		return line // the common case: everything fits
	}
	// Measure each key once and keep the longest prefix of body that fits
	// beside the tail.
	sep := lipgloss.Width(h.ShortSeparator)
	width := func(ks []key.Binding) (w, shown int) {
		for _, k := range ks {
			if kw := lipgloss.Width(h.ShortHelpView([]key.Binding{k})); kw > 0 {
				w += kw
				shown++
			}
		}
		return w, shown
	}
	used, items := width(tail)
	n := 0
	for ; n < len(body); n++ {
		kw, shown := width(body[n : n+1])
		if shown == 0 {
			continue
		}
		if 1+used+kw+sep*items > m.width {
			break
		}
		used += kw
		items++
	}
	if n > 0 {
		return " " + h.ShortHelpView(append(body[:n:n], tail...))
	}
	return cut(" "+m.help.ShortHelpView(keys), m.width)
}

// helpView is the full help overlay, with the legend of glyphs.
func (m *Model) helpView() string {
	full := strings.Split(m.help.FullHelpView(m.shownKeys().FullHelp()), "\n")
	if un := m.unavailableLines(); len(un) > 0 {
		full = append(full, "", m.st.ColumnHeader.Render("Unavailable"))
		full = append(full, un...)
	}
	full = append(full, "",
		m.st.ColumnHeader.Render("Legend"),
		glyphLive+" live  "+glyphSyncing+" syncing/running  "+glyphBad+" error, expired, disconnected",
		glyphWarn+" exhausted, low, expiring soon  "+glyphOK+" no errors",
		glyphDrift+" drift  "+glyphMaint+" maintenance  "+glyphAbove+" above size  "+glyphProblem+" problems")
	if m.opts.ReadOnly {
		full = append(full, "", m.st.Bold.Render("READ-ONLY: no action can be taken from this screen."))
	}
	w := 4
	for _, l := range full {
		w = max(w, ansi.StringWidth(l)+4)
	}
	return titledBox("Keys", full, min(w, m.width-2), m.st.Muted)
}

// titledBox draws a box of width cells with the title in its top border.
func titledBox(title string, body []string, width int, border lipgloss.Style) string {
	inner := max(width-4, 1)
	title = cut(title, max(inner-1, 1))
	top := "┌ " + title + " " + strings.Repeat("─", max(0, width-ansi.StringWidth(title)-4)) + "┐"
	lines := []string{border.Render(top)}
	for _, l := range body {
		lines = append(lines, border.Render("│")+" "+pad(l, inner)+" "+border.Render("│"))
	}
	lines = append(lines, border.Render("└"+strings.Repeat("─", max(0, width-2))+"┘"))
	return strings.Join(lines, "\n")
}

// wrapStyled wraps a rendered line (which may hold styling) to width cells.
func wrapStyled(s string, width int) []string {
	if width <= 0 {
		return nil
	}
	return strings.Split(ansi.Wrap(s, width, " "), "\n")
}
