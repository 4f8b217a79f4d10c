package tui

import (
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// clock formats a time of day; the date is added when it is not today.
func clock(now, t time.Time) string {
	if t.IsZero() {
		return render.GlyphNone
	}
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04")
	}
	return t.Format("Jan 2 15:04")
}

// column is one table column. Columns with a drop rank are removed, the
// highest rank first, until the table fits; a flex column takes what is left.
type column struct {
	title string
	width int
	right bool
	flex  bool // grows to fill the line (min is width)
	max   int  // a flex column's maximum (0: none)
	drop  int  // 0: never dropped
	// of is the index of the column's definition in its table's column set
	// (memberCols), so that a fitted column finds its cells.
	of int
}

// fitColumns returns the columns that fit in total cells (one space between
// columns, prefix cells before the first).
func fitColumns(cols []column, total, prefix int) []column {
	out := append([]column(nil), cols...)
	for {
		used := prefix
		for i, c := range out {
			used += c.width
			if i > 0 {
				used++
			}
		}
		if used <= total {
			// Share what is left among the flex columns, in order.
			left := total - used
			for i := range out {
				if !out[i].flex || left <= 0 {
					continue
				}
				grow := left
				if out[i].max > 0 && out[i].width+grow > out[i].max {
					grow = out[i].max - out[i].width
				}
				if grow > 0 {
					out[i].width += grow
					left -= grow
				}
			}
			return out
		}
		worst := -1
		for i, c := range out {
			if c.drop > 0 && (worst < 0 || c.drop > out[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			return out // nothing left to drop: the line will be cut
		}
		out = append(out[:worst], out[worst+1:]...)
	}
}

// cells renders sanitised, fitted cells separated by a space, each the
// value of its column's title.
func cells(cols []column, values map[string]string) string {
	return cellsBy(cols, func(c column) string { return values[c.title] })
}

// cellsBy renders sanitised, fitted cells separated by a space, each
// value(its column).
func cellsBy(cols []column, value func(c column) string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := value(c)
		if c.right {
			b.WriteString(sanitize.FitRight(v, c.width))
		} else {
			b.WriteString(sanitize.Fit(v, c.width))
		}
	}
	return b.String()
}

// headerCells renders column titles.
func headerCells(cols []column) string {
	return cellsBy(cols, func(c column) string { return c.title })
}

// spread puts left and right on one line of width cells.
func spread(left, right string, width int) string {
	lw, rw := ansi.StringWidth(left), ansi.StringWidth(right)
	if lw+rw+1 > width {
		left = sanitize.Cut(left, max(0, width-rw-1))
		lw = ansi.StringWidth(left)
	}
	gap := width - lw - rw
	if gap < 1 {
		return sanitize.Cut(left+" "+right, width)
	}
	return left + strings.Repeat(" ", gap) + right
}

// abbrevHash shortens a source hash for display: 7c1e…a9.
func abbrevHash(h string) string {
	if len(h) <= 8 {
		return sanitize.Sanitize(h)
	}
	return sanitize.Sanitize(h[:4]) + render.GlyphEllipsis + sanitize.Sanitize(h[len(h)-2:])
}

// fitBlock cuts or pads every line of s to width and the block to height lines.
func fitBlock(s string, width, height int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	for i := range lines {
		lines[i] = sanitize.Pad(lines[i], width)
	}
	for len(lines) < height {
		lines = append(lines, strings.Repeat(" ", width))
	}
	return strings.Join(lines, "\n")
}

// wrapIndent wraps plain text to width cells; lines after the first are
// indented by indent spaces.
func wrapIndent(s string, width, indent int) []string {
	first := wrap(s, width)
	if len(first) <= 1 {
		return first
	}
	rest := wrap(strings.Join(strings.Fields(strings.Join(first[1:], " ")), " "), width-indent)
	out := []string{first[0]}
	for _, l := range rest {
		out = append(out, strings.Repeat(" ", indent)+l)
	}
	return out
}
