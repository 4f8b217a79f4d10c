package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// poolsView is the home view: the table of pools, with the selection
// tracked by pool key (its name; namespace/name in the fleet, which adds a
// NAMESPACE column) and a filter on the pool's name, namespace, backend and
// image. Its rows are indices into the snapshot's pools.
type poolsView struct {
	list[engine.PoolRef]
	// The widest pool name, namespace and context of the pools synced
	// (the columns' widths), measured once per snapshot rather than per
	// frame: a fleet has thousands of pools.
	nameW, nsW, ctxW int
	// numW is the digits of the largest count a row may show (a pool's
	// size or members): the count columns widen to it.
	numW int
	// recorded: some pool has a recorded history (the trend column shows).
	recorded bool
}

func newPoolsView(st themes.Styles) poolsView {
	return poolsView{list: list[engine.PoolRef]{filter: newListFilter(st, "pool, backend, image…")}}
}

// sync follows the pools shown (ctx.pools), keeping the selection by ref;
// in the fleet a pool's namespace is shown, with its context when there are
// several.
func (p *poolsView) sync(ctx viewContext) {
	pools, fleet, contexts := ctx.pools, ctx.fleet, ctx.contexts
	p.names, p.hay = p.names[:0], p.hay[:0]
	p.nameW, p.nsW, p.ctxW, p.numW, p.recorded = 0, 0, 0, 0, false
	for i := range pools {
		v := &pools[i]
		if h := v.Recorded.History; h != nil && len(h.Samples) > 0 {
			p.recorded = true
		}
		p.numW = max(p.numW, len(strconv.Itoa(max(v.Size, len(v.Members)))))
		p.names = append(p.names, v.Ref())
		hay := v.Name + " " + v.Spec.BackendName() + " " + v.Spec.Image
		if fleet {
			hay = fleetNamespace(v) + " " + hay
		}
		p.hay = append(p.hay, strings.ToLower(sanitize.Sanitize(hay)))
		p.nameW = max(p.nameW, sanitize.Width(v.Name))
		if fleet {
			p.nsW = max(p.nsW, sanitize.Width(v.Namespace), 1)
			if contexts {
				p.ctxW = max(p.ctxW, sanitize.Width(v.Context), 1)
			}
		}
	}
	p.refresh()
}

// refresh applies the filter and keeps the selection by name when it is
// still shown.
func (p *poolsView) refresh() {
	p.filterRows()
	p.reselect()
}

// setHeight takes the body's height.
func (p *poolsView) setHeight(h int) { p.list.setHeight(h - poolsChrome) }

// capturing: the filter is typed.
func (p *poolsView) capturing() bool { return p.filter.typing }

// about is the selected pool.
func (p *poolsView) about(viewContext) (engine.PoolRef, *engine.Member) { return p.selected, nil }

// help is the filter's keys while it is typed, else enter, the pools'
// actions and the table's keys.
func (p *poolsView) help(ctx viewContext) []key.Binding {
	k := ctx.keys
	if p.filter.typing {
		return []key.Binding{k.ApplyFilter, k.ClearFilter}
	}
	keys := append([]key.Binding{withHelp(k.Open, "members")}, k.actionsOn(screenPools, ctx.pool(p.selected))...)
	return append(keys, k.Filter, k.Wall, k.Log, k.Help, k.Quit)
}

// update handles a key: the list's keys, esc (clears the filter) and enter;
// any other key may be an action on the selected pool.
func (p *poolsView) update(ctx viewContext, msg tea.Msg) (intent, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil, nil
	}
	cmd, handled, refilter := p.list.update(ctx.keys, km)
	if refilter {
		p.refresh()
	}
	if handled {
		return nil, cmd
	}
	k := ctx.keys
	switch {
	case key.Matches(km, k.Back) && p.filter.Value() != "":
		p.clearFilter()
		p.refresh()
	case key.Matches(km, k.Open):
		if p.selected != (engine.PoolRef{}) {
			return openPool{pool: p.selected}, nil
		}
	default:
		return actionKey{msg: km, pool: p.selected}, nil
	}
	return nil, nil
}

// poolsChrome is the body lines the pools view uses besides rows: the column
// header, a blank line and up to three explanation lines.
const poolsChrome = 5

// poolColumns are the pools table's columns; nsW > 0 (the fleet) adds a
// NAMESPACE column first.
func poolColumns(width, nsW, nameW int) []column { return poolColumnsIn(width, 0, nsW, nameW, 0, 0) }

// The trend column's forms (poolColumnsIn's trend): none, the sparkline of
// free members in trendCells or trendCellsNarrow cells, or in words over
// the last hour (trendWords: "3→0 ↓").
const (
	trendNone  = 0
	trendWords = -1
)

// trendTitle is the trend column's title in a form.
func trendTitle(trend int) string {
	if trend == trendWords {
		return "FREE 1H"
	}
	return fmt.Sprintf("FREE LAST %dH", int(time.Duration(trend)*trendStep/time.Hour))
}

// poolColumnsIn adds a CONTEXT column first when ctxW > 0 (a fleet of
// clusters); the count columns hold numbers of numW digits (FREE one more
// glyph). trend adds the trend column after FREE in a form: a sparkline is
// dropped first, the words last but one (before UNSCHED).
func poolColumnsIn(width, ctxW, nsW, nameW, numW, trend int) []column {
	var ns []column
	if ctxW > 0 {
		ns = append(ns, column{title: "CONTEXT", width: min(max(ctxW, 7), 20)})
	}
	if nsW > 0 {
		ns = append(ns, column{title: "NAMESPACE", width: min(max(nsW, 9), 20)})
	}
	cols := append(ns, []column{
		{title: "POOL", width: min(max(nameW, 6), 24)},
		{title: "BACKEND", width: 8, drop: 5},
		{title: "IMAGE", width: 12, flex: true, max: 40, drop: 6},
		{title: "SIZE", width: max(4, numW), right: true},
		{title: "READY", width: max(5, numW), right: true},
		{title: "CLAIMED", width: max(7, numW), right: true},
		{title: "FREE", width: max(6, numW+2), right: true},
	}...)
	switch {
	case trend == trendWords:
		cols = append(cols, column{title: trendTitle(trend), width: max(9, 2*numW+4), drop: 1})
	case trend > 0:
		cols = append(cols, column{title: trendTitle(trend), width: max(trend, len(trendTitle(trend))), drop: 7})
	}
	return fitColumns(append(cols, []column{
		{title: "UNSCHED", width: max(7, numW), right: true, drop: 2},
		{title: "DRIFT", width: max(5, numW), right: true, drop: 3},
		{title: "FAILED", width: max(6, numW), right: true},
		{title: "LAST RECONCILE", width: 18, flex: true},
	}...), width, 2)
}

// columns are the table's columns at this frame: with the widest trend
// form that fits when some pool has a trend (hasTrend), and the form used.
func (p *poolsView) columns(ctx viewContext) ([]column, int) {
	if ctx.hasTrend(p.recorded) {
		for _, form := range []int{trendCells, trendCellsNarrow, trendWords} {
			cols := poolColumnsIn(ctx.width, p.ctxW, p.nsW, p.nameW, p.numW, form)
			for _, c := range cols {
				if c.title == trendTitle(form) {
					return cols, form
				}
			}
		}
	}
	return poolColumnsIn(ctx.width, p.ctxW, p.nsW, p.nameW, p.numW, trendNone), trendNone
}

// view renders the table's visible rows, the filter and notes on the
// selected pool and the pools in trouble.
func (p *poolsView) view(ctx viewContext) string {
	st := ctx.st
	if !ctx.loaded {
		return st.Muted.Render("  waiting for the first snapshot…")
	}
	if len(ctx.pools) == 0 {
		where := "namespace " + sanitize.Sanitize(ctx.namespace)
		if ctx.fleet {
			where = "the namespaces shown (" + sanitize.Sanitize(ctx.namespace) + ")"
		}
		return st.Muted.Render("  no pools in " + where +
			" (a pool is a ConfigMap corral-vdi-ctpool-<pool> labelled " + engine.LabelPool + ")")
	}
	cols, trend := p.columns(ctx)
	var b strings.Builder
	b.WriteString("  " + st.ColumnHeader.Render(headerCells(cols)))
	end := min(p.offset+p.height, len(p.rows))
	for i := p.offset; i < end; i++ {
		b.WriteByte('\n')
		b.WriteString(poolRow(ctx, cols, &ctx.pools[p.rows[i]], i == p.cursor, trend))
	}
	if len(p.rows) == 0 {
		b.WriteString("\n" + st.Muted.Render("  no pool matches the filter (esc clears it)"))
	}
	// The line under the table shows the filter while there is one.
	b.WriteString("\n")
	if p.filter.active() {
		b.WriteString(" " + p.filter.View() + " " + st.Muted.Render(fmt.Sprintf("(%d/%d pools)", len(p.rows), len(p.names))))
	}
	for _, line := range p.notes(ctx, 3) {
		b.WriteString("\n" + line)
	}
	return b.String()
}

func poolRow(ctx viewContext, cols []column, v *engine.PoolView, selected bool, trend int) string {
	st := v.Status
	free := fmt.Sprint(st.Free)
	switch {
	case render.ExhaustedGrowing(v):
		free += " " + render.GlyphAbove // growing: a claim grows it at once
	case st.Exhausted:
		free += " " + render.GlyphWarn
	}
	vals := map[string]string{
		"CONTEXT": v.Context, "NAMESPACE": v.Namespace, "POOL": v.Name, "BACKEND": v.Spec.BackendName(), "IMAGE": v.Spec.Image,
		"SIZE": fmt.Sprint(v.Size), "READY": fmt.Sprint(st.Ready), "CLAIMED": fmt.Sprint(st.Claimed),
		"FREE": free, "UNSCHED": fmt.Sprint(st.Unschedulable), "DRIFT": driftCell(v),
		"FAILED": fmt.Sprint(st.Failed), "LAST RECONCILE": lastReconcile(v, ctx.now),
	}
	if trend != trendNone {
		vals[trendTitle(trend)] = trendCell(ctx, v, trend)
	}
	if !v.Defined {
		vals["BACKEND"], vals["IMAGE"], vals["SIZE"] = render.GlyphNone, render.GlyphNone, render.GlyphNone
	}
	line := cells(cols, vals)
	if selected {
		return ctx.st.Selected.Render(render.GlyphCursor + " " + line)
	}
	level := poolLevel(v)
	if level >= levelWarn {
		return "  " + ctx.level(level).Render(line)
	}
	return "  " + line
}

// lastReconcile is the LAST RECONCILE cell: when the recorded status last
// changed and whether the last run had errors; problems come first.
func lastReconcile(v *engine.PoolView, now time.Time) string {
	switch {
	case !v.Defined:
		return render.GlyphBad + " no definition"
	case v.SpecError != nil:
		return render.GlyphBad + " invalid spec"
	case v.RecordedError != nil:
		return render.GlyphBad + " unreadable status"
	}
	when := "never"
	if v.Recorded.UpdatedAt != nil {
		when = render.Ago(now, *v.Recorded.UpdatedAt)
	}
	if n := len(v.Recorded.Errors); n > 0 {
		return when + " " + render.GlyphBad + " " + render.Plural(n, "error", "errors")
	}
	if v.Recorded.UpdatedAt == nil {
		return when
	}
	return when + " " + render.GlyphOK
}

// poolLevel is how bad a pool looks.
func poolLevel(v *engine.PoolView) int {
	switch {
	case len(v.Problems) > 0 || len(v.Recorded.Errors) > 0 || render.ExhaustedAlarm(v):
		return levelError
	case render.ExhaustedGrowing(v) || v.Status.Unschedulable > 0 || v.Status.Failed > 0 || isLow(v):
		return levelWarn
	}
	return levelOK
}

// isLow: fewer than a fifth of the members are free.
func isLow(v *engine.PoolView) bool {
	return v.Size > 0 && v.Status.Free*5 < v.Size
}

// poolNotes explains the selected pool first, then other pools in trouble.
func (p *poolsView) notes(ctx viewContext, limit int) []string {
	var out []string
	if v := ctx.pool(p.selected); v != nil {
		out = append(out, ctx.st.Bold.Render(render.GlyphCursor+" "+sanitize.Sanitize(ctx.title(v))+": ")+sanitize.Sanitize(poolExplanation(v)))
		out = append(out, disruptionNotes(ctx, v)...)
	}
	for i := range ctx.pools {
		v := &ctx.pools[i]
		if len(out) >= limit {
			break
		}
		if v.Ref() == p.selected || poolLevel(v) < levelError {
			continue
		}
		out = append(out, ctx.st.Error.Render("  "+sanitize.Sanitize(ctx.title(v))+": ")+sanitize.Sanitize(poolExplanation(v)))
	}
	out = out[:min(len(out), limit)]
	for i := range out {
		out[i] = sanitize.Cut(out[i], ctx.width)
	}
	return out
}

// poolExplanation says in one line what is going on with a pool.
func poolExplanation(v *engine.PoolView) string {
	st := v.Status
	if len(v.Problems) > 0 {
		return render.GlyphBad + " " + strings.Join(v.Problems, "; ")
	}
	var parts []string
	switch {
	case st.Exhausted:
		parts = append(parts, fmt.Sprintf("%s — 0 free of %d (%s)", render.ExhaustedWords(v), v.Size, strings.Join(busyParts(v), ", ")))
	case v.Size == 0:
		parts = append(parts, "size 0: no members wanted")
	default:
		parts = append(parts, fmt.Sprintf("%d free of %d (%s)", st.Free, v.Size, strings.Join(busyParts(v), ", ")))
	}
	if len(v.Recorded.Errors) > 0 {
		parts = append(parts, fmt.Sprintf("%s last reconcile: %s", render.GlyphBad, strings.Join(recordedErrors(v), "; ")))
	}
	switch ro := render.Rollout(v, v.ObservedAt); {
	case ro != nil && ro.State == render.RolloutHalted:
		parts = append(parts, render.GlyphWarn+" "+ro.Halted+" (R resumes; apply an image to roll back)")
	case ro != nil && ro.State == render.RolloutRolling:
		parts = append(parts, render.GlyphDrift+" "+render.RolloutText(v.Name, ro))
	case st.Drifted > 0:
		parts = append(parts, fmt.Sprintf("%s %d drifted (replaced when free)", render.GlyphDrift, st.Drifted))
	}
	return strings.Join(parts, " · ")
}

// driftCell is the DRIFT column: the drifted members, marked while a
// rollout replaces them (⟳) or is halted (⚠).
func driftCell(v *engine.PoolView) string {
	n := fmt.Sprint(v.Status.Drifted)
	if ro := v.RecordedRollout(); ro != nil {
		switch {
		case ro.Halted != "":
			return n + " " + render.GlyphWarn
		case ro.Done == nil:
			return n + " " + render.GlyphDrift
		}
	}
	return n
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
	if st.Serving > 0 {
		parts = append(parts, fmt.Sprintf("%d on the old image, serving", st.Serving))
	}
	other := 0
	for i := range v.Members {
		mm := &v.Members[i]
		if !mm.Free && !mm.Claimed && !mm.Serving && mm.State != engine.StateUnschedulable && mm.State != engine.StateFailed {
			other++
		}
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("%d other (starting, maintenance, drift, above size)", other))
	}
	return parts
}

// disruptionNotes are the lines under the pools table about the selected
// pool's voluntary disruptions: the claimed desktops that hold a node's
// drain, by node, and claimed desktops the last reconcile could not
// protect from eviction.
func disruptionNotes(ctx viewContext, v *engine.PoolView) []string {
	var out []string
	for _, h := range v.DrainHolds() {
		out = append(out, "  "+ctx.st.Warn.Render(render.GlyphWarn+" "+sanitize.Sanitize(engine.DrainHoldText(h)))+
			sanitize.Sanitize(" ("+strings.Join(h.Members, ", ")+"): the drain waits until they are released"))
	}
	if pv := v.Protection(); pv != nil && !pv.Protected() {
		out = append(out, "  "+ctx.st.Warn.Render(render.GlyphWarn+" "+sanitize.Sanitize(pv.Text())))
	}
	return out
}
