package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/ctpool-tui/ctpool-tui/engine"
	goldenfile "github.com/ctpool-tui/ctpool-tui/internal/golden"
)

// golden compares got with testdata/name.golden (go test ./tui/ -update,
// or make golden, rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Assert(t, filepath.Join("testdata", name+".golden"), got)
}

// lineDiff lists the lines where got differs from want.
func lineDiff(want, got string) string { return goldenfile.Diff(want, got) }

// checkScreen asserts a rendered screen is exactly width x height cells and
// holds no escape or control character.
func checkScreen(t *testing.T, s string, width, height int) {
	t.Helper()
	lines := strings.Split(s, "\n")
	if len(lines) != height {
		t.Errorf("screen has %d lines, want %d", len(lines), height)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("line %d is %d cells wide (max %d): %q", i+1, w, width, l)
		}
		for _, r := range l {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
				t.Errorf("line %d holds control character %U: %q", i+1, r, l)
				break
			}
		}
	}
}

// keyMsg builds the key message bubbletea would send for a key name.
func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEscape}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "left":
		return tea.KeyMsg{Type: tea.KeyLeft}
	case "right":
		return tea.KeyMsg{Type: tea.KeyRight}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "pgup":
		return tea.KeyMsg{Type: tea.KeyPgUp}
	case "home":
		return tea.KeyMsg{Type: tea.KeyHome}
	case "end":
		return tea.KeyMsg{Type: tea.KeyEnd}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// press sends keys and returns the Cmd of the last one.
func press(m *Model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		_, cmd = m.Update(keyMsg(k))
	}
	return cmd
}

// typeText sends each rune as a key.
func typeText(m *Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

// waitMsg runs cmd (and the Cmds of a batch) in goroutines and returns the
// first message of type T, failing after a deadline. Timers in the batch
// (ticks) simply never answer in time.
func waitMsg[T any](t *testing.T, cmd tea.Cmd) T {
	t.Helper()
	var zero T
	if cmd == nil {
		t.Fatalf("no Cmd returned, want one producing %T", zero)
	}
	out := make(chan tea.Msg, 64)
	var run func(tea.Cmd)
	run = func(c tea.Cmd) {
		go func() {
			msg := c()
			if batch, ok := msg.(tea.BatchMsg); ok {
				for _, c := range batch {
					if c != nil {
						run(c)
					}
				}
				return
			}
			out <- msg
		}()
	}
	run(cmd)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case msg := <-out:
			if v, ok := msg.(T); ok {
				return v
			}
		case <-deadline:
			t.Fatalf("no %T within 5s", zero)
			return zero
		}
	}
}

// runEvents runs an events Cmd synchronously (the fake answers at once).
func runEvents(cmd tea.Cmd) (tea.Msg, bool) {
	if cmd == nil {
		return nil, false
	}
	msg := cmd()
	if e, ok := msg.(eventsMsg); ok {
		return e, true
	}
	return nil, false
}

// screenLine is line i of the rendered screen (negative: from the end).
func screenLine(m *Model, i int) string {
	lines := strings.Split(m.View(), "\n")
	if i < 0 {
		i += len(lines)
	}
	return lines[i]
}

// header is the top line; status the line above the help line.
func header(m *Model) string   { return screenLine(m, 0) }
func status(m *Model) string   { return screenLine(m, -2) }
func helpLine(m *Model) string { return screenLine(m, -1) }

// poolRefIn is the ref of the pool of m the user sees as title (poolTitle;
// a lookup, not a parse), or a ref of that name in no namespace when no
// pool is seen so.
func poolRefIn(m *Model, title string) engine.PoolRef {
	for _, views := range [][]engine.PoolView{m.pools, m.feed.watched} {
		for i := range views {
			if poolTitle(m.opts.Fleet, &views[i]) == title {
				return views[i].Ref()
			}
		}
	}
	return engine.PoolRef{Name: title}
}

// tableAction is the action of the table named name.
func tableAction(t testing.TB, name string) *action {
	t.Helper()
	for i := range actionTable {
		if actionTable[i].name == name {
			return &actionTable[i]
		}
	}
	t.Fatalf("no action %q in the table", name)
	return nil
}

// isDialog reports whether the open dialog is the named action's, at a
// step that asks for text (input) or one that confirms.
func isDialog(m *Model, name string, input bool) bool {
	return m.dialog != nil && m.dialog.req.act != nil && m.dialog.req.act.name == name && (m.dialog.step.input != nil) == input
}
