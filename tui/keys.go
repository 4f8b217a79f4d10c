package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap holds every binding. Action bindings are disabled in read-only mode:
// they match nothing and are not listed in help.
type keyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Open, Back, Filter, Sort, Wall, Log     key.Binding
	Audit                                   key.Binding
	Help, Quit                              key.Binding

	Reconcile, Resize, Delete, Release, ForceRelease key.Binding
	Console, Logs, Assign                            key.Binding

	Confirm, Cancel, NextButton key.Binding
}

func newKeyMap(readOnly bool) keyMap {
	k := keyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "first")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "last")),
		Open:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Filter:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Sort:     key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "sort")),
		Wall:     key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "wall/table")),
		Log:      key.NewBinding(key.WithKeys("L"), key.WithHelp("L", "action log")),
		Audit:    key.NewBinding(key.WithKeys("A"), key.WithHelp("A", "audit")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),

		Reconcile:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reconcile")),
		Resize:       key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "resize")),
		Delete:       key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "delete pool")),
		Release:      key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "release")),
		ForceRelease: key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "force-release")),
		Console:      key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "console")),
		Logs:         key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "logs")),
		Assign:       key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "assign")),

		Confirm:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "choose")),
		Cancel:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		NextButton: key.NewBinding(key.WithKeys("tab", "left", "right", "h", "l"), key.WithHelp("tab/←/→", "switch button")),
	}
	if readOnly {
		// Console (pods/exec create) and assign are writes; logs are a read.
		for _, b := range []*key.Binding{&k.Reconcile, &k.Resize, &k.Delete, &k.Release, &k.ForceRelease, &k.Console, &k.Assign} {
			b.SetEnabled(false)
		}
	}
	return k
}

// ShortHelp lists the keys that work everywhere.
func (k keyMap) ShortHelp() []key.Binding { return []key.Binding{k.Help, k.Quit} }

// FullHelp lists every key in columns: moving, views, actions, general.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Open, k.Back, k.Filter, k.Sort, k.Wall, k.Audit},
		{k.Reconcile, k.Resize, k.Delete, k.Release, k.ForceRelease, k.Assign, k.Console, k.Logs},
		{k.Log, k.Help, k.Quit},
	}
}

// screenHelp is the help of one screen (help.KeyMap).
type screenHelp struct {
	short []key.Binding
	full  [][]key.Binding
}

func (h screenHelp) ShortHelp() []key.Binding  { return h.short }
func (h screenHelp) FullHelp() [][]key.Binding { return h.full }

// helpFor returns the short help line of a screen.
func (k keyMap) helpFor(s screen, filtering bool) screenHelp {
	var short []key.Binding
	switch {
	case filtering:
		short = []key.Binding{
			key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply filter")),
			key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
		}
	case s == screenWall:
		short = []key.Binding{k.Wall, k.Help, k.Quit}
	case s == screenPools:
		short = []key.Binding{withHelp(k.Open, "members"), k.Reconcile, k.Resize, k.Delete, k.Assign, k.Filter, k.Wall, k.Log, k.Help, k.Quit}
	case s == screenMembers:
		short = []key.Binding{withHelp(k.Open, "details"), k.Logs, k.Console, k.Assign, k.ForceRelease, k.Release, k.Reconcile, k.Resize, k.Filter, k.Sort, k.Audit, k.Back, k.Help}
	case s == screenDetail:
		short = []key.Binding{k.Logs, k.Console, k.ForceRelease, k.Release, k.Reconcile, k.Back, k.Help, k.Quit}
	case s == screenLogs:
		short = logsHelp()
	}
	return screenHelp{short: short, full: k.FullHelp()}
}

func withHelp(b key.Binding, desc string) key.Binding {
	b.SetHelp(b.Help().Key, desc)
	return b
}
