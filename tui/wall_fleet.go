package tui

import (
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// wallTile draws one tile at a width.
type wallTile func(width int) []string

// Ranks of a fleet's tiles: the exhausted first, then those in trouble,
// then the rest.
const (
	rankExhausted = iota
	rankTrouble
	rankRest
)

// poolRank is a pool's rank on the fleet's wall: exhausted; in trouble (a
// problem, errors, low, members unschedulable or failed, or its cluster not
// live); or the rest.
func poolRank(v *engine.PoolView, cs *contextState) int {
	if render.ExhaustedAlarm(v) {
		return rankExhausted
	}
	if _, level := tileStatus(v); level >= levelWarn || v.Status.Unschedulable+v.Status.Failed > 0 || (cs != nil && cs.level >= levelWarn) {
		return rankTrouble
	}
	return rankRest
}

// contextOf returns the state of the cluster kctx of a pool
// (nil outside several contexts, or for a cluster not reported).
func contextOf(ctx viewContext, states map[string]*contextState, kctx string) *contextState {
	if !ctx.contexts {
		return nil
	}
	return states[kctx]
}

// fleetTiles are the fleet's tiles, worst first: one per pool when
// capacity tiles hold them, else one per cluster (per namespace in one
// cluster), with what the "… N more" line calls them.
func fleetTiles(ctx viewContext, large bool, capacity int) ([]wallTile, string) {
	states := map[string]*contextState{}
	for i := range ctx.contextStates {
		states[ctx.contextStates[i].context] = &ctx.contextStates[i]
	}
	pools := ctx.pools
	if len(pools) <= capacity {
		order := make([]int, len(pools))
		ranks := make([]int, len(pools))
		for i := range pools {
			order[i] = i
			ranks[i] = poolRank(&pools[i], contextOf(ctx, states, pools[i].Context))
		}
		sort.SliceStable(order, func(a, b int) bool { return ranks[order[a]] < ranks[order[b]] })
		tiles := make([]wallTile, 0, len(pools))
		for _, i := range order {
			v := &pools[i]
			cs := contextOf(ctx, states, v.Context)
			tiles = append(tiles, func(w int) []string { return tile(ctx, v, w, large, cs) })
		}
		return tiles, "pools (tab shows the table)"
	}
	groups := groupPools(ctx, states)
	tiles := make([]wallTile, 0, len(groups))
	for _, g := range groups {
		tiles = append(tiles, func(w int) []string { return g.tile(ctx, w, large) })
	}
	if ctx.contexts {
		return tiles, "contexts"
	}
	return tiles, "namespaces"
}

// groupTile is a cluster's tile on the fleet's wall (a namespace's in a
// fleet of one context): its pools' counts and its worst state.
type groupTile struct {
	name                       string
	state                      *contextState // a cluster's; nil for a namespace
	pools                      int
	size, claimed, ready, free int
	exhausted, trouble         int
	worst                      int // the level of its worst pool
}

// groupPools sums the pools per cluster (every cluster reported, with or
// without pools), or per namespace in one cluster, worst first.
func groupPools(ctx viewContext, states map[string]*contextState) []*groupTile {
	var groups []*groupTile
	byName := map[string]*groupTile{}
	get := func(name string) *groupTile {
		if g := byName[name]; g != nil {
			return g
		}
		g := &groupTile{name: name, state: states[name]}
		byName[name] = g
		groups = append(groups, g)
		return g
	}
	if ctx.contexts {
		for _, s := range ctx.contextStates {
			get(s.context)
		}
	}
	for i := range ctx.pools {
		v := &ctx.pools[i]
		name := v.Namespace
		if ctx.contexts {
			name = v.Context
		}
		g := get(name)
		g.pools++
		g.size += v.Size
		g.claimed += v.Status.Claimed
		g.ready += v.Status.Ready
		g.free += v.Status.Free
		switch poolRank(v, nil) {
		case rankExhausted:
			g.exhausted++
		case rankTrouble:
			g.trouble++
		}
		_, level := tileStatus(v)
		g.worst = max(g.worst, level)
	}
	sort.SliceStable(groups, func(a, b int) bool { return groups[a].rank() < groups[b].rank() })
	return groups
}

// rank is the group's rank among the tiles.
func (g *groupTile) rank() int {
	switch {
	case g.exhausted > 0:
		return rankExhausted
	case g.trouble > 0 || (g.state != nil && g.state.level >= levelWarn):
		return rankTrouble
	}
	return rankRest
}

// stateName is a cluster's state in one word for a tile: STALE,
// UNREACHABLE...
func stateName(s *contextState) string {
	_, name, _ := strings.Cut(s.word, " ")
	name, _, _ = strings.Cut(name, " ")
	return strings.ToUpper(name)
}

// status is the group's word and level: its cluster's when it cannot be
// read, else its exhausted pools, its pools in trouble, a stale cluster.
func (g *groupTile) status() (string, int) {
	switch {
	case g.state != nil && g.state.level >= levelError:
		return stateName(g.state), levelError
	case g.exhausted > 0:
		return fmt.Sprintf("%d EXHAUSTED", g.exhausted), levelError
	case g.trouble > 0:
		return fmt.Sprintf("%d IN TROUBLE", g.trouble), max(g.worst, levelWarn)
	case g.state != nil && g.state.level >= levelWarn:
		return stateName(g.state), levelWarn
	case g.pools == 0:
		return "NO POOLS", levelNone
	}
	return "OK", levelOK
}

// tile renders the group's tile of width cells.
func (g *groupTile) tile(ctx viewContext, width int, large bool) []string {
	word, level := g.status()
	style := ctx.level(level)
	inner := width - 4
	var body []string
	if large {
		body = append(body, bigRows(style, g.free, word, inner)...)
	} else {
		body = append(body, style.Render(spread(fmt.Sprintf(" %d free", g.free), word, inner)))
	}
	switch {
	case g.pools == 0 && g.state != nil && g.state.level >= levelError:
		body = append(body, " nothing read")
	case large:
		body = append(body, fmt.Sprintf(" %d/%d claimed · %d ready", g.claimed, g.size, g.ready))
	default:
		body = append(body, fmt.Sprintf(" %d/%d claimed", g.claimed, g.size))
	}
	if large {
		body = append(body, " "+gauge(g.claimed, g.size, inner-2))
	}
	pools := fmt.Sprintf(" %d pools", g.pools)
	if g.pools == 1 {
		pools = " 1 pool"
	}
	// A small tile has room for the state of a cluster that is not live,
	// or for the ready count.
	switch notLive := g.state != nil && g.state.level >= levelWarn; {
	case !large && notLive:
		pools = " " + ctx.level(g.state.level).Render(sanitize.Sanitize(g.state.word))
	case !large:
		pools += fmt.Sprintf(" · %d ready", g.ready)
	case g.state != nil:
		pools += " · " + ctx.level(g.state.level).Render(sanitize.Sanitize(g.state.word))
	}
	body = append(body, pools)
	border := ctx.st.Muted
	if level >= levelWarn {
		border = style
	}
	return strings.Split(titledBox(tailCut(sanitize.Sanitize(g.name), width-5), body, width, border), "\n")
}

func fitName(s string, w int) string {
	s = sanitize.Sanitize(s)
	if ansi.StringWidth(s) > w {
		return ansi.Truncate(s, w, render.GlyphEllipsis)
	}
	return s + strings.Repeat(" ", w-ansi.StringWidth(s))
}
