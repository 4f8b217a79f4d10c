package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/themes"
)

// list is the cursor, the scroll window and the "/" filter of a list of
// named items, the part the pools and the members views share. The owner
// fills names and hay (one entry per item, in its order) and may order rows
// after the filter ran; the selection is tracked by name (K: a pool's
// engine.PoolRef, a member's name), since rows reorder with every snapshot.
type list[K comparable] struct {
	names []K      // every item's name
	hay   []string // lower-case text the filter searches, per item
	rows  []int    // the items shown: indices into names, filtered and ordered

	cursor, offset int
	selected       K   // zero: none
	height         int // rows that fit (at least 1)

	filter listFilter
	// keepPlace: when the selected item is gone, the cursor keeps its place
	// and, while nothing is shown, the name is kept (it may come back);
	// otherwise the first row is selected.
	keepPlace bool
}

// filterRows shows the items whose hay holds the filter's text.
func (l *list[K]) filterRows() {
	q := strings.ToLower(strings.TrimSpace(l.filter.Value()))
	l.rows = l.rows[:0]
	for i := range l.names {
		if q == "" || strings.Contains(l.hay[i], q) {
			l.rows = append(l.rows, i)
		}
	}
}

// reselect puts the cursor back on the selected name, then scrolls to it.
func (l *list[K]) reselect() {
	at := -1
	for i, r := range l.rows {
		if l.names[r] == l.selected {
			at = i
			break
		}
	}
	l.reselectAt(at)
}

// reselectAt is reselect with the selected name's row found (-1: not shown).
func (l *list[K]) reselectAt(at int) {
	found := at >= 0
	if found {
		l.cursor = at
	}
	switch {
	case found:
	case len(l.rows) == 0:
		l.cursor = 0
		if !l.keepPlace {
			var none K
			l.selected = none
		}
	case l.keepPlace:
		l.cursor = min(max(l.cursor, 0), len(l.rows)-1)
		l.selected = l.names[l.rows[l.cursor]]
	default:
		l.cursor = 0
		l.selected = l.names[l.rows[0]]
	}
	l.scroll()
}

// move moves the cursor by d rows.
func (l *list[K]) move(d int) {
	if len(l.rows) == 0 {
		return
	}
	l.cursor = min(max(l.cursor+d, 0), len(l.rows)-1)
	l.selected = l.names[l.rows[l.cursor]]
	l.scroll()
}

// setHeight sets the rows that fit.
func (l *list[K]) setHeight(h int) {
	l.height = max(h, 1)
	l.scroll()
}

func (l *list[K]) scroll() {
	n := max(l.height, 1)
	if l.cursor < l.offset {
		l.offset = l.cursor
	}
	if l.cursor >= l.offset+n {
		l.offset = l.cursor - n + 1
	}
	l.offset = max(0, min(l.offset, len(l.rows)-n))
}

// current is the index of the item under the cursor, or -1.
func (l *list[K]) current() int {
	if len(l.rows) == 0 || l.cursor >= len(l.rows) {
		return -1
	}
	return l.rows[l.cursor]
}

// clearFilter empties the filter; the owner refreshes its rows.
func (l *list[K]) clearFilter() { l.filter.SetValue("") }

// update handles the keys every list has: moving, paging and the filter
// (typed text goes to the filter while it is typed). handled is false for
// a key that is not a list key; refilter is true when the filter's text
// changed and the owner must refresh its rows.
func (l *list[K]) update(k *keyMap, msg tea.KeyMsg) (cmd tea.Cmd, handled, refilter bool) {
	if l.filter.typing {
		return nil, true, l.filter.update(k, msg)
	}
	// Fast typing can deliver "/" and what follows in one message.
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && msg.Runes[0] == '/' {
		cmd = l.filter.start()
		return cmd, true, l.filter.update(k, tea.KeyMsg{Type: tea.KeyRunes, Runes: msg.Runes[1:]})
	}
	switch {
	case key.Matches(msg, k.Up):
		l.move(-1)
	case key.Matches(msg, k.Down):
		l.move(1)
	case key.Matches(msg, k.PageUp):
		l.move(-l.height)
	case key.Matches(msg, k.PageDown):
		l.move(l.height)
	case key.Matches(msg, k.Top):
		l.move(-len(l.rows))
	case key.Matches(msg, k.Bottom):
		l.move(len(l.rows))
	case key.Matches(msg, k.Filter):
		return l.filter.start(), true, false
	default:
		return nil, false, false
	}
	return nil, true, false
}

// listFilter is a list's "/" filter: its text and whether it is being typed.
type listFilter struct {
	textinput.Model
	typing bool
}

func newListFilter(st themes.Styles, placeholder string) listFilter {
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = placeholder
	ti.CharLimit = 120
	ti.PromptStyle = st.Accent
	ti.Cursor.SetMode(cursor.CursorStatic)
	return listFilter{Model: ti}
}

// start begins typing.
func (f *listFilter) start() tea.Cmd {
	f.typing = true
	return f.Focus()
}

// active reports whether the filter is typed or narrows the list.
func (f *listFilter) active() bool { return f.typing || f.Value() != "" }

// reset empties the filter and stops typing.
func (f *listFilter) reset() {
	f.SetValue("")
	f.typing = false
	f.Blur()
}

// update takes a key typed into the filter: ApplyFilter keeps the text,
// ClearFilter clears it. It reports whether the text changed.
func (f *listFilter) update(k *keyMap, msg tea.KeyMsg) bool {
	before := f.Value()
	switch {
	case key.Matches(msg, k.ApplyFilter):
		f.typing = false
		f.Blur()
	case key.Matches(msg, k.ClearFilter):
		f.reset()
	default:
		f.Model, _ = f.Model.Update(msg)
	}
	return f.Value() != before
}
