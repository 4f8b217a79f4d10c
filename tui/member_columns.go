package tui

import (
	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// memberColID names a column of the members table.
type memberColID string

// memberColumn is one column of the members table: adding a column is
// adding one of these to memberCols.
type memberColumn struct {
	id     memberColID
	header string
	// measure is the text whose display width the column follows, counted
	// for every member once per snapshot (nil: the width is fixed).
	measure func(mm *engine.Member) string
	// layout is the column's width rule, given the widest measured text (0
	// when not measured, or for no members).
	layout func(widest int) column
	// cell is the column's text in a member's row.
	cell func(r *memberCells) string
}

// memberCells is what a member's row shows: render's row and the reason.
type memberCells struct {
	render.Row
	message string
}

// memberCols are the members table's columns, in order. A measured column
// follows its widest text within bounds; a flex one grows to fill the line
// (up to max); the drop ranks say which go first on a narrow screen.
var memberCols = []memberColumn{{
	id: "member", header: "MEMBER",
	measure: func(mm *engine.Member) string { return mm.Name },
	layout:  func(w int) column { return column{width: within(w, 6, 22)} },
	cell:    func(r *memberCells) string { return r.Name },
}, {
	id: "state", header: "STATE",
	layout: func(int) column { return column{width: 13} },
	cell:   func(r *memberCells) string { return r.State },
}, {
	id: "holder", header: "HOLDER",
	measure: render.HolderCell,
	layout:  func(w int) column { return column{width: within(w, 6, 16), flex: true, max: within(w, 6, 30)} },
	cell:    func(r *memberCells) string { return r.Holder.Cell() },
}, {
	id: "claimed", header: "CLAIMED",
	layout: func(int) column { return column{width: 7, right: true, drop: 4} },
	cell:   func(r *memberCells) string { return r.Claim.Claimed },
}, {
	id: "left", header: "LEFT",
	layout: func(int) column { return column{width: 9} },
	cell:   func(r *memberCells) string { return r.Claim.Left },
}, {
	id: "marks", header: "MARKS",
	measure: render.MarksText,
	layout:  func(w int) column { return column{width: within(w, 5, 24), drop: 1} },
	cell:    func(r *memberCells) string { return r.Marks.Short() },
}, {
	id: "node", header: "NODE",
	measure: func(mm *engine.Member) string { return mm.Node },
	layout:  func(w int) column { return column{width: within(w, 4, 10), flex: true, max: within(w, 4, 20), drop: 2} },
	cell:    func(r *memberCells) string { return r.Node },
}, {
	id: "age", header: "AGE",
	layout: func(int) column { return column{width: 5, right: true, drop: 3} },
	cell:   func(r *memberCells) string { return r.Age },
}, {
	id: "message", header: "MESSAGE",
	layout: func(int) column { return column{width: 12, flex: true, drop: 5} },
	cell:   func(r *memberCells) string { return r.message },
}}

// within is w, at least lo and at most hi.
func within(w, lo, hi int) int { return min(max(w, lo), hi) }

// memberColumns are the columns that fit in width cells, given the widest
// measured text of each column (widths, by memberCols' order).
func memberColumns(width int, widths []int) []column {
	cols := make([]column, len(memberCols))
	for i, d := range memberCols {
		w := 0
		if i < len(widths) {
			w = widths[i]
		}
		cols[i] = d.layout(w)
		cols[i].title, cols[i].of = d.header, i
	}
	return fitColumns(cols, width, 2)
}

// memberLine renders a member's cells in the fitted columns (sanitised,
// fitted, separated by a space).
func memberLine(cols []column, r *memberCells) string {
	return cellsBy(cols, func(c column) string { return memberCols[c.of].cell(r) })
}

// widthCounts counts the members that need each width of each measured
// column (by memberCols' order; nil for a fixed one), so that the widths
// follow a change of a few members.
type widthCounts []map[int]int

func (c *widthCounts) reset() {
	if *c == nil {
		*c = make(widthCounts, len(memberCols))
		for i, d := range memberCols {
			if d.measure != nil {
				(*c)[i] = map[int]int{}
			}
		}
	}
	for _, m := range *c {
		clear(m)
	}
}

// add counts a member's widths (n = 1), or takes them away (n = -1).
func (c *widthCounts) add(mm *engine.Member, n int) {
	if *c == nil {
		c.reset()
	}
	for i, d := range memberCols {
		if d.measure == nil {
			continue
		}
		m, w := (*c)[i], sanitize.Width(d.measure(mm))
		if m[w] += n; m[w] <= 0 {
			delete(m, w)
		}
	}
}

// widths are the largest widths counted, by memberCols' order (0 for none,
// or for a fixed column).
func (c widthCounts) widths() []int {
	out := make([]int, len(memberCols))
	for i, m := range c {
		for k := range m {
			out[i] = max(out[i], k)
		}
	}
	return out
}
