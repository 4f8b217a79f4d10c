package tui

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// TestGoldenPoolsLargeCounts: a pool of 10,000 members shows its counts
// whole (the count columns widen to five digits), at both sizes.
func TestGoldenPoolsLargeCounts(t *testing.T) {
	snaps := bigPool(10000)
	for _, tc := range []struct {
		name          string
		width, height int
	}{
		{"pools_10000_members_120x40", 120, 40},
		{"pools_10000_members_80x24", 80, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(context.Background(), Options{Context: "prod-eu", Namespace: ns, Renderer: themes.NoColorRenderer(io.Discard),
				Now: func() time.Time { return t0 }, Data: newFakeData(snaps), Resolver: &resolver{actions: &fakeActions{}}})
			m.Update(tea.WindowSizeMsg{Width: tc.width, Height: tc.height})
			m.Update(dataMsg{pools: engine.ObserveAll(snaps, t0), at: t0, health: health{synced: true, lastSync: t0}})
			m.Update(tickMsg(t0))
			s := m.View()
			checkScreen(t, s, tc.width, tc.height)
			row := screenLine(m, 2)
			for _, want := range []string{"10000 10000", "3333", "6667"} { // SIZE READY, CLAIMED, FREE
				if !strings.Contains(row, " "+want+" ") {
					t.Errorf("the pool's row does not show %s whole: %q", want, row)
				}
			}
			golden(t, tc.name, s)
		})
	}
}
