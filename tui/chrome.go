package tui

import (
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// modeTag is [RW] or [READ-ONLY] (and DEMO for a simulated cluster), with
// where read-only comes from when it is not --readonly.
func modeTag(c viewContext) string {
	return demoTag(c) + "[" + modeWords(c, true) + "]"
}

// demoTag is "[DEMO] " for a simulated cluster.
func demoTag(c viewContext) string {
	if c.demo {
		return "[DEMO] "
	}
	return ""
}

// modeWords is RW or READ-ONLY, and (why) where read-only mode comes from
// when the settings set it: "READ-ONLY (config: context prod)", or with
// several contexts of which some are read-only "RW · read-only (config:
// context prod)".
func modeWords(c viewContext, why bool) string {
	tag := "RW"
	switch {
	case c.readOnly:
		tag = "READ-ONLY"
		if why && c.readOnlyWhy != "" {
			tag += " (" + sanitize.Sanitize(c.readOnlyWhy) + ")"
		}
	case len(c.readOnlyContexts) > 0 && why:
		tag += " · read-only (config: " + readOnlyContextsWord(c.readOnlyContexts) + ")"
	}
	return tag
}

// readOnlyContextsWord names contexts: "context prod", "contexts a, b".
func readOnlyContextsWord(names []string) string {
	if len(names) == 1 {
		return "context " + sanitize.Sanitize(names[0])
	}
	return "contexts " + sanitize.Sanitize(strings.Join(names, ", "))
}

// headerLine is the top line: app, context, namespace, connection (conn
// at level), mode.
func headerLine(c viewContext, conn string, level int) string {
	st := c.st
	kctx, ns := sanitize.Sanitize(render.OrWord(c.kubeContext, "(current)")), sanitize.Sanitize(render.OrWord(c.namespace, "(default)"))
	left := " " + st.Accent.Render("ctpool-tui") + "  ctx: " + kctx + "  ns: " + ns + "   " + c.level(level).Render(sanitize.Sanitize(conn))
	right := st.Bold.Render(modeTag(c)) + st.Muted.Render(" ? help  q quit ")
	if ansi.StringWidth(left)+ansi.StringWidth(right) < c.width {
		return spread(left, right, c.width)
	}
	// Narrow: drop the labels, the keys (the help line has them) and
	// where read-only comes from; the connection state is what must stay
	// whole.
	right = st.Bold.Render(demoTag(c)+"["+modeWords(c, false)+"]") + " "
	left = " " + st.Accent.Render("ctpool-tui") + " " + kctx + "/" + ns + "  " + c.level(level).Render(sanitize.Sanitize(conn))
	return spread(left, right, c.width)
}

// statusLine is the line above the help: the running actions (with the
// spinner), or the note, or the last finished action.
func statusLine(c viewContext, acts *actionState, spin *spinner.Model, log *actionLog) string {
	if n := len(acts.running); n > 0 {
		ids := make([]int, 0, n)
		for id := range acts.running {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		var names []string
		for _, id := range ids {
			names = append(names, acts.running[id].describe())
		}
		return sanitize.Cut(" "+spin.View()+" "+sanitize.Sanitize(strings.Join(names, ", "))+"…", c.width)
	}
	if acts.note != "" {
		return sanitize.Cut(" "+c.level(acts.noteLvl).Render(sanitize.Sanitize(acts.note)), c.width)
	}
	if e, ok := log.lastDone(); ok {
		return sanitize.Cut(" "+log.line(c, e), c.width)
	}
	return ""
}

// fitHelp renders a short help line within the width: when it is too long,
// keys are left out from the end, never "? help" and "q quit", so that the
// way to every other key stays on screen.
func fitHelp(c viewContext, full *help.Model, keys []key.Binding) string {
	var body, tail []key.Binding
	for _, k := range keys {
		if k.Help() == c.keys.Help.Help() || k.Help() == c.keys.Quit.Help() {
			tail = append(tail, k)
		} else {
			body = append(body, k)
		}
	}
	h := *full
	h.Width = 0 // measured here, not cut by the help model
	if line := " " + h.ShortHelpView(append(body[:len(body):len(body)], tail...)); lipgloss.Width(line) <= c.width {
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
		if 1+used+kw+sep*items > c.width {
			break
		}
		used += kw
		items++
	}
	if n > 0 {
		return " " + h.ShortHelpView(append(body[:n:n], tail...))
	}
	return sanitize.Cut(" "+full.ShortHelpView(keys), c.width)
}

// helpOverlay is the full help of shown (the keymap as the help shows it),
// the unavailable actions and the legend of glyphs, in a box.
func helpOverlay(c viewContext, h *help.Model, shown keyMap, unavailable []string) string {
	st := c.st
	full := strings.Split(h.FullHelpView(shown.FullHelp()), "\n")
	if len(unavailable) > 0 {
		full = append(full, "", st.ColumnHeader.Render("Unavailable"))
		full = append(full, unavailable...)
	}
	full = append(full, "",
		st.ColumnHeader.Render("Legend"),
		render.GlyphLive+" live  "+render.GlyphSyncing+" syncing/running  "+render.GlyphBad+" error, expired, disconnected",
		render.GlyphWarn+" exhausted, low, expiring soon  "+render.GlyphOK+" no errors",
		render.GlyphDrift+" drift  "+render.GlyphMaint+" maintenance  "+render.GlyphAbove+" above size  "+render.GlyphBad+" node down  "+render.GlyphProblem+" problems")
	switch {
	case c.readOnly && c.readOnlyWhy != "":
		full = append(full, "", st.Bold.Render("READ-ONLY ("+sanitize.Sanitize(c.readOnlyWhy)+"): no action can be taken from this screen."))
	case c.readOnly:
		full = append(full, "", st.Bold.Render("READ-ONLY: no action can be taken from this screen."))
	case len(c.readOnlyContexts) > 0:
		full = append(full, "", st.Bold.Render("READ-ONLY (config): "+readOnlyContextsWord(c.readOnlyContexts)+": no action is taken on their pools."))
	}
	w := 4
	for _, l := range full {
		w = max(w, ansi.StringWidth(l)+4)
	}
	return titledBox("Keys", full, min(w, c.width-2), st.Muted)
}

// titledBox draws a box of width cells with the title in its top border.
func titledBox(title string, body []string, width int, border lipgloss.Style) string {
	inner := max(width-4, 1)
	title = sanitize.Cut(title, max(inner-1, 1))
	top := "┌ " + title + " " + strings.Repeat("─", max(0, width-ansi.StringWidth(title)-4)) + "┐"
	lines := []string{border.Render(top)}
	for _, l := range body {
		lines = append(lines, border.Render("│")+" "+sanitize.Pad(l, inner)+" "+border.Render("│"))
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
