package tui

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// The idle dashboard (issue 41): one pool of 1,000 or 10,000 members whose
// objects do not change, with a day of history recorded in its status as a
// reconciler writes it, on the pools screen at 120x40 (and on the wall,
// the read-only dashboard's screen). Every second the model takes a tick
// and the screen is composed again; all a tick changes on it is what reads
// the clock (the data's age, LAST RECONCILE, the wall's clock). The same
// pool without a recorded history is what an idle tick cost before the
// trend. hack/benchreport holds the targets.

// idleHistory is a day of a pool of n members as the reconciler records
// it before t0's slot: a sample when the counts changed (every other slot
// in the working hours, the last 10 h) or after an hour unchanged
// (engine.HistoryHeartbeat).
func idleHistory(n int) *engine.History {
	var h engine.History
	end := t0.Truncate(engine.HistoryInterval)
	start := end.Add(-engine.HistoryWindow + engine.HistoryInterval)
	for at := start; at.Before(end); at = at.Add(engine.HistoryInterval) {
		i := int(at.Sub(start) / engine.HistoryInterval)
		claimed := n / 4
		if end.Sub(at) <= 10*time.Hour {
			claimed += (i / 2 % 7) * n / 100
		}
		s := engine.Sample{At: at, Free: n - claimed, Claimed: claimed, Size: n}
		if last, ok := h.Last(); ok && last.Free == s.Free && last.Claimed == s.Claimed && at.Sub(last.At) < engine.HistoryHeartbeat {
			continue
		}
		h = h.Add(s)
	}
	return &h
}

// idleCluster is one pool "desk" of n members, every fourth claimed (no
// claim expires while the benchmark's clock runs), its status recorded
// with idleHistory when history is set.
func idleCluster(n int, history bool) *cluster {
	c := &cluster{}
	spec := fixture.Spec("ghcr.io/example/desktop:2", n, nil)
	rec := &engine.Status{UpdatedAt: fixture.PtrTime(t0.Add(-20 * time.Second))}
	if history {
		rec.History = idleHistory(n)
	}
	c.Pool("desk", spec, rec)
	for i := 1; i <= n; i++ {
		c.Member("desk", i, spec, fixture.OnNode(fmt.Sprintf("node-%d", i%50)))
		if i%4 == 0 {
			c.Claim("desk", engine.MemberName("desk", i), fmt.Sprintf("user%d@example.com", i), t0.Add(-time.Duration(i%20)*time.Minute))
		}
	}
	return c
}

// idleModel is the dashboard of c at 120x40 (readOnly: the wall), loaded
// at the first tick's time (idleClock(0)), the data synced 2 s before.
func idleModel(tb testing.TB, c *cluster, readOnly bool) *Model {
	tb.Helper()
	start := idleClock(0)
	data := newFakeData(c.Snapshots())
	data.lastSync = start.Add(-2 * time.Second)
	clock := func() time.Time { return start }
	opts := Options{Context: "prod-eu", Namespace: ns, ReadOnly: readOnly, Renderer: themes.NoColorRenderer(io.Discard),
		Now: clock, Data: data}
	if !readOnly {
		opts.Resolver = &resolver{actions: &fakeActions{}}
	}
	m := newModel(context.Background(), opts)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(loadCmd(data, clock)())
	m.Update(tickMsg(start))
	if !m.feed.loaded || len(m.pools) != 1 {
		tb.Fatalf("the load did not load the pool: %d pools", len(m.pools))
	}
	return m
}

// idlePeriod is how long the benchmark's clock runs before it starts over:
// three slots, so that one tick in 300 starts a slot, as on a real clock.
const idlePeriod = 3 * engine.HistoryInterval

// idleClock is the time of tick i: a second apart from a second into the
// slot after t0's (everything in idleCluster happened before it),
// starting over every idlePeriod.
func idleClock(i int) time.Time {
	start := t0.Truncate(engine.HistoryInterval).Add(engine.HistoryInterval + time.Second)
	return start.Add(time.Duration(i) * time.Second % idlePeriod)
}

// BenchmarkIdleTick is one second of the idle dashboard: the tick message
// (Update) and the screen composed after it (View). "no-history" is the
// pool without a recorded history (no trend but the dashboard's own, from
// its second slot on).
//
//	cpu-ns/tick  the process's CPU time (user and system, the GC's too)
//	             per tick: what the side by side with k9s measures, and
//	             less moved than ns/op by the other work of a shared machine
func BenchmarkIdleTick(b *testing.B) {
	for _, tc := range []struct {
		members int
		screen  string
		history bool
	}{
		{1000, "pools", true},
		{10000, "pools", true},
		{10000, "pools", false},
		{1000, "wall", true},
		{10000, "wall", true},
	} {
		name := fmt.Sprintf("members=%d/screen=%s", tc.members, tc.screen)
		if !tc.history {
			name += "/no-history"
		}
		b.Run(name, func(b *testing.B) {
			m := idleModel(b, idleCluster(tc.members, tc.history), tc.screen == "wall")
			if out := m.View(); tc.history && !strings.Contains(out, "FREE LAST") && !strings.Contains(out, "free 6 h") {
				b.Fatalf("no trend on the %s screen:\n%s", tc.screen, out)
			}
			i := idleWarmUp(m)
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for b.Loop() {
				i++
				m.Update(tickMsg(idleClock(i)))
				_ = m.View()
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/tick")
		})
	}
}

// idleWarmUp ticks m until the garbage collector has run once after the
// setup (at most 20,000 ticks) and returns the ticks made: the runs are
// measured in their steady state, not while the bigger heap of 10,000
// members grows into memory it never touched before its first collection
// (in a run of a few thousand ticks, that is all of them).
func idleWarmUp(m *Model) int {
	runtime.GC() // the setup's garbage is not the ticks' to collect
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gc0 := ms.NumGC
	i := 0
	for i < 20000 {
		i++
		m.Update(tickMsg(idleClock(i)))
		_ = m.View()
		if i%100 == 0 {
			if runtime.ReadMemStats(&ms); ms.NumGC > gc0 {
				break
			}
		}
	}
	return i
}
