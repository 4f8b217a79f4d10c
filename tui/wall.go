package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// tileStatus is a pool's word on the wall, and its level.
func tileStatus(v *engine.PoolView) (string, int) {
	switch {
	case !v.Defined:
		return "NO DEFINITION", levelError
	case len(v.Problems) > 0:
		return "PROBLEM", levelError
	case v.Status.Exhausted:
		return "EXHAUSTED", levelError
	case len(v.Recorded.Errors) > 0:
		return "ERRORS", levelError
	case v.Spec.Size == 0:
		return "EMPTY", levelNone
	case isLow(v):
		return "LOW", levelWarn
	}
	return "OK", levelOK
}

// bigDigits renders a number three rows tall.
func bigDigits(n int) [3]string {
	glyph := func(d rune) [3]string {
		switch d {
		case '0':
			return [3]string{"█▀█", "█ █", "▀▀▀"}
		case '1':
			return [3]string{"▀█ ", " █ ", "▀▀▀"}
		case '2':
			return [3]string{"▀▀█", "█▀▀", "▀▀▀"}
		case '3':
			return [3]string{"▀▀█", " ▀█", "▀▀▀"}
		case '4':
			return [3]string{"█ █", "▀▀█", "  ▀"}
		case '5':
			return [3]string{"█▀▀", "▀▀█", "▀▀▀"}
		case '6':
			return [3]string{"█▀▀", "█▀█", "▀▀▀"}
		case '7':
			return [3]string{"▀▀█", "  █", "  ▀"}
		case '8':
			return [3]string{"█▀█", "█▀█", "▀▀▀"}
		case '9':
			return [3]string{"█▀█", "▀▀█", "▀▀▀"}
		}
		return [3]string{"   ", "   ", "   "}
	}
	var out [3]string
	for i, d := range fmt.Sprint(n) {
		g := glyph(d)
		for r := range out {
			if i > 0 {
				out[r] += " "
			}
			out[r] += g[r]
		}
	}
	return out
}

// gauge is a bar of width cells, filled for part of whole.
func gauge(part, whole, width int) string {
	if width <= 0 {
		return ""
	}
	filled := 0
	if whole > 0 {
		filled = min(width, (part*width+whole-1)/whole)
	}
	return strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
}

// tile renders one pool tile of width cells; large tiles show the free
// count in big digits and a gauge.
func tile(ctx viewContext, v *engine.PoolView, width int, large bool) []string {
	word, level := tileStatus(v)
	style := ctx.level(level)
	inner := width - 4
	st := v.Status
	var body []string
	free := fmt.Sprintf("%d free", st.Free)
	if large {
		big := bigDigits(st.Free)
		for i, row := range big {
			right := ""
			switch i {
			case 0:
				right = "free"
			case 2:
				right = word
			}
			body = append(body, style.Render(spread(" "+row, right, inner)))
		}
	} else {
		body = append(body, style.Render(spread(" "+free, word, inner)))
	}
	body = append(body, fmt.Sprintf(" %d/%d claimed", st.Claimed, v.Spec.Size))
	if large {
		body = append(body, " "+gauge(st.Claimed, v.Spec.Size, inner-2))
		var extra []string
		if st.Unschedulable > 0 {
			extra = append(extra, fmt.Sprintf("%d unsched", st.Unschedulable))
		}
		if st.Failed > 0 {
			extra = append(extra, fmt.Sprintf("%d failed", st.Failed))
		}
		if st.Drifted > 0 {
			extra = append(extra, fmt.Sprintf("%s %d drift", glyphDrift, st.Drifted))
		}
		body = append(body, " "+strings.Join(extra, " · "))
	} else if st.Unschedulable+st.Failed > 0 {
		body = append(body, fmt.Sprintf(" %d unsched · %d failed", st.Unschedulable, st.Failed))
	} else {
		body = append(body, "")
	}
	border := ctx.st.Muted
	if level >= levelWarn {
		border = style
	}
	return strings.Split(titledBox(clean(ctx.key(v)), body, width, border), "\n")
}

// wallView is the read-only wall display: tiles that reflow to the width,
// then the members and pools that need attention. It has no keys of its own
// (tab, ? and q are the root's) and draws the whole screen but the help line.
type wallView struct{}

func (wallView) update(viewContext, tea.Msg) (intent, tea.Cmd) { return nil, nil }

// view renders the header, the tiles and NEEDS ATTENTION in ctx.height lines.
func (wallView) view(ctx viewContext) string {
	st := ctx.st
	var out []string
	left := " " + st.Accent.Render("VDI POOLS") + " · " + clean(orWord(ctx.namespace, "(default)")) + " · " + clean(orWord(ctx.kubeContext, "(current)"))
	conn, level := ctx.conn, ctx.connLevel
	age := ""
	if level == levelOK {
		age = " · data " + short(ctx.now.Sub(ctx.dataAt)) + " old"
		conn = glyphLive + " live"
	}
	mode := "RW"
	if ctx.readOnly {
		mode = "READ-ONLY"
	}
	if ctx.demo {
		mode = "DEMO · " + mode
	}
	right := ctx.now.Format("15:04:05") + " · " + ctx.level(level).Render(clean(conn)) + age + " · " + st.Bold.Render(mode) + " "
	out = append(out, spread(left, right, ctx.width))

	room := ctx.height - 1 // the header
	if !ctx.loaded {
		out = append(out, st.Muted.Render(" waiting for the first snapshot…"))
		return fitBlock(strings.Join(out, "\n"), ctx.width, ctx.height)
	}

	views := ctx.views
	large := ctx.width >= 120 && ctx.height+1 >= 36
	tileH := 6
	minW := 22
	if large {
		tileH, minW = 9, 30
	}
	cols := max(1, min(len(views), (ctx.width-1)/(minW+1)))
	tileW := min((ctx.width-1)/cols-1, 64)
	rowsFit := max(1, (room-4)/tileH) // leave room for the attention list
	shown := min(len(views), rowsFit*cols)
	for start := 0; start < shown; start += cols {
		var tiles [][]string
		for i := start; i < min(start+cols, shown); i++ {
			tiles = append(tiles, tile(ctx, &views[i], tileW, large))
		}
		for r := 0; r < tileH-1 && r < len(tiles[0]); r++ {
			line := ""
			for _, t := range tiles {
				if r < len(t) {
					line += " " + t[r]
				}
			}
			out = append(out, line)
		}
	}
	if shown < len(views) {
		out = append(out, st.Muted.Render(fmt.Sprintf(" … %d more pools (tab shows the table)", len(views)-shown)))
	}
	if len(views) == 0 {
		out = append(out, st.Muted.Render(" no pools in this namespace"))
	}
	out = append(out, "")
	items := attention(views, ctx.now)
	left2 := room - len(out) - 1
	title := st.Bold.Render(" NEEDS ATTENTION")
	if len(items) == 0 {
		out = append(out, title+st.OK.Render("  "+glyphOK+" nothing"))
	} else {
		out = append(out, title+st.Muted.Render(fmt.Sprintf("  (%d)", len(items))))
		nameW := 8
		for _, it := range items {
			nameW = max(nameW, min(ansi.StringWidth(clean(it.who)), 24))
		}
		for i, it := range items {
			if i >= left2-1 && len(items) > left2 {
				out = append(out, st.Muted.Render(fmt.Sprintf(" … and %d more", len(items)-i)))
				break
			}
			line := fmt.Sprintf(" %s %s  %s", it.glyph, fitName(it.who, nameW), clean(it.what))
			out = append(out, cut(ctx.level(it.level).Render(line), ctx.width))
		}
	}
	return fitBlock(strings.Join(out, "\n"), ctx.width, ctx.height)
}

func fitName(s string, w int) string {
	s = clean(s)
	if ansi.StringWidth(s) > w {
		return ansi.Truncate(s, w, glyphEllipsis)
	}
	return s + strings.Repeat(" ", w-ansi.StringWidth(s))
}

// attnItem is one line of NEEDS ATTENTION.
type attnItem struct {
	level      int
	glyph, who string
	what       string
}

// attention lists what an operator should look at, worst first.
func attention(views []engine.PoolView, now time.Time) []attnItem {
	var items []attnItem
	for i := range views {
		v := &views[i]
		for _, p := range v.Problems {
			items = append(items, attnItem{levelError, glyphBad, v.Name, p})
		}
		for _, e := range v.Recorded.Errors {
			items = append(items, attnItem{levelError, glyphBad, v.Name, "last reconcile: " + e})
		}
		if v.Status.Exhausted {
			items = append(items, attnItem{levelError, glyphWarn, v.Name, fmt.Sprintf("EXHAUSTED: 0 free of %d", v.Spec.Size)})
		}
		for j := range v.Members {
			mm := &v.Members[j]
			switch mm.State {
			case engine.StateFailed:
				items = append(items, attnItem{levelError, glyphBad, mm.Name, "Failed  " + mm.Message})
			case engine.StateUnschedulable:
				items = append(items, attnItem{levelWarn, glyphWarn, mm.Name, "Unschedulable  " + mm.Message})
			}
			if mm.Claimed && mm.Claim != nil && (mm.Claim.Expires.IsZero() || !now.Before(mm.Claim.Expires)) {
				items = append(items, attnItem{levelWarn, glyphBad, mm.Name,
					fmt.Sprintf("claim expired %s ago (%s)", short(now.Sub(mm.Claim.Expires)), mm.Holder())})
			}
			if mm.MaintenanceStale {
				items = append(items, attnItem{levelWarn, glyphMaint, mm.Name, "stale reconciler Lease (next reconcile takes it over)"})
			}
			if len(mm.Problems) > 0 {
				items = append(items, attnItem{levelError, glyphProblem, mm.Name, strings.Join(mm.Problems, "; ")})
			}
			if mm.Drift {
				items = append(items, attnItem{levelInfo, glyphDrift, mm.Name, "drifted from the pool definition"})
			}
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].level > items[j].level })
	return items
}
