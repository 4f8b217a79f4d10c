package tui

import (
	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/themes"
)

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

// key takes a key typed into the filter: enter keeps the text, esc clears
// it. It reports whether the text changed.
func (f *listFilter) key(msg tea.KeyMsg) bool {
	before := f.Value()
	switch msg.String() {
	case "enter":
		f.typing = false
		f.Blur()
	case "esc":
		f.reset()
	default:
		f.Model, _ = f.Model.Update(msg)
	}
	return f.Value() != before
}
