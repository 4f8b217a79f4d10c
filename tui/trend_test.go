package tui

import (
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// newTrendModel is newTestModel with Options.ASCII.
func newTrendModel(t testing.TB, c *cluster, width, height int, readOnly, ascii bool) *Model {
	t.Helper()
	data := newFakeData(c.Snapshots())
	o := Options{
		Context: "prod-eu", Namespace: ns, ReadOnly: readOnly, Theme: themes.Dark(), ASCII: ascii,
		Renderer: themes.NoColorRenderer(io.Discard), Now: func() time.Time { return t0 }, Data: data,
	}
	if !readOnly {
		o.Resolver = &resolver{actions: &fakeActions{}}
	}
	m := newModel(t.Context(), o)
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	m.Update(loadCmd(data, func() time.Time { return t0 })())
	m.Update(tickMsg(t0))
	return m
}

func TestGoldenTrend(t *testing.T) {
	for _, tt := range []struct {
		name          string
		width, height int
		readOnly      bool
		ascii         bool
		keys          []string
	}{
		{name: "trend_pools_200x60", width: 200, height: 60},
		{name: "trend_pools_120x40", width: 120, height: 40},
		{name: "trend_pools_80x24", width: 80, height: 24},
		{name: "trend_pools_ascii_120x40", width: 120, height: 40, ascii: true},
		{name: "trend_wall_200x60", width: 200, height: 60, readOnly: true},
		{name: "trend_wall_80x24", width: 80, height: 24, readOnly: true},
		{name: "trend_detail_fixed_120x40", width: 120, height: 40, keys: []string{"enter", "enter"}},
		{name: "trend_detail_growing_120x40", width: 120, height: 40, keys: []string{"down", "enter", "enter"}},
		{name: "trend_detail_ceiling_120x40", width: 120, height: 40, keys: []string{"down", "down", "enter", "enter"}},
		{name: "trend_detail_growing_ascii_80x24", width: 80, height: 24, ascii: true, keys: []string{"down", "enter", "enter"}},
		{name: "trend_resize_elastic_120x40", width: 120, height: 40, keys: []string{"down", "s", "9", "enter"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newTrendModel(t, fixture.Trend(), tt.width, tt.height, tt.readOnly, tt.ascii)
			for _, k := range tt.keys {
				m.Update(keyMsg(k))
			}
			got := m.View()
			checkScreen(t, got, tt.width, tt.height)
			golden(t, tt.name, got)
			if tt.ascii {
				for _, r := range "▁▂▃▄▅▆▇█" {
					if strings.ContainsRune(got, r) {
						t.Errorf("ASCII screen holds %q", r)
					}
				}
			}
		})
	}
}

// TestTrendFirstFrame: a snapshot whose pools carry a recorded history
// shows the sparkline on the dashboard's first frame, before any live
// sample could make a trend.
func TestTrendFirstFrame(t *testing.T) {
	m := newTrendModel(t, fixture.Trend(), 200, 60, false, false)
	got := m.View()
	if !strings.Contains(got, "FREE LAST 6H") {
		t.Fatalf("no trend column on the first frame:\n%s", got)
	}
	line := screenLine(m, 2) // desk's row
	if !strings.ContainsAny(line, "▁▂▃▄▅▆▇█") {
		t.Errorf("desk's row has no sparkline: %q", line)
	}
}

// TestTrendLive: the dashboard adds a sample per slot of what it sees (a
// load's or a tick's time), keeps the lowest free of a slot, and a pool
// without a recorded history gets its trend column once it has two slots.
func TestTrendLive(t *testing.T) {
	m, data := newTestModel(t, fixture.Demo(), testOpts{width: 200, height: 60})
	desk := engine.PoolRef{Namespace: ns, Name: "desk"}
	if n := len(m.feed.live[desk].Samples); n != 1 {
		t.Fatalf("%d live samples after the first load, want 1", n)
	}
	if strings.Contains(m.View(), "FREE LAST") {
		t.Fatal("a trend column with a single sample")
	}
	m.Update(tickMsg(t0.Add(time.Minute))) // same slot: nothing new
	if n := len(m.feed.live[desk].Samples); n != 1 {
		t.Fatalf("%d live samples after a tick in the same slot, want 1", n)
	}
	next := t0.Add(engine.HistoryInterval)
	m.Update(tickMsg(next))
	if n := len(m.feed.live[desk].Samples); n != 2 {
		t.Fatalf("%d live samples after a tick in the next slot, want 2", n)
	}
	if !strings.Contains(m.View(), "FREE LAST 6H") {
		t.Error("no trend column after two slots of live samples")
	}
	// A load in the same slot with fewer free members replaces its sample.
	c := fixture.Demo()
	c.Claim("desk", "desk-4", "zed@example.com", next)
	data.mu.Lock()
	data.snaps = c.Snapshots()
	data.mu.Unlock()
	m.Update(loadCmd(data, func() time.Time { return next.Add(time.Second) })())
	last, _ := m.feed.live[desk].Last()
	if last.Free != 0 || last.Claimed != 4 {
		t.Errorf("last live sample %+v, want free 0 claimed 4", last)
	}
}

// TestTrendMergesRecordedAndLive: a live sample replaces the recorded one
// of its slot.
func TestTrendMergesRecordedAndLive(t *testing.T) {
	m := newTrendModel(t, fixture.Trend(), 120, 40, false, false)
	ctx := m.viewCtx()
	v := ctx.pool(engine.PoolRef{Namespace: ns, Name: "lab"})
	samples := ctx.trend(v)
	last := samples[len(samples)-1]
	if !last.At.Equal(t0.Truncate(engine.HistoryInterval)) || last.Free != 0 || last.Claimed != 4 || last.Size != 4 {
		t.Errorf("last sample %+v, want the live one at %s (free 0, claimed 4, size 4)", last, t0.Truncate(engine.HistoryInterval))
	}
}

// TestResizeElasticBounds: the resize dialog of an elastic pool refuses a
// size outside its bounds with a line saying so, and takes one within.
func TestResizeElasticBounds(t *testing.T) {
	m := newTrendModel(t, fixture.Trend(), 120, 40, false, false)
	for _, k := range []string{"down", "s", "9", "enter"} {
		m.Update(keyMsg(k))
	}
	if m.dialog == nil || !isDialog(m, "resize", true) || !strings.Contains(m.dialog.err, "outside 2..8") {
		t.Fatalf("resize to 9 of an elastic 2..8 pool: dialog %+v", m.dialog)
	}
	m.Update(keyMsg("backspace"))
	m.Update(keyMsg("6"))
	m.Update(keyMsg("enter"))
	if m.dialog == nil || !isDialog(m, "resize", false) || m.dialog.req.size != 6 || m.dialog.req.from != 4 {
		t.Fatalf("resize to 6: dialog %+v", m.dialog)
	}
}

// TestTrendLiveWindow: a dashboard running for a day keeps liveWindow of
// its own samples per pool, not the day.
func TestTrendLiveWindow(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{width: 120, height: 40})
	for at := t0; at.Before(t0.Add(24 * time.Hour)); at = at.Add(engine.HistoryInterval) {
		m.Update(tickMsg(at))
	}
	h := m.feed.live[engine.PoolRef{Namespace: ns, Name: "desk"}]
	if n, want := len(h.Samples), int(liveWindow/engine.HistoryInterval); n != want {
		t.Errorf("%d live samples after a day, want %d", n, want)
	}
}

// TestIdleTickDrawsNoTrend: a tick that changes nothing but the clock
// within a slot merges no trend again (the pools table's, the wall's, the
// detail pane's), and every frame is the one drawn without the cache; a
// tick into the next slot, or new data, draws the trends again.
func TestIdleTickDrawsNoTrend(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readOnly bool
		keys     []string
	}{
		{name: "pools"},
		{name: "wall", readOnly: true},
		{name: "detail", keys: []string{"enter", "enter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fixture.Trend()
			m := newTrendModel(t, c, 200, 60, tc.readOnly, false)
			press(m, tc.keys...)
			// uncached is the frame drawn with no trend kept.
			uncached := func() string {
				kept := m.trends
				m.trends = trendCache{}
				defer func() { m.trends = kept }()
				return m.compose()
			}
			frame := func(at time.Time) string {
				t.Helper()
				m.Update(tickMsg(at))
				got := m.View()
				if want := uncached(); got != want {
					t.Fatalf("at %s the frame is not the one drawn afresh:\n%s", at.Format(time.TimeOnly), lineDiff(want, got))
				}
				return got
			}
			first := frame(t0)
			if !strings.ContainsAny(first, "▁▂▃▄▅▆▇█") {
				t.Fatalf("no sparkline on the %s screen:\n%s", tc.name, first)
			}
			merges := m.trends.merges
			if merges == 0 {
				t.Fatal("no trend merged for the first frame")
			}
			slotEnd := t0.Truncate(engine.HistoryInterval).Add(engine.HistoryInterval)
			for at := t0.Add(time.Second); at.Before(slotEnd); at = at.Add(time.Second) {
				frame(at)
				if m.trends.merges != merges {
					t.Fatalf("the tick at %s merged %d trends again", at.Format(time.TimeOnly), m.trends.merges-merges)
				}
			}
			frame(slotEnd)
			if m.trends.merges == merges {
				t.Error("the tick into the next slot merged no trend")
			}
			merges = m.trends.merges
			frame(slotEnd.Add(time.Second))
			if m.trends.merges == merges {
				t.Error("the tick past the slot's very start merged no trend (the last hour's words change then)")
			}
			merges = m.trends.merges
			// New data in the same slot: drawn again.
			c.Claim("desk", "desk-12", "zed@example.com", slotEnd)
			m.Update(loadCmd(newFakeData(c.Snapshots()), func() time.Time { return slotEnd.Add(2 * time.Second) })())
			frame(slotEnd.Add(3 * time.Second))
			if m.trends.merges == merges {
				t.Error("new data merged no trend")
			}
		})
	}
}
