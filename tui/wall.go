package tui

import (
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// tileStatus is a pool's word on the wall, and its level.
func tileStatus(v *engine.PoolView) (string, int) {
	switch {
	case !v.Defined:
		return "NO DEFINITION", levelError
	case len(v.Problems) > 0:
		return "PROBLEM", levelError
	case render.ExhaustedGrowing(v):
		// Below its ceiling a claim grows it at once: much less alarming.
		return "GROWING", levelWarn
	case v.Status.Exhausted:
		return "EXHAUSTED", levelError
	case len(v.Recorded.Errors) > 0:
		return "ERRORS", levelError
	case v.Size == 0:
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
// count in big digits and a gauge. In a fleet the title is the pool's ref (title)
// (cut from the left: the pool's name stays), the tile counts the ready
// members too, and a pool whose cluster is not live says so (cs): its
// word is the cluster's state unless its own is an error.
func tile(ctx viewContext, v *engine.PoolView, width int, large bool, cs *contextState) []string {
	word, level := tileStatus(v)
	var cluster string
	if cs != nil && cs.level >= levelWarn {
		cluster = ctx.level(cs.level).Render(sanitize.Sanitize(cs.word))
		if level < levelError {
			word, level = stateName(cs), max(level, cs.level)
		}
	}
	style := ctx.level(level)
	inner := width - 4
	st := v.Status
	var body []string
	free := fmt.Sprintf("%d free", st.Free)
	if large {
		body = append(body, bigRows(style, st.Free, word, inner)...)
	} else {
		body = append(body, style.Render(spread(" "+free, word, inner)))
	}
	claimed := fmt.Sprintf(" %d/%d claimed", st.Claimed, v.Size)
	if ctx.fleet && large {
		claimed += fmt.Sprintf(" · %d ready", st.Ready)
	}
	body = append(body, claimed)
	// The trend of free members takes the gauge's line on a large tile
	// (the claimed count stays in words above it) and the spare third line
	// of a small one.
	spark := wallTrend(ctx, v, inner-2)
	if large {
		if spark != "" {
			body = append(body, " "+spark)
		} else {
			body = append(body, " "+gauge(st.Claimed, v.Size, inner-2))
		}
		var extra []string
		if cluster != "" {
			extra = append(extra, cluster)
		}
		if st.Unschedulable > 0 {
			extra = append(extra, fmt.Sprintf("%d unsched", st.Unschedulable))
		}
		if st.Failed > 0 {
			extra = append(extra, fmt.Sprintf("%d failed", st.Failed))
		}
		if st.Drifted > 0 {
			extra = append(extra, fmt.Sprintf("%s %d drift", render.GlyphDrift, st.Drifted))
		}
		body = append(body, " "+strings.Join(extra, " · "))
	} else if ctx.fleet {
		line := fmt.Sprintf(" %d ready", st.Ready)
		if st.Unschedulable > 0 {
			line += fmt.Sprintf(" · %d unsched", st.Unschedulable)
		}
		if st.Failed > 0 {
			line += fmt.Sprintf(" · %d failed", st.Failed)
		}
		body = append(body, line)
	} else if st.Unschedulable+st.Failed > 0 {
		body = append(body, fmt.Sprintf(" %d unsched · %d failed", st.Unschedulable, st.Failed))
	} else {
		body = append(body, " "+spark)
	}
	border := ctx.st.Muted
	if level >= levelWarn {
		border = style
	}
	title := sanitize.Sanitize(ctx.title(v))
	if ctx.fleet {
		title = tailCut(title, width-5)
	}
	return strings.Split(titledBox(title, body, width, border), "\n")
}

// bigRows are a large tile's first rows: n in big digits, "free" and the
// status word.
func bigRows(style lipgloss.Style, n int, word string, inner int) []string {
	var rows []string
	for i, row := range bigDigits(n) {
		right := ""
		switch i {
		case 0:
			right = "free"
		case 2:
			right = word
		}
		rows = append(rows, style.Render(spread(" "+row, right, inner)))
	}
	return rows
}

// tailCut cuts s to width cells from the left, so that its end (a pool's
// name after its context and namespace) stays.
func tailCut(s string, width int) string {
	w := ansi.StringWidth(s)
	if w <= width || width < 2 {
		return s
	}
	return ansi.TruncateLeft(s, w-width+1, render.GlyphEllipsis)
}

// WallLayout is the wall display's layout (the settings' wall section);
// its zero value is the automatic layout.
type WallLayout struct {
	// Tiles: WallTilesLarge or WallTilesSmall; "" (auto) picks large
	// tiles from 120x36 cells.
	Tiles string
	// Columns caps the tiles in a row (0: as many as the width holds).
	Columns int
	// Group, in a fleet: WallGroupPools (one tile per pool, those that do
	// not fit counted on a line) or WallGroupClusters (one tile per context,
	// per namespace in one context); "" (auto) groups only when the pools
	// do not fit.
	Group string
	// HideAttention leaves NEEDS ATTENTION out: the tiles take the screen.
	HideAttention bool
}

// The values of WallLayout's fields.
const (
	WallTilesLarge    = "large"
	WallTilesSmall    = "small"
	WallGroupPools    = "pools"
	WallGroupClusters = "clusters"
)

// wallView is the read-only wall display: tiles that reflow to the width,
// then the members and pools that need attention. It has no keys of its own
// (tab, ? and q are the root's) and draws the whole screen but the help line.
type wallView struct{}

func (wallView) update(viewContext, tea.Msg) (intent, tea.Cmd) { return nil, nil }

func (wallView) capturing() bool                                    { return false }
func (wallView) about(viewContext) (engine.PoolRef, *engine.Member) { return engine.PoolRef{}, nil }
func (wallView) fullScreen()                                        {}

// help is tab, : (with a Scoper or several contexts), ? and q.
func (wallView) help(ctx viewContext) []key.Binding {
	k := ctx.keys
	return []key.Binding{k.Wall, k.Command, k.Help, k.Quit}
}

// view renders the header (and each context's state with several
// contexts), the tiles and NEEDS ATTENTION in ctx.height lines. A fleet's
// tiles put the exhausted pools first, then those in trouble; when they do
// not all fit, there is one tile per context (per namespace in one
// context) instead (fleetTiles).
func (wallView) view(ctx viewContext) string {
	out := wallHeader(ctx)
	if !ctx.loaded {
		out = append(out, ctx.st.Muted.Render(" waiting for the first snapshot…"))
		return fitBlock(strings.Join(out, "\n"), ctx.width, ctx.height)
	}
	out = append(out, wallGrid(ctx, ctx.height-len(out))...)
	if !ctx.wall.HideAttention {
		out = append(out, "")
		// The lines left for items; the screen's last stays blank for the
		// command line or a note (model.go).
		out = append(out, wallAttention(ctx, ctx.height-len(out)-2)...)
	}
	return fitBlock(strings.Join(out, "\n"), ctx.width, ctx.height)
}

// wallHeader is the wall's first line (namespace, context, clock, the
// connection and the mode) and, with several contexts, each cluster's state.
func wallHeader(ctx viewContext) []string {
	st := ctx.st
	left := " " + st.Accent.Render("VDI POOLS") + " · " + sanitize.Sanitize(render.OrWord(ctx.namespace, "(default)")) + " · " + sanitize.Sanitize(render.OrWord(ctx.kubeContext, "(current)"))
	conn, level := ctx.conn, ctx.connLevel
	age := ""
	if level == levelOK {
		age = " · data " + render.Duration(ctx.now.Sub(ctx.dataAt)) + " old"
		conn = render.GlyphLive + " live"
	}
	mode := modeWords(ctx, true)
	if ctx.demo {
		mode = "DEMO · " + mode
	}
	right := ctx.now.Format("15:04:05") + " · " + ctx.level(level).Render(sanitize.Sanitize(conn)) + age + " · " + st.Bold.Render(mode) + " "
	out := []string{spread(left, right, ctx.width)}
	if ctx.contexts {
		out = append(out, contextsLine(ctx))
	}
	return out
}

// wallGrid is the tiles in the room below the header, as many rows as fit
// with room left for the attention list, and a line for those that do not.
func wallGrid(ctx viewContext, room int) []string {
	st := ctx.st
	var out []string
	pools := ctx.pools
	lay := ctx.wall
	large := ctx.width >= 120 && ctx.height+1 >= 36
	switch lay.Tiles {
	case WallTilesLarge:
		large = true
	case WallTilesSmall:
		large = false
	}
	tileH := 6
	minW := 22
	if large {
		tileH, minW = 9, 30
	}
	maxCols := max(1, (ctx.width-1)/(minW+1))
	if lay.Columns > 0 {
		maxCols = min(maxCols, lay.Columns)
	}
	rowsFit := max(1, (room-4)/tileH) // leave room for the attention list
	if lay.HideAttention {
		rowsFit = max(1, (room-1)/(tileH-1)) // rows of tileH-1 lines, and the "more" line
	}
	var tiles []wallTile
	more := "pools (tab shows the table)"
	if ctx.fleet {
		capacity := rowsFit * maxCols
		switch lay.Group {
		case WallGroupPools:
			capacity = len(pools)
		case WallGroupClusters:
			capacity = -1
		}
		tiles, more = fleetTiles(ctx, large, capacity)
	} else {
		for i := range pools {
			v := &pools[i]
			tiles = append(tiles, func(w int) []string { return tile(ctx, v, w, large, nil) })
		}
	}
	cols := max(1, min(len(tiles), maxCols))
	tileW := min((ctx.width-1)/cols-1, 64)
	shown := min(len(tiles), rowsFit*cols)
	for start := 0; start < shown; start += cols {
		var row [][]string
		for i := start; i < min(start+cols, shown); i++ {
			row = append(row, tiles[i](tileW))
		}
		for r := 0; r < tileH-1 && r < len(row[0]); r++ {
			line := ""
			for _, t := range row {
				if r < len(t) {
					line += " " + t[r]
				}
			}
			out = append(out, line)
		}
	}
	if shown < len(tiles) {
		out = append(out, st.Muted.Render(fmt.Sprintf(" … %d more %s", len(tiles)-shown, more)))
	}
	if len(pools) == 0 {
		where := " no pools in this namespace"
		if ctx.fleet {
			where = " no pools in the namespaces shown"
		}
		out = append(out, st.Muted.Render(where))
	}
	return out
}

// wallAttention is NEEDS ATTENTION in at most left item lines (and its
// title), the rest counted on the last.
func wallAttention(ctx viewContext, left int) []string {
	st := ctx.st
	items := attention(ctx)
	title := st.Bold.Render(" NEEDS ATTENTION")
	if len(items) == 0 {
		return []string{title + st.OK.Render("  "+render.GlyphOK+" nothing")}
	}
	out := []string{title + st.Muted.Render(fmt.Sprintf("  (%d)", len(items)))}
	nameW, maxW := 8, 24
	if ctx.fleet {
		maxW = max(24, min(48, ctx.width/3))
	}
	for _, it := range items {
		nameW = max(nameW, min(ansi.StringWidth(sanitize.Sanitize(it.who)), maxW))
	}
	for i, it := range items {
		if i >= left-1 && len(items) > left {
			out = append(out, st.Muted.Render(fmt.Sprintf(" … and %d more", len(items)-i)))
			break
		}
		line := fmt.Sprintf(" %s %s  %s", it.glyph, fitName(it.who, nameW), sanitize.Sanitize(it.what))
		out = append(out, sanitize.Cut(ctx.level(it.level).Render(line), ctx.width))
	}
	return out
}

// attnItem is one line of NEEDS ATTENTION.
type attnItem struct {
	level      int
	glyph, who string
	what       string
}

// attention lists what an operator should look at, worst first: in a fleet
// of clusters each cluster that is not live, then the pools and members,
// named by their key in a fleet.
func attention(ctx viewContext) []attnItem {
	var items []attnItem
	for _, s := range ctx.contextStates {
		if s.level < levelWarn {
			continue
		}
		what := s.word
		if s.err != "" {
			what += ": " + s.err
		}
		glyph, _, _ := strings.Cut(s.word, " ")
		items = append(items, attnItem{s.level, glyph, s.context, what})
	}
	pools, now := ctx.pools, ctx.now
	for i := range pools {
		v := &pools[i]
		pool := ctx.title(v)
		member := func(name string) string {
			if ctx.fleet {
				return fleetNamespace(v) + "/" + name
			}
			return name
		}
		for _, p := range v.Problems {
			items = append(items, attnItem{levelError, render.GlyphBad, pool, p})
		}
		for _, e := range recordedErrors(v) {
			items = append(items, attnItem{levelError, render.GlyphBad, pool, "last reconcile: " + e})
		}
		switch {
		case render.ExhaustedGrowing(v):
			items = append(items, attnItem{levelWarn, render.GlyphAbove, pool, fmt.Sprintf("%s: 0 free of %d", render.ExhaustedWords(v), v.Size)})
		case v.Spec.Elastic() && v.Status.Exhausted:
			items = append(items, attnItem{levelError, render.GlyphWarn, pool, fmt.Sprintf("EXHAUSTED at ceiling %d: 0 free of %d", v.Spec.MaxSize, v.Size)})
		case v.Status.Exhausted:
			items = append(items, attnItem{levelError, render.GlyphWarn, pool, fmt.Sprintf("EXHAUSTED: 0 free of %d", v.Size)})
		}
		for j := range v.Members {
			mm := &v.Members[j]
			who := member(mm.Name)
			switch mm.State {
			case engine.StateFailed:
				items = append(items, attnItem{levelError, render.GlyphBad, who, "Failed  " + mm.Message})
			case engine.StateUnschedulable:
				items = append(items, attnItem{levelWarn, render.GlyphWarn, who, "Unschedulable  " + mm.Message})
			}
			if mm.Claim != nil && (mm.Claim.Expires.IsZero() || !now.Before(mm.Claim.Expires)) {
				items = append(items, attnItem{levelWarn, render.GlyphBad, who,
					fmt.Sprintf("claim expired %s ago (%s)", render.Duration(now.Sub(mm.Claim.Expires)), mm.Holder())})
			}
			if mm.InMaintenance() && mm.HoldStale() {
				items = append(items, attnItem{levelWarn, render.GlyphMaint, who, "stale reconciler Lease (next reconcile takes it over)"})
			}
			if len(mm.Problems) > 0 {
				items = append(items, attnItem{levelError, render.GlyphProblem, who, strings.Join(mm.Problems, "; ")})
			}
			if mm.Drift {
				items = append(items, attnItem{levelInfo, render.GlyphDrift, who, "drifted from the pool definition"})
			}
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].level > items[j].level })
	return items
}
