package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// keyMap holds every binding of every view; the actions' come from the
// action table (actions). Bindings of actions that write are disabled in
// read-only mode: they match nothing and are not listed in help; so are the
// dialogs' enter and tab, since no dialog opens there (esc, Cancel, also
// ends a search in the log view).
type keyMap struct {
	Interrupt                               key.Binding // ctrl+c: quits from anywhere, even while text is typed
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Open, Back, Filter, Sort, Wall, Log     key.Binding
	Audit                                   key.Binding
	// Copy (y) copies the selected member's name, or the pool's --once
	// command line; CopyConsole (Y) the member's console command.
	Copy, CopyConsole key.Binding
	Help, Quit        key.Binding
	// Command opens the `:` command line (command.go); enabled with a Scoper.
	Command key.Binding

	// A list's filter while it is typed.
	ApplyFilter, ClearFilter key.Binding

	// actions are the action table's keys, in its order.
	actions []actionBinding

	// The log view (logs_view.go).
	Scroll, Follow, Previous, Wrap, Search, NextMatch, PrevMatch key.Binding

	Confirm, Cancel, NextButton key.Binding
}

// newKeyMap builds the key map, with the settings' overrides (KeyNames'
// names) applied.
func newKeyMap(readOnly bool, overrides map[string][]string) keyMap {
	k := keyMap{
		Interrupt:   key.NewBinding(key.WithKeys("ctrl+c")),
		Up:          key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:        key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:      key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown:    key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Top:         key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "first")),
		Bottom:      key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "last")),
		Open:        key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Back:        key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Filter:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Sort:        key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "sort")),
		Wall:        key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "wall/table")),
		Log:         key.NewBinding(key.WithKeys("L"), key.WithHelp("L", "action log")),
		Audit:       key.NewBinding(key.WithKeys("A"), key.WithHelp("A", "audit")),
		Copy:        key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "copy")),
		CopyConsole: key.NewBinding(key.WithKeys("Y"), key.WithHelp("Y", "copy cmd")),
		Help:        key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:        key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		Command:     commandKey(),

		ApplyFilter: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply filter")),
		ClearFilter: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),

		Scroll:    key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "scroll")),
		Follow:    key.NewBinding(key.WithKeys("f"), key.WithHelp("f/G", "follow")),
		Previous:  key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "previous")),
		Wrap:      key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "wrap")),
		Search:    key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search")),
		NextMatch: key.NewBinding(key.WithKeys("n"), key.WithHelp("n/N", "next/prev")),
		PrevMatch: key.NewBinding(key.WithKeys("N")),

		Confirm:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "choose")),
		Cancel:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		NextButton: key.NewBinding(key.WithKeys("tab", "left", "right", "h", "l"), key.WithHelp("tab/←/→", "switch button")),
	}
	for i := range actionTable {
		a := &actionTable[i]
		k.actions = append(k.actions, actionBinding{b: a.binding(readOnly), act: a})
	}
	if readOnly {
		for _, b := range []*key.Binding{&k.Confirm, &k.NextButton} {
			b.SetEnabled(false)
		}
	}
	k.applyKeys(overrides)
	return k
}

// actionBinding is an action's key in this key map.
type actionBinding struct {
	b   key.Binding
	act *action
}

// ShortHelp lists the keys that work everywhere.
func (k keyMap) ShortHelp() []key.Binding { return []key.Binding{k.Help, k.Quit} }

// FullHelp lists every view's keys in columns: moving; views and the
// lists' filter; actions, then the log view's keys; general, then the
// dialogs' keys.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Open, k.Back, k.Filter, k.ApplyFilter, k.ClearFilter, k.Sort, k.Wall, k.Audit},
		append(k.actionKeys(), k.Follow, k.Previous, k.Wrap, k.Search, k.NextMatch),
		{k.Log, k.Command, k.Copy, k.CopyConsole, k.Help, k.Quit, k.NextButton, k.Confirm, k.Cancel},
	}
}

// actionKeys are the actions' bindings, in the table's order.
func (k keyMap) actionKeys() []key.Binding {
	out := make([]key.Binding, 0, len(k.actions))
	for _, ab := range k.actions {
		out = append(out, ab.b)
	}
	return out
}

// actionsOn are the bindings of the actions a screen's short help lists,
// those that act on what it shows first: on the pools screen the pool's
// actions, then the others; on a member's screens the member's.
func (k keyMap) actionsOn(s screen, v *engine.PoolView) []key.Binding {
	var first, then []key.Binding
	for _, ab := range k.actions {
		if !ab.act.on.has(s) || ab.act.listed != nil && !ab.act.listed(v) {
			continue
		}
		if (ab.act.scope == scopePool) == (s == screenPools) {
			first = append(first, ab.b)
		} else {
			then = append(then, ab.b)
		}
	}
	return append(first, then...)
}

func withHelp(b key.Binding, desc string) key.Binding {
	b.SetHelp(b.Help().Key, desc)
	return b
}

// actionFor returns the action of the key msg (nil: no action key).
func (k *keyMap) actionFor(msg tea.KeyMsg) *action {
	for _, ab := range k.actions {
		if key.Matches(msg, ab.b) {
			return ab.act
		}
	}
	return nil
}

// action returns the binding of the action named name (a disabled binding
// when there is none).
func (k *keyMap) action(name string) key.Binding {
	for _, ab := range k.actions {
		if ab.act.name == name {
			return ab.b
		}
	}
	b := key.NewBinding()
	b.SetEnabled(false)
	return b
}
