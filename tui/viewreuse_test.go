package tui

import (
	"context"
	"io"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/themes"
)

// TestViewReusedOnlyAfterUnseenMessages: the screen is composed again
// after every message but a change signal and the end of the coalescing
// delay, which change nothing shown.
func TestViewReusedOnlyAfterUnseenMessages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		msg    tea.Msg
		reused bool
	}{
		{name: "a change signal", msg: changedMsg{}, reused: true},
		{name: "the coalescing delay's end", msg: rebuildMsg{}, reused: true},
		{name: "a change signal of a replaced source", msg: changedMsg{gen: 99}, reused: true},
		{name: "the clock", msg: tickMsg(time.Date(2026, 12, 1, 8, 0, 1, 0, time.UTC))},
		{name: "data", msg: dataMsg{unsynced: true}},
		{name: "a key", msg: tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("?")}},
		{name: "a resize", msg: tea.WindowSizeMsg{Width: 100, Height: 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := newFakeData(demoCluster().snapshots())
			m := newModel(context.Background(), Options{Namespace: ns, Data: data, Renderer: themes.NoColorRenderer(io.Discard), Actions: &fakeActions{}})
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			if m.View() == "" {
				t.Fatal("no screen")
			}
			const earlier = "the screen composed before"
			m.lastView = earlier
			m.Update(tc.msg)
			if got := m.View() == earlier; got != tc.reused {
				t.Fatalf("screen reused: %v, want %v", got, tc.reused)
			}
			if !tc.reused && m.View() != m.compose() {
				t.Fatal("the screen shown is not the one composed")
			}
		})
	}
}
