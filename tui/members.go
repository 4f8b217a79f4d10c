package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/themes"
	"github.com/ctpool-tui/ctpool-tui/tui/sanitize"
)

// sortKey is a column the members view can sort by (S cycles).
type sortKey int

const (
	sortIndex sortKey = iota
	sortState
	sortHolder
	sortLeft
	sortNode
	sortAge
	numSortKeys
)

func (k sortKey) String() string {
	switch k {
	case sortState:
		return "state"
	case sortHolder:
		return "holder"
	case sortLeft:
		return "time left"
	case sortNode:
		return "node"
	case sortAge:
		return "age"
	}
	return "member"
}

// membersChrome is the body lines the members view uses besides rows: the
// title, the column header and two lines about the selected member.
const membersChrome = 4

// membersModel is one pool's member list. Rows are filtered and sorted when
// the data, the filter or the sort changes; View renders only the window
// around the cursor. The selection is tracked by member name.
type membersModel struct {
	pool   string
	view   *engine.PoolView
	all    []engine.Member
	hay    []string // lower-case text the filter searches, per member
	index  map[string]int
	rows   []int // indexes into all, filtered and sorted
	widths colWidths

	sort   sortKey
	filter listFilter

	cursor, offset int
	selected       string
	width, height  int
}

func newMembersModel(st themes.Styles) membersModel {
	return membersModel{filter: newListFilter(st, "name, state, holder, node, message…"), index: map[string]int{}}
}

// open switches to another pool: selection, filter and scroll start over.
func (l *membersModel) open(pool string) {
	l.pool, l.selected, l.cursor, l.offset = pool, "", 0, 0
	l.filter.reset()
}

// setData takes the pool's new members (v may be nil: the pool is gone).
func (l *membersModel) setData(v *engine.PoolView) {
	l.view = v
	l.all = nil
	if v != nil {
		l.all = v.Members
	}
	l.hay = l.hay[:0]
	clear(l.index)
	l.widths = colWidths{}
	for i := range l.all {
		mm := &l.all[i]
		w := &l.widths
		w.name = max(w.name, sanitize.Width(mm.Name))
		w.holder = max(w.holder, sanitize.Width(holderCell(mm)))
		w.marks = max(w.marks, sanitize.Width(marksText(mm)))
		w.node = max(w.node, sanitize.Width(mm.Node))
		l.hay = append(l.hay, searchText(mm))
		l.index[mm.Name] = i
	}
	l.refresh()
}

// searchText is what the filter matches, lower-cased once per snapshot.
func searchText(mm *engine.Member) string {
	parts := []string{mm.Name, string(mm.State), mm.Holder(), mm.Node, mm.Message, marksText(mm)}
	parts = append(parts, mm.Problems...)
	if mm.Claimed && mm.Claim != nil && mm.Claim.Expired {
		parts = append(parts, "expired")
	}
	if mm.Free {
		parts = append(parts, "free")
	}
	if mm.Claimed {
		parts = append(parts, "claimed")
	}
	return strings.ToLower(clean(strings.Join(parts, " ")))
}

// refresh filters and sorts, then puts the cursor back on the selected name.
func (l *membersModel) refresh() {
	q := strings.ToLower(strings.TrimSpace(l.filter.Value()))
	l.rows = l.rows[:0]
	for i := range l.all {
		if q == "" || strings.Contains(l.hay[i], q) {
			l.rows = append(l.rows, i)
		}
	}
	l.sortRows()
	// The selected name wins; when it is gone the cursor keeps its place.
	for i, r := range l.rows {
		if l.all[r].Name == l.selected {
			l.cursor = i
			break
		}
	}
	l.syncSelected()
	l.scroll()
}

func (l *membersModel) sortRows() {
	if l.sort == sortIndex {
		return // Observe already orders by index
	}
	all := l.all
	less := func(a, b *engine.Member) (bool, bool) { return false, false }
	switch l.sort {
	case sortState:
		less = func(a, b *engine.Member) (bool, bool) {
			ra, rb := stateRank(a.State), stateRank(b.State)
			return ra < rb, ra != rb
		}
	case sortHolder:
		less = func(a, b *engine.Member) (bool, bool) { return lessEmptyLast(a.Holder(), b.Holder()) }
	case sortLeft:
		less = func(a, b *engine.Member) (bool, bool) {
			ea, eb := expiry(a), expiry(b)
			switch {
			case ea.IsZero() && eb.IsZero():
				return false, false
			case ea.IsZero() || eb.IsZero():
				return eb.IsZero(), true
			}
			return ea.Before(eb), !ea.Equal(eb)
		}
	case sortNode:
		less = func(a, b *engine.Member) (bool, bool) { return lessEmptyLast(a.Node, b.Node) }
	case sortAge:
		less = func(a, b *engine.Member) (bool, bool) {
			ca, cb := a.Created, b.Created
			switch {
			case ca.IsZero() && cb.IsZero():
				return false, false
			case ca.IsZero() || cb.IsZero():
				return cb.IsZero(), true
			}
			return ca.Before(cb), !ca.Equal(cb)
		}
	}
	sort.SliceStable(l.rows, func(i, j int) bool {
		v, decided := less(&all[l.rows[i]], &all[l.rows[j]])
		if decided {
			return v
		}
		return l.rows[i] < l.rows[j]
	})
}

func lessEmptyLast(a, b string) (bool, bool) {
	switch {
	case a == b:
		return false, false
	case a == "":
		return false, true
	case b == "":
		return true, true
	}
	return a < b, true
}

// stateRank orders states worst first.
func stateRank(s engine.State) int {
	switch s {
	case engine.StateFailed:
		return 0
	case engine.StateUnschedulable:
		return 1
	case engine.StateTerminating:
		return 2
	case engine.StateMissing:
		return 3
	case engine.StateStopped:
		return 4
	case engine.StateStarting:
		return 5
	}
	return 6
}

func expiry(mm *engine.Member) time.Time {
	if mm.Claimed && mm.Claim != nil {
		return mm.Claim.Expires
	}
	return time.Time{}
}

func (l *membersModel) cycleSort() {
	l.sort = (l.sort + 1) % numSortKeys
	l.refresh()
}

func (l *membersModel) move(d int) {
	if len(l.rows) == 0 {
		return
	}
	l.cursor = min(max(l.cursor+d, 0), len(l.rows)-1)
	l.syncSelected()
	l.scroll()
}

func (l *membersModel) syncSelected() {
	if len(l.rows) == 0 {
		l.cursor = 0
		return // keep the name: it may come back
	}
	l.cursor = min(max(l.cursor, 0), len(l.rows)-1)
	l.selected = l.all[l.rows[l.cursor]].Name
}

func (l *membersModel) setSize(w, h int) {
	l.width, l.height = w, h
	l.scroll()
}

// visible is how many rows fit.
func (l *membersModel) visible() int { return max(l.height-membersChrome, 1) }

func (l *membersModel) scroll() {
	n := l.visible()
	if l.cursor < l.offset {
		l.offset = l.cursor
	}
	if l.cursor >= l.offset+n {
		l.offset = l.cursor - n + 1
	}
	l.offset = max(0, min(l.offset, len(l.rows)-n))
}

// current is the selected member, or nil.
func (l *membersModel) current() *engine.Member {
	if len(l.rows) == 0 || l.cursor >= len(l.rows) {
		return nil
	}
	return &l.all[l.rows[l.cursor]]
}

// lookup finds a member of the open pool by name.
func (l *membersModel) lookup(name string) *engine.Member {
	if i, ok := l.index[name]; ok && i < len(l.all) {
		return &l.all[i]
	}
	return nil
}

func (l *membersModel) startFilter() tea.Cmd { return l.filter.start() }

func (l *membersModel) clearFilter() {
	l.filter.SetValue("")
	l.refresh()
}

func (l *membersModel) updateFilter(msg tea.KeyMsg) {
	if l.filter.key(msg) {
		l.refresh()
	}
}

// marksText lists a member's markers, each a glyph and a word.
func marksText(mm *engine.Member) string {
	var marks []string
	if mm.Drift {
		marks = append(marks, glyphDrift+" drift")
	}
	if mm.Maintenance {
		if mm.MaintenanceStale {
			marks = append(marks, glyphMaint+" stale maint")
		} else {
			marks = append(marks, glyphMaint+" maint")
		}
	}
	if mm.AboveSize {
		marks = append(marks, glyphAbove+" above size")
	}
	if n := len(mm.Problems); n > 0 {
		marks = append(marks, glyphProblem+" "+plural(n, "problem", "problems"))
	}
	return strings.Join(marks, " ")
}

// claimCells returns the CLAIMED and LEFT cells and how urgent the claim is.
func claimCells(mm *engine.Member, now time.Time) (claimed, left string, level int) {
	if !mm.Claimed || mm.Claim == nil {
		return "", "", levelNone
	}
	c := mm.Claim
	if !c.Acquired.IsZero() {
		claimed = short(now.Sub(c.Acquired))
	}
	switch {
	case c.Expires.IsZero() || !now.Before(c.Expires):
		return claimed, glyphBad + " expired", levelError
	case c.Expires.Sub(now) <= engine.ExpiringSoon:
		return claimed, glyphWarn + " " + short(c.Expires.Sub(now)), levelWarn
	}
	return claimed, short(c.Expires.Sub(now)), levelNone
}

// colWidths are the widths the data needs, measured once per snapshot.
type colWidths struct{ name, holder, marks, node int }

func memberColumns(width int, w colWidths) []column {
	return fitColumns([]column{
		{title: "MEMBER", width: min(max(w.name, 6), 22)},
		{title: "STATE", width: 13},
		{title: "HOLDER", width: min(max(w.holder, 6), 16), flex: true, max: min(max(w.holder, 6), 30)},
		{title: "CLAIMED", width: 7, right: true, drop: 4},
		{title: "LEFT", width: 9},
		{title: "MARKS", width: min(max(w.marks, 5), 24), drop: 1},
		{title: "NODE", width: min(max(w.node, 4), 10), flex: true, max: min(max(w.node, 4), 20), drop: 2},
		{title: "AGE", width: 5, right: true, drop: 3},
		{title: "MESSAGE", width: 12, flex: true, drop: 5},
	}, width, 2)
}

// holderCell is the HOLDER cell: the claim holder, the reconciler, or a dash.
func holderCell(mm *engine.Member) string {
	switch {
	case mm.Maintenance:
		return glyphMaint + " reconciler"
	case mm.Holder() == "":
		return glyphNone
	}
	return mm.Holder()
}

func (m *Model) memberRow(cols []column, mm *engine.Member, selected bool) string {
	holder := holderCell(mm)
	claimed, left, level := claimCells(mm, m.now)
	age := ""
	if !mm.Created.IsZero() {
		age = short(m.now.Sub(mm.Created))
	}
	msg := reasonCell(m.members.view, mm, m.side.nodes)
	line := cells(cols, map[string]string{
		"MEMBER": mm.Name, "STATE": string(mm.State), "HOLDER": holder, "CLAIMED": claimed,
		"LEFT": left, "MARKS": marksText(mm), "NODE": mm.Node, "AGE": age, "MESSAGE": msg,
	})
	if selected {
		return m.st.Selected.Render(glyphCursor + " " + line)
	}
	if l := memberLevel(mm); l > level {
		level = l
	}
	if level >= levelWarn {
		return "  " + m.levelStyle(level).Render(line)
	}
	return "  " + line
}

func memberLevel(mm *engine.Member) int {
	switch {
	case mm.State == engine.StateFailed || len(mm.Problems) > 0:
		return levelError
	case mm.State == engine.StateUnschedulable || mm.MaintenanceStale:
		return levelWarn
	}
	return levelNone
}

func (m *Model) membersView() string {
	l := &m.members
	v := l.view
	var b strings.Builder
	if v == nil {
		b.WriteString(m.st.Error.Render(glyphBad+" pool "+clean(l.pool)+" is gone") + m.st.Muted.Render("  (esc back)"))
		return b.String()
	}
	st := v.Status
	title := m.st.Accent.Render(clean(v.Name)) + m.st.Muted.Render(fmt.Sprintf(" · %s · %s · %d ready · %d claimed · %d free",
		clean(v.Spec.BackendName()), plural(len(v.Members), "member", "members"), st.Ready, st.Claimed, st.Free))
	if st.Exhausted {
		title += " " + m.st.Error.Render(glyphWarn+" EXHAUSTED")
	}
	if len(v.Problems) > 0 {
		title += " " + m.st.Error.Render(glyphBad+" "+clean(strings.Join(v.Problems, "; ")))
	}
	right := m.st.Muted.Render(fmt.Sprintf("sort: %s ▲", l.sort))
	if l.filter.active() {
		right = fmt.Sprintf("%s %s", l.filter.View(), m.st.Muted.Render(fmt.Sprintf("(%d/%d)", len(l.rows), len(l.all)))) + "  " + right
	}
	b.WriteString(spread(" "+title, right, m.width))
	cols := memberColumns(m.width, l.widths)
	b.WriteString("\n  " + m.st.ColumnHeader.Render(headerCells(cols)))
	n := l.visible()
	end := min(l.offset+n, len(l.rows))
	for i := l.offset; i < end; i++ {
		b.WriteString("\n" + m.memberRow(cols, &l.all[l.rows[i]], i == l.cursor))
	}
	for i := end - l.offset; i < n; i++ {
		b.WriteString("\n")
	}
	switch mm := l.current(); {
	case mm != nil:
		lead := glyphCursor + " " + clean(mm.Name) + ": "
		why := explainMember(v, mm, m.now, m.opts.Actions != nil)
		if d := diagnose(v, mm, nil, m.side.nodes); d.Reason != "" {
			why = d.Reason + "; " + why
		}
		text := wrapIndent(lead+clean(why), m.width, 2)
		if len(text) > 2 {
			text = text[:2]
			text[1] = cut(text[1]+" "+glyphEllipsis, m.width)
		}
		for len(text) < 2 {
			text = append(text, "")
		}
		b.WriteString("\n" + strings.Join(text, "\n"))
	case len(l.all) > 0:
		b.WriteString("\n" + m.st.Muted.Render("  no member matches the filter (esc clears it)"))
	default:
		text := wrapIndent("no members · "+clean(poolExplanation(v)), m.width-2, 2)
		for i := 0; i < min(len(text), 2); i++ {
			b.WriteString("\n  " + m.st.Muted.Render(text[i]))
		}
	}
	return b.String()
}
