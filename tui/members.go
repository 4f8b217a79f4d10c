package tui

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// membersChrome is the body lines the members view uses besides rows: the
// title, the column header and two lines about the selected member.
const membersChrome = 4

// membersView is one pool's member list. Rows are filtered and sorted when
// the data, the filter or the sort changes; view renders only the window
// around the cursor. The selection is tracked by member name.
type membersView struct {
	list[string]
	pool   engine.PoolRef
	data   *engine.PoolView // the pool (nil: gone)
	all    []engine.Member
	index  map[string]int
	widths []int       // the widest measured text of each column (memberCols)
	counts widthCounts // how many members need each width (applyChanges)
	sort   sortKey
	// audit is the pool's audit trail, shown over the rows while open (A).
	audit auditView
}

func newMembersView(st themes.Styles) membersView {
	return membersView{
		list:  list[string]{filter: newListFilter(st, "name, state, holder, node, message…"), keepPlace: true},
		index: map[string]int{},
	}
}

// open switches to another pool: selection, filter and scroll start over.
func (l *membersView) open(pool engine.PoolRef) {
	l.pool, l.selected, l.cursor, l.offset = pool, "", 0, 0
	l.filter.reset()
}

// setData takes the pool's new members (v may be nil: the pool is gone).
func (l *membersView) setData(v *engine.PoolView) {
	l.data = v
	l.all = nil
	if v != nil {
		l.all = v.Members
	}
	l.names, l.hay = l.names[:0], l.hay[:0]
	clear(l.index)
	l.counts.reset()
	for i := range l.all {
		mm := &l.all[i]
		l.counts.add(mm, 1)
		l.names = append(l.names, mm.Name)
		l.hay = append(l.hay, render.SearchText(mm))
		l.index[mm.Name] = i
	}
	l.widths = l.counts.widths()
	l.refresh()
}

// applyChanges follows members re-observed in place (engine.PoolState's
// Update: every other member is as it was, and at the same place): only
// their search text, widths and rows are redone, each row moved to where
// the filter and the sort put it, so that the list is what setData would
// make of v, at a cost proportional to the change.
func (l *membersView) applyChanges(v *engine.PoolView, changes []engine.MemberChange) {
	if len(v.Members) != len(l.names) || l.data == nil {
		l.setData(v)
		return
	}
	l.data, l.all = v, v.Members
	if len(changes) == 0 {
		return
	}
	q := l.query()
	// Every changed member goes back to its old value, so that the rows
	// are in order; then, one by one, each takes its new value and its
	// row moves where it belongs.
	cur := make([]engine.Member, len(changes))
	for i, c := range changes {
		cur[i], l.all[c.Pos] = l.all[c.Pos], c.Old
	}
	for i, c := range changes {
		was := q == "" || strings.Contains(l.hay[c.Pos], q)
		at := -1
		if was {
			if at = l.rowOf(c.Pos); at < 0 {
				// Not where the order says: start over from the data.
				for j, c := range changes[i:] {
					l.all[c.Pos] = cur[i+j]
				}
				l.setData(v)
				return
			}
		}
		l.counts.add(&l.all[c.Pos], -1)
		l.all[c.Pos] = cur[i]
		mm := &l.all[c.Pos]
		l.counts.add(mm, 1)
		l.hay[c.Pos] = render.SearchText(mm)
		is := q == "" || strings.Contains(l.hay[c.Pos], q)
		switch {
		case was && is:
			if (at == 0 || l.cmp(l.rows[at-1], c.Pos) < 0) && (at == len(l.rows)-1 || l.cmp(c.Pos, l.rows[at+1]) < 0) {
				continue // still in its place
			}
			l.rows = slices.Delete(l.rows, at, at+1)
			l.insertRow(c.Pos)
		case was:
			l.rows = slices.Delete(l.rows, at, at+1)
		case is:
			l.insertRow(c.Pos)
		}
	}
	l.widths = l.counts.widths()
	l.reselect()
}

// query is the filter's text as filterRows matches it.
func (l *membersView) query() string { return strings.ToLower(strings.TrimSpace(l.filter.Value())) }

// rowOf is the row of member i, found by the order of the rows, or -1.
func (l *membersView) rowOf(i int) int {
	at := sort.Search(len(l.rows), func(k int) bool { return l.cmp(l.rows[k], i) >= 0 })
	if at < len(l.rows) && l.rows[at] == i {
		return at
	}
	return -1
}

// insertRow puts member i among the rows, in order.
func (l *membersView) insertRow(i int) {
	at := sort.Search(len(l.rows), func(k int) bool { return l.cmp(l.rows[k], i) >= 0 })
	l.rows = slices.Insert(l.rows, at, i)
}

// reselect is list.reselect with the selected member's row found by its
// place in the order rather than by a scan.
func (l *membersView) reselect() {
	at := -1
	if i, ok := l.index[l.selected]; ok && i < len(l.all) && l.selected != "" {
		at = l.rowOf(i)
	}
	l.reselectAt(at)
}

// refresh filters and sorts, then puts the cursor back on the selected name.
func (l *membersView) refresh() {
	l.filterRows()
	l.sortRows()
	l.reselect()
}

// show opens pool (selection, filter and scroll start over for another
// pool) with its members of ctx.
func (l *membersView) show(ctx viewContext, pool engine.PoolRef) {
	if l.pool != pool {
		l.open(pool)
	}
	l.setData(ctx.pool(pool))
}

// opened is the pool open in the view (zero: none): the feed follows its
// members' changes.
func (l *membersView) opened() engine.PoolRef { return l.pool }

// reload takes the open pool's members of ctx after a whole load.
func (l *membersView) reload(ctx viewContext) {
	if l.pool != (engine.PoolRef{}) {
		l.setData(ctx.pool(l.pool))
	}
}

// follow takes the changes of the open pool's members (applyChanges).
func (l *membersView) follow(ctx viewContext, changes []engine.MemberChange) {
	if v := ctx.pool(l.pool); v != nil {
		l.applyChanges(v, changes)
	}
}

// closeAudit closes the audit trail.
func (l *membersView) closeAudit() { l.audit.open = false }

// startOver is a new members view that drops a late answer of this one's
// audit trail (a switch of namespaces).
func (l *membersView) startOver(st themes.Styles) membersView {
	n := newMembersView(st)
	n.audit.req = l.audit.req
	return n
}

// setHeight takes the body's height.
func (l *membersView) setHeight(h int) { l.list.setHeight(h - membersChrome) }

// capturing: the filter is typed (under the audit trail too).
func (l *membersView) capturing() bool { return l.filter.typing }

// about is the pool and the selected member.
func (l *membersView) about(viewContext) (engine.PoolRef, *engine.Member) {
	return l.pool, l.current()
}

// help is the filter's keys while it is typed, else enter, the members'
// actions and the view's keys.
func (l *membersView) help(ctx viewContext) []key.Binding {
	k := ctx.keys
	if l.filter.typing {
		return []key.Binding{k.ApplyFilter, k.ClearFilter}
	}
	keys := append([]key.Binding{withHelp(k.Open, "details")}, k.actionsOn(screenMembers, l.data)...)
	return append(keys, k.Filter, k.Sort, k.Audit, k.Back, k.Help)
}

func (l *membersView) cycleSort() {
	l.sort = (l.sort + 1) % numSortKeys
	l.refresh()
}

// current is the selected member, or nil.
func (l *membersView) current() *engine.Member {
	if i := l.list.current(); i >= 0 {
		return &l.all[i]
	}
	return nil
}

// lookup finds a member of the open pool by name.
func (l *membersView) lookup(name string) *engine.Member {
	if i, ok := l.index[name]; ok && i < len(l.all) {
		return &l.all[i]
	}
	return nil
}

// update handles a key: the list's keys, S, A, esc, enter (A and esc close
// the audit trail while it is open); any other key may be an action on the
// selected member. It takes the answers of the audit trail's reads, and an
// action's end (the trail reads the Event it wrote).
func (l *membersView) update(ctx viewContext, msg tea.Msg) (intent, tea.Cmd) {
	var km tea.KeyMsg
	switch msg := msg.(type) {
	case auditMsg:
		l.audit.take(msg)
		return nil, nil
	case actionDoneMsg:
		return nil, l.audit.refresh(ctx)
	case tea.KeyMsg:
		km = msg
	default:
		return nil, nil
	}
	if l.audit.open && !l.filter.typing && key.Matches(km, ctx.keys.Audit, ctx.keys.Back) {
		l.audit.open = false
		return nil, nil
	}
	cmd, handled, refilter := l.list.update(ctx.keys, km)
	if refilter {
		l.refresh()
	}
	if handled {
		return nil, cmd
	}
	k := ctx.keys
	switch {
	case key.Matches(km, k.Sort):
		l.cycleSort()
	case key.Matches(km, k.Audit):
		return nil, l.audit.show(ctx, l.pool)
	case key.Matches(km, k.Back):
		if l.filter.Value() == "" {
			return showScreen{screenPools}, nil
		}
		l.clearFilter()
		l.refresh()
	case key.Matches(km, k.Open):
		if mm := l.current(); mm != nil {
			return openMember{pool: l.pool, member: mm.Name}, nil
		}
	default:
		return actionKey{msg: km, pool: l.pool, member: l.current()}, nil
	}
	return nil, nil
}

// view renders the title, the visible rows and two lines about the
// selected member.
func (l *membersView) view(ctx viewContext) string {
	if l.audit.open {
		return l.audit.view(ctx)
	}
	st := ctx.st
	v := l.data
	var b strings.Builder
	if v == nil {
		b.WriteString(st.Error.Render(render.GlyphBad+" pool "+sanitize.Sanitize(refTitle(ctx.fleet, l.pool))+" is gone") + st.Muted.Render("  (esc back)"))
		return b.String()
	}
	status := v.Status
	title := st.Accent.Render(sanitize.Sanitize(ctx.title(v))) + st.Muted.Render(fmt.Sprintf(" · %s · %s · %d ready · %d claimed · %d free",
		sanitize.Sanitize(v.Spec.BackendName()), render.Plural(len(v.Members), "member", "members"), status.Ready, status.Claimed, status.Free))
	switch {
	case render.ExhaustedGrowing(v):
		title += " " + st.Warn.Render(render.GlyphAbove+" "+render.ExhaustedWords(v))
	case v.Spec.Elastic() && status.Exhausted:
		title += " " + st.Error.Render(fmt.Sprintf("%s EXHAUSTED at ceiling %d", render.GlyphWarn, v.Spec.MaxSize))
	case status.Exhausted:
		title += " " + st.Error.Render(render.GlyphWarn+" EXHAUSTED")
	}
	if ro := render.Rollout(v, ctx.now); ro != nil {
		switch ro.State {
		case render.RolloutHalted:
			title += " " + st.Error.Render(render.GlyphWarn+" ROLLOUT HALTED")
		case render.RolloutRolling:
			title += " " + st.Warn.Render(render.GlyphDrift+" "+render.RolloutShort(ro))
		}
	}
	if len(v.Problems) > 0 {
		title += " " + st.Error.Render(render.GlyphBad+" "+sanitize.Sanitize(strings.Join(v.Problems, "; ")))
	}
	for _, h := range v.DrainHolds() {
		title += " " + st.Warn.Render(render.GlyphWarn+" "+sanitize.Sanitize(engine.DrainHoldText(h)))
	}
	right := st.Muted.Render(fmt.Sprintf("sort: %s ▲", l.sort))
	if l.filter.active() {
		right = fmt.Sprintf("%s %s", l.filter.View(), st.Muted.Render(fmt.Sprintf("(%d/%d)", len(l.rows), len(l.all)))) + "  " + right
	}
	b.WriteString(spread(" "+title, right, ctx.width))
	cols := memberColumns(ctx.width, l.widths)
	b.WriteString("\n  " + st.ColumnHeader.Render(headerCells(cols)))
	n := l.height
	end := min(l.offset+n, len(l.rows))
	for i := l.offset; i < end; i++ {
		b.WriteString("\n" + l.row(ctx, cols, &l.all[l.rows[i]], i == l.cursor))
	}
	for i := end - l.offset; i < n; i++ {
		b.WriteString("\n")
	}
	switch mm := l.current(); {
	case mm != nil:
		lead := render.GlyphCursor + " " + sanitize.Sanitize(mm.Name) + ": "
		why := explainMember(v, mm, ctx.now, ctx.hints)
		if d := diagnose(v, mm, nil, ctx.nodes, ctx.hints); d.Reason != "" {
			why = d.Reason + "; " + why
		}
		text := wrapIndent(lead+sanitize.Sanitize(why), ctx.width, 2)
		if len(text) > 2 {
			text = text[:2]
			text[1] = sanitize.Cut(text[1]+" "+render.GlyphEllipsis, ctx.width)
		}
		for len(text) < 2 {
			text = append(text, "")
		}
		b.WriteString("\n" + strings.Join(text, "\n"))
	case len(l.all) > 0:
		b.WriteString("\n" + st.Muted.Render("  no member matches the filter (esc clears it)"))
	default:
		text := wrapIndent("no members · "+sanitize.Sanitize(poolExplanation(v)), ctx.width-2, 2)
		for i := 0; i < min(len(text), 2); i++ {
			b.WriteString("\n  " + st.Muted.Render(text[i]))
		}
	}
	return b.String()
}

// row renders one member's line: render's row of the member, styled.
func (l *membersView) row(ctx viewContext, cols []column, mm *engine.Member, selected bool) string {
	r := memberCells{Row: render.MemberRow(mm, ctx.now), message: render.Reason(l.data, mm, ctx.nodes)}
	if r.Retry != "" {
		// A failing member's backoff leads its message: when the
		// reconciler builds it again is what the admin reads it for.
		r.message = r.Retry + " · " + r.message
	}
	line := memberLine(cols, &r)
	if selected {
		return ctx.st.Selected.Render(render.GlyphCursor + " " + line)
	}
	if level := int(r.Level); level >= levelWarn {
		return "  " + ctx.level(level).Render(line)
	}
	return "  " + line
}
