package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// capturing: the search is typed.
func (l *logsView) capturing() bool { return l.searching }

// about is the log's pool and member (nil when it is gone).
func (l *logsView) about(ctx viewContext) (engine.PoolRef, *engine.Member) {
	if v := ctx.pool(l.pool); v != nil {
		return l.pool, v.Member(l.member)
	}
	return l.pool, nil
}

// help is the log view's keys.
func (l *logsView) help(ctx viewContext) []key.Binding {
	k := ctx.keys
	return []key.Binding{k.Scroll, k.Follow, k.Previous, k.Wrap, k.Search, k.NextMatch, k.Back}
}

// update handles the stream's messages and the log view's keys (the
// global ones, q ? L, work too).
func (l *logsView) update(ctx viewContext, msg tea.Msg) (intent, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil, l.stream(msg)
	}
	if l.searching {
		return nil, l.updateSearch(ctx.keys, km, ctx.height-2)
	}
	k := ctx.keys
	page := max(ctx.height-2, 1)
	// Fast typing can deliver "/" and what follows in one message.
	if km.Type == tea.KeyRunes && len(km.Runes) > 1 && km.Runes[0] == '/' {
		l.searching = true
		cmd := l.search.Focus()
		l.search, _ = l.search.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: km.Runes[1:]})
		return nil, cmd
	}
	switch {
	case key.Matches(km, k.Back):
		if l.query != "" {
			l.query, l.matches, l.match = "", 0, -1
			l.search.SetValue("")
			return nil, nil
		}
		l.stop()
		return showScreen{l.back}, nil
	case key.Matches(km, k.Up):
		l.scroll(-1, page)
	case key.Matches(km, k.Down):
		l.scroll(1, page)
	case key.Matches(km, k.PageUp):
		l.scroll(-page, page)
	case key.Matches(km, k.PageDown):
		l.scroll(page, page)
	case key.Matches(km, k.Top):
		l.follow, l.top = false, l.buf.first
	case key.Matches(km, k.Bottom):
		l.follow = true
	case key.Matches(km, k.Follow):
		l.follow = !l.follow
		if !l.follow {
			l.top = max(l.buf.first, l.buf.end()-page)
		}
	case key.Matches(km, k.Wrap):
		l.wrap = !l.wrap
	case key.Matches(km, k.Previous):
		prev := !l.previous
		l.stop()
		*l = logsView{pool: l.pool, member: l.member, namespace: l.namespace, back: l.back, gen: l.gen, ctx: l.ctx, src: l.src,
			wrap: l.wrap, follow: true, previous: prev, match: -1, search: l.search, query: l.query}
		return nil, l.start()
	case key.Matches(km, k.Search):
		l.searching = true
		return nil, l.search.Focus()
	case key.Matches(km, k.NextMatch):
		l.jump(1, page)
	case key.Matches(km, k.PrevMatch):
		l.jump(-1, page)
	}
	return nil, nil
}

// scroll moves the view by d lines; reaching the end resumes following.
func (l *logsView) scroll(d, page int) {
	if l.follow {
		l.top = max(l.buf.first, l.buf.end()-page)
		l.follow = false
	}
	l.top = min(max(l.top+d, l.buf.first), max(l.buf.first, l.buf.end()-1))
	if d > 0 && l.top >= l.buf.end()-page {
		l.follow = true
	}
}

// updateSearch handles a key while the search is typed: ApplyFilter
// finds, Cancel stops typing.
func (l *logsView) updateSearch(k *keyMap, msg tea.KeyMsg, page int) tea.Cmd {
	switch {
	case key.Matches(msg, k.ApplyFilter):
		l.searching = false
		l.search.Blur()
		l.setQuery(l.search.Value())
		l.match = -1
		l.jump(-1, page) // the newest match
		return nil
	case key.Matches(msg, k.Cancel):
		l.searching = false
		l.search.Blur()
		return nil
	}
	var cmd tea.Cmd
	l.search, cmd = l.search.Update(msg)
	return cmd
}

func (l *logsView) setQuery(q string) {
	l.query = strings.ToLower(strings.TrimSpace(q))
	l.matches = 0
	if l.query == "" {
		return
	}
	for s := l.buf.first; s < l.buf.end(); s++ {
		if strings.Contains(strings.ToLower(l.buf.at(s)), l.query) {
			l.matches++
		}
	}
}

// jump moves to the next (dir 1) or previous (dir -1) matching line and
// shows it a third of the way down the page.
func (l *logsView) jump(dir, page int) {
	if l.query == "" || l.matches == 0 {
		return
	}
	from := l.match
	if from < 0 {
		from = l.buf.end()
		if dir > 0 {
			from = l.buf.first - 1
		}
	}
	for s := from + dir; s >= l.buf.first && s < l.buf.end(); s += dir {
		if strings.Contains(strings.ToLower(l.buf.at(s)), l.query) {
			l.match = s
			l.follow = false
			l.top = max(l.buf.first, min(s-page/3, l.buf.end()-page))
			return
		}
	}
}

// ordinal is the current match's number among the matches (1-based).
func (l *logsView) ordinal() int {
	if l.match < 0 {
		return 0
	}
	n := 0
	for s := l.buf.first; s <= l.match && s < l.buf.end(); s++ {
		if strings.Contains(strings.ToLower(l.buf.at(s)), l.query) {
			n++
		}
	}
	return n
}

// view renders the title line and the visible part of the log.
func (l *logsView) view(ctx viewContext) string {
	st := ctx.st
	h := ctx.height
	state := st.OK.Render(render.GlyphLive + " following")
	switch {
	case l.err != nil:
		state = st.Error.Render(render.GlyphBad + " " + sanitize.Sanitize(l.err.Error()))
	case l.ended:
		state = st.Muted.Render("stream ended")
	case !l.follow:
		state = st.Warn.Render("paused (G follows)")
	case !l.streaming:
		state = st.Muted.Render("connecting…")
	}
	parts := []string{engine.ContainerName}
	if l.previous {
		parts = append(parts, "previous container")
	}
	parts = append(parts, onOff("wrap", l.wrap), render.Plural(l.buf.n, "line", "lines"))
	if l.buf.dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d oldest dropped", l.buf.dropped))
	}
	title := " " + st.Accent.Render(sanitize.Sanitize(l.member)) + st.Muted.Render(" · "+strings.Join(parts, " · ")) + "  " + state
	right := ""
	switch {
	case l.searching:
		l.search.Width = 30
		right = l.search.View()
	case l.query != "":
		right = st.Muted.Render(fmt.Sprintf("/%s %d/%d", sanitize.Sanitize(l.query), l.ordinal(), l.matches))
	}
	lines := []string{spread(title, right, ctx.width)}
	rows := l.visualLines(st, ctx.width, h-1)
	lines = append(lines, rows...)
	if l.buf.n == 0 && l.err == nil {
		lines = append(lines, st.Muted.Render("  no log lines yet"))
	}
	return strings.Join(lines, "\n")
}

func onOff(name string, on bool) string {
	if on {
		return name + " on"
	}
	return name + " off"
}

// visualLines lays out the log for a window of rows: from the end when
// following, else from top. A line is wrapped or cut; a gutter marks the
// current match (▶) and other matching lines (•).
func (l *logsView) visualLines(st *themes.Styles, width, rows int) []string {
	textW := max(width-2, 1)
	layout := func(seq int) []string {
		s := l.buf.at(seq)
		var parts []string
		if l.wrap {
			parts = strings.Split(ansi.Wrap(s, textW, ""), "\n")
		} else {
			parts = []string{s}
		}
		gutter := " "
		if l.query != "" && strings.Contains(strings.ToLower(s), l.query) {
			gutter = "•"
			if seq == l.match {
				gutter = "▶"
			}
		}
		out := make([]string, len(parts))
		for i, p := range parts {
			g := gutter
			if i > 0 {
				g = " "
			}
			out[i] = g + " " + sanitize.Cut(highlight(st, p, l.query), textW)
		}
		return out
	}
	var out []string
	if l.follow {
		for seq := l.buf.end() - 1; seq >= l.buf.first && len(out) < rows; seq-- {
			out = append(layout(seq), out...)
		}
		if len(out) > rows {
			out = out[len(out)-rows:]
		}
		return out
	}
	for seq := max(l.top, l.buf.first); seq < l.buf.end() && len(out) < rows; seq++ {
		out = append(out, layout(seq)...)
	}
	if len(out) > rows {
		out = out[:rows]
	}
	return out
}

// highlight styles each case-insensitive occurrence of q in plain text s.
func highlight(st *themes.Styles, s, q string) string {
	if q == "" {
		return s
	}
	lower := strings.ToLower(s)
	if len(lower) != len(s) {
		return s // a case change altered byte offsets: no highlight
	}
	var b strings.Builder
	for {
		i := strings.Index(lower, q)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(st.Selected.Render(s[i : i+len(q)]))
		s, lower = s[i+len(q):], lower[i+len(q):]
	}
}
