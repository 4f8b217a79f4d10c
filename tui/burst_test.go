package tui

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// countingModel counts what the program does with the root model.
type countingModel struct {
	*Model
	views, updates, data atomic.Int64
}

func (c *countingModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	c.updates.Add(1)
	if _, ok := msg.(dataMsg); ok {
		c.data.Add(1)
	}
	_, cmd := c.Model.Update(msg)
	return c, cmd
}

func (c *countingModel) View() string {
	c.views.Add(1)
	return c.Model.View()
}

// TestBurstOfChangesIsCoalesced runs the real program loop and sends 10,000
// change signals (as informer handlers would) over about a second. The
// rebuilds (reads of the data source) and renders stay bounded by the
// elapsed time, not by the number of events, and the last change is shown.
func TestBurstOfChangesIsCoalesced(t *testing.T) {
	const events = 10000
	data := newFakeData(fixture.Demo().Snapshots())
	var version, loaded atomic.Int64
	data.onLoad = func() { loaded.Store(version.Load()) }

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newModel(ctx, Options{Namespace: ns, Data: data, Renderer: themes.NoColorRenderer(io.Discard), Resolver: &resolver{actions: &fakeActions{}}})
	cm := &countingModel{Model: m}
	p := tea.NewProgram(cm, tea.WithContext(ctx), tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithoutSignalHandler())
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	p.Send(tea.WindowSizeMsg{Width: 120, Height: 40})
	poll(t, "the first load", func() bool { return data.loads.Load() >= 1 })

	loadsBefore, viewsBefore := data.loads.Load(), cm.views.Load()
	start := time.Now()
	pace := time.NewTicker(10 * time.Millisecond)
	for i := 1; i <= events; i++ {
		version.Store(int64(i))
		data.signal()
		if i%100 == 0 {
			<-pace.C // spread the storm over about a second
		}
	}
	pace.Stop()
	poll(t, "the last change to be loaded", func() bool { return loaded.Load() == events })
	elapsed := time.Since(start)
	p.Quit()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	loads := data.loads.Load() - loadsBefore
	views := cm.views.Load() - viewsBefore
	bound := int64(elapsed/coalesceDelay) + 3
	t.Logf("%d events in %v: %d rebuilds (bound %d), %d renders, %d updates", events, elapsed.Round(time.Millisecond), loads, bound, views, cm.updates.Load())
	if loads > bound {
		t.Errorf("%d rebuilds for a %v storm: more than one per %v", loads, elapsed, coalesceDelay)
	}
	// Each rebuild cycle is a change, a coalescing tick and the data; plus
	// one clock tick a second.
	if maxViews := 3*loads + int64(elapsed/time.Second) + 5; views > maxViews {
		t.Errorf("%d renders for %d rebuilds (max %d)", views, loads, maxViews)
	}
	if loads*20 > events {
		t.Errorf("%d rebuilds for %d events: not coalesced", loads, events)
	}
}

// TestChangeWhileLoadingIsNotLost checks the coalescing state machine: a
// change that arrives while a rebuild is loading schedules one more.
func TestChangeWhileLoadingIsNotLost(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{})
	m.feed.pending, m.feed.armed = false, true
	_, cmd := m.Update(changedMsg{})
	if !m.feed.pending || m.feed.armed || cmd == nil {
		t.Fatalf("first change: pending %v armed %v", m.feed.pending, m.feed.armed)
	}
	if _, cmd := m.Update(changedMsg{}); cmd != nil || !m.feed.dirty {
		t.Fatal("a change while pending did not just mark the model dirty")
	}
	_, cmd = m.Update(rebuildMsg{})
	if !m.feed.armed || cmd == nil {
		t.Fatal("the rebuild did not re-arm the change watch")
	}
	_, cmd = m.Update(dataMsg{pools: fixture.Demo().Views(), at: t0, health: health{synced: true}})
	if !m.feed.pending || m.feed.dirty || cmd == nil {
		t.Fatalf("a dirty rebuild did not schedule another: pending %v dirty %v", m.feed.pending, m.feed.dirty)
	}
	_, cmd = m.Update(dataMsg{pools: fixture.Demo().Views(), at: t0, health: health{synced: true}})
	if m.feed.pending || cmd != nil {
		t.Fatal("a clean rebuild scheduled another")
	}
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// bigPool builds a pool of n Ready members, every third claimed.
func bigPool(n int) []engine.Snapshot {
	c := &cluster{}
	s := fixture.Spec("ghcr.io/example/desktop:2", n, nil)
	c.Pool("big", s, &engine.Status{UpdatedAt: fixture.PtrTime(t0.Add(-time.Minute))})
	for i := 1; i <= n; i++ {
		c.Member("big", i, s, fixture.OnNode(fmt.Sprintf("node-%d", i%17)))
		if i%3 == 0 {
			c.Claim("big", engine.MemberName("big", i), fmt.Sprintf("user%d@example.com", i), t0.Add(-time.Duration(i%50)*time.Minute))
		}
	}
	return c.Snapshots()
}

func benchmarkMembersView(b *testing.B, n int) {
	snaps := bigPool(n)
	data := newFakeData(snaps)
	m := newModel(context.Background(), Options{Namespace: ns, Data: data, Renderer: themes.NoColorRenderer(io.Discard),
		Now: func() time.Time { return t0 }, Resolver: &resolver{actions: &fakeActions{}}})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(dataMsg{pools: engine.ObserveAll(snaps, t0), at: t0, health: health{synced: true, lastSync: t0}})
	m.openMembers(poolRefIn(m, "big"))
	press(m, "pgdown", "pgdown") // somewhere in the middle of the first pages
	if len(m.members.rows) != n {
		b.Fatalf("%d rows, want %d", len(m.members.rows), n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = m.View()
	}
}

func BenchmarkMembersView100(b *testing.B)   { benchmarkMembersView(b, 100) }
func BenchmarkMembersView10000(b *testing.B) { benchmarkMembersView(b, 10000) }
