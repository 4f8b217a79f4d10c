package tui

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// TestViewReusedOnlyAfterUnseenMessages: the screen is composed again
// after every message but a change signal, the end of the coalescing
// delay and a health read that brings what the model has (each tick's),
// which change nothing shown.
func TestViewReusedOnlyAfterUnseenMessages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		msg    tea.Msg
		reused bool
		// before is the model's health, health the healthMsg's.
		before, health health
	}{
		{name: "a change signal", msg: changedMsg{}, reused: true},
		{name: "the coalescing delay's end", msg: rebuildMsg{}, reused: true},
		{name: "a change signal of a replaced source", msg: changedMsg{gen: 99}, reused: true},
		{name: "the clock", msg: tickMsg(time.Date(2026, 12, 1, 8, 0, 1, 0, time.UTC))},
		{name: "the health as it was", msg: healthMsg{}, reused: true},
		{name: "the health as it was, an error of another value and the same text", msg: healthMsg{}, reused: true,
			before: health{err: errors.New("watch failed")}, health: health{err: errors.New("watch failed")}},
		{name: "a health synced", msg: healthMsg{}, health: health{synced: true}},
		{name: "a health of another error", msg: healthMsg{}, before: health{err: errors.New("watch failed")}, health: health{err: errors.New("forbidden")}},
		{name: "a cluster's health", msg: healthMsg{contexts: []engine.ContextHealth{{Context: "east", Synced: true}}}},
		{name: "data", msg: dataMsg{unsynced: true}},
		{name: "a key", msg: tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("?")}},
		{name: "a resize", msg: tea.WindowSizeMsg{Width: 100, Height: 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := newFakeData(fixture.Demo().Snapshots())
			m := newModel(context.Background(), Options{Namespace: ns, Data: data, Renderer: themes.NoColorRenderer(io.Discard), Resolver: &resolver{actions: &fakeActions{}}})
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			m.feed.health = tc.before
			if h, ok := tc.msg.(healthMsg); ok {
				h.health = tc.health
				tc.msg = h
			}
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

// TestViewNotReusedAcrossASeenMessage: an unseen message after a seen one
// that no frame showed yet (a tick, then its health read, with no View
// between them) does not bring back the screen composed before both.
func TestViewNotReusedAcrossASeenMessage(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{})
	before := m.View()
	m.Update(tickMsg(t0.Add(time.Minute)))
	m.Update(healthMsg{health: m.feed.health})
	if got := m.View(); got == before || got != m.compose() {
		t.Fatalf("the screen of before the tick came back after its health read:\n%s", got)
	}
}
