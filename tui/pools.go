package tui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/themes"
	"github.com/ctpool-tui/ctpool-tui/tui/sanitize"
)

// poolsModel is the home view's selection, tracked by pool name, and its
// filter (on the pool's name, backend and image).
type poolsModel struct {
	all      []string // every pool, in the views' order
	hay      []string // lower-case text the filter searches, per pool
	names    []string // the pools shown: those the filter matches
	rows     []int    // their indices in the views
	selected string
	cursor   int
	offset   int
	height   int // rows the table may use

	filter listFilter
}

func newPoolsModel(st themes.Styles) poolsModel {
	return poolsModel{filter: newListFilter(st, "pool, backend, image…")}
}

// sync follows a new list of pools, keeping the selection by name.
func (p *poolsModel) sync(views []engine.PoolView) {
	p.all, p.hay = p.all[:0], p.hay[:0]
	for i := range views {
		v := &views[i]
		p.all = append(p.all, v.Name)
		p.hay = append(p.hay, strings.ToLower(clean(v.Name+" "+v.Spec.BackendName()+" "+v.Spec.Image)))
	}
	p.refresh()
}

// refresh applies the filter and keeps the selection by name when it is
// still shown.
func (p *poolsModel) refresh() {
	q := strings.ToLower(strings.TrimSpace(p.filter.Value()))
	p.names, p.rows = p.names[:0], p.rows[:0]
	for i, name := range p.all {
		if q == "" || strings.Contains(p.hay[i], q) {
			p.names = append(p.names, name)
			p.rows = append(p.rows, i)
		}
	}
	p.cursor = -1
	for i, n := range p.names {
		if n == p.selected {
			p.cursor = i
		}
	}
	if p.cursor < 0 {
		p.cursor = 0
		p.selected = ""
		if len(p.names) > 0 {
			p.cursor = min(max(p.cursor, 0), len(p.names)-1)
			p.selected = p.names[p.cursor]
		}
	}
	p.scroll()
}

func (p *poolsModel) startFilter() tea.Cmd { return p.filter.start() }

func (p *poolsModel) clearFilter() {
	p.filter.SetValue("")
	p.refresh()
}

func (p *poolsModel) updateFilter(msg tea.KeyMsg) {
	if p.filter.key(msg) {
		p.refresh()
	}
}

func (p *poolsModel) move(d int) {
	if len(p.names) == 0 {
		return
	}
	p.cursor = min(max(p.cursor+d, 0), len(p.names)-1)
	p.selected = p.names[p.cursor]
	p.scroll()
}

func (p *poolsModel) setHeight(h int) {
	p.height = max(h-poolsChrome, 1)
	p.scroll()
}

func (p *poolsModel) scroll() {
	if p.cursor < p.offset {
		p.offset = p.cursor
	}
	if p.cursor >= p.offset+p.height {
		p.offset = p.cursor - p.height + 1
	}
	p.offset = max(0, min(p.offset, len(p.names)-p.height))
}

// poolsChrome is the body lines the pools view uses besides rows: the column
// header, a blank line and up to three explanation lines.
const poolsChrome = 5

func poolColumns(width, nameW int) []column {
	return fitColumns([]column{
		{title: "POOL", width: min(max(nameW, 6), 24)},
		{title: "BACKEND", width: 8, drop: 3},
		{title: "IMAGE", width: 12, flex: true, max: 40, drop: 4},
		{title: "SIZE", width: 4, right: true},
		{title: "READY", width: 5, right: true},
		{title: "CLAIMED", width: 7, right: true},
		{title: "FREE", width: 6, right: true},
		{title: "UNSCHED", width: 7, right: true, drop: 1},
		{title: "DRIFT", width: 5, right: true, drop: 2},
		{title: "FAILED", width: 6, right: true},
		{title: "LAST RECONCILE", width: 18, flex: true},
	}, width, 2)
}

func (m *Model) poolsView() string {
	if !m.loaded {
		return m.st.Muted.Render("  waiting for the first snapshot…")
	}
	if len(m.views) == 0 {
		return m.st.Muted.Render("  no pools in namespace " + clean(m.opts.Namespace) +
			" (a pool is a ConfigMap corral-vdi-ctpool-<pool> labelled " + engine.LabelPool + ")")
	}
	nameW := 0
	for i := range m.views {
		nameW = max(nameW, sanitize.Width(m.views[i].Name))
	}
	cols := poolColumns(m.width, nameW)
	var b strings.Builder
	b.WriteString("  " + m.st.ColumnHeader.Render(headerCells(cols)))
	p := &m.pools
	end := min(p.offset+p.height, len(p.rows))
	for i := p.offset; i < end; i++ {
		b.WriteByte('\n')
		b.WriteString(m.poolRow(cols, &m.views[p.rows[i]], i == p.cursor))
	}
	if len(p.rows) == 0 {
		b.WriteString("\n" + m.st.Muted.Render("  no pool matches the filter (esc clears it)"))
	}
	// The line under the table shows the filter while there is one.
	b.WriteString("\n")
	if p.filter.active() {
		b.WriteString(" " + p.filter.View() + " " + m.st.Muted.Render(fmt.Sprintf("(%d/%d pools)", len(p.rows), len(p.all))))
	}
	for _, line := range m.poolNotes(3) {
		b.WriteString("\n" + line)
	}
	return b.String()
}

func (m *Model) poolRow(cols []column, v *engine.PoolView, selected bool) string {
	st := v.Status
	free := fmt.Sprint(st.Free)
	if st.Exhausted {
		free += " " + glyphWarn
	}
	vals := map[string]string{
		"POOL": v.Name, "BACKEND": v.Spec.BackendName(), "IMAGE": v.Spec.Image,
		"SIZE": fmt.Sprint(v.Spec.Size), "READY": fmt.Sprint(st.Ready), "CLAIMED": fmt.Sprint(st.Claimed),
		"FREE": free, "UNSCHED": fmt.Sprint(st.Unschedulable), "DRIFT": fmt.Sprint(st.Drifted),
		"FAILED": fmt.Sprint(st.Failed), "LAST RECONCILE": m.lastReconcile(v),
	}
	if !v.Defined {
		vals["BACKEND"], vals["IMAGE"], vals["SIZE"] = glyphNone, glyphNone, glyphNone
	}
	line := cells(cols, vals)
	if selected {
		return m.st.Selected.Render(glyphCursor + " " + line)
	}
	level := poolLevel(v)
	if level >= levelWarn {
		return "  " + m.levelStyle(level).Render(line)
	}
	return "  " + line
}

// lastReconcile is the LAST RECONCILE cell: when the recorded status last
// changed and whether the last run had errors; problems come first.
func (m *Model) lastReconcile(v *engine.PoolView) string {
	switch {
	case !v.Defined:
		return glyphBad + " no definition"
	case v.SpecError != nil:
		return glyphBad + " invalid spec"
	case v.RecordedError != nil:
		return glyphBad + " unreadable status"
	}
	when := "never"
	if v.Recorded.UpdatedAt != nil {
		when = ago(m.now, *v.Recorded.UpdatedAt)
	}
	if n := len(v.Recorded.Errors); n > 0 {
		return when + " " + glyphBad + " " + plural(n, "error", "errors")
	}
	if v.Recorded.UpdatedAt == nil {
		return when
	}
	return when + " " + glyphOK
}

// poolLevel is how bad a pool looks.
func poolLevel(v *engine.PoolView) int {
	switch {
	case len(v.Problems) > 0 || len(v.Recorded.Errors) > 0 || v.Status.Exhausted:
		return levelError
	case v.Status.Unschedulable > 0 || v.Status.Failed > 0 || isLow(v):
		return levelWarn
	}
	return levelOK
}

// isLow: fewer than a fifth of the members are free.
func isLow(v *engine.PoolView) bool {
	return v.Spec.Size > 0 && v.Status.Free*5 < v.Spec.Size
}

// poolNotes explains the selected pool first, then other pools in trouble.
func (m *Model) poolNotes(limit int) []string {
	var out []string
	if v := m.view(m.pools.selected); v != nil {
		out = append(out, m.st.Bold.Render(glyphCursor+" "+clean(v.Name)+": ")+clean(poolExplanation(v)))
	}
	for i := range m.views {
		v := &m.views[i]
		if len(out) >= limit {
			break
		}
		if v.Name == m.pools.selected || poolLevel(v) < levelError {
			continue
		}
		out = append(out, m.st.Error.Render("  "+clean(v.Name)+": ")+clean(poolExplanation(v)))
	}
	for i := range out {
		out[i] = cut(out[i], m.width)
	}
	return out
}

// poolExplanation says in one line what is going on with a pool.
func poolExplanation(v *engine.PoolView) string {
	st := v.Status
	if len(v.Problems) > 0 {
		return glyphBad + " " + strings.Join(v.Problems, "; ")
	}
	var parts []string
	switch {
	case st.Exhausted:
		parts = append(parts, fmt.Sprintf("exhausted — 0 free of %d (%s)", v.Spec.Size, strings.Join(busyParts(v), ", ")))
	case v.Spec.Size == 0:
		parts = append(parts, "size 0: no members wanted")
	default:
		parts = append(parts, fmt.Sprintf("%d free of %d (%s)", st.Free, v.Spec.Size, strings.Join(busyParts(v), ", ")))
	}
	if n := len(v.Recorded.Errors); n > 0 {
		parts = append(parts, fmt.Sprintf("%s last reconcile: %s", glyphBad, strings.Join(v.Recorded.Errors, "; ")))
	}
	if st.Drifted > 0 {
		parts = append(parts, fmt.Sprintf("%s %d drifted (replaced when free)", glyphDrift, st.Drifted))
	}
	return strings.Join(parts, " · ")
}

// busyParts lists why members are not free: claimed, unschedulable (with the
// scheduler's first message), failed, and the others.
func busyParts(v *engine.PoolView) []string {
	st := v.Status
	parts := []string{fmt.Sprintf("%d claimed", st.Claimed)}
	if st.Unschedulable > 0 {
		p := fmt.Sprintf("%d unschedulable", st.Unschedulable)
		for i := range v.Members {
			if v.Members[i].State == engine.StateUnschedulable && v.Members[i].Message != "" {
				p += ": " + v.Members[i].Message
				break
			}
		}
		parts = append(parts, p)
	}
	if st.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", st.Failed))
	}
	other := 0
	for i := range v.Members {
		mm := &v.Members[i]
		if !mm.Free && !mm.Claimed && mm.State != engine.StateUnschedulable && mm.State != engine.StateFailed {
			other++
		}
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("%d other (starting, maintenance, drift, above size)", other))
	}
	return parts
}
