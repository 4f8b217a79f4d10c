//go:build integration

package tui

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// TestIntegrationTrendHourOnFirstScreen: a pool that ran for an hour on the
// plane (a reconcile every 5 minutes of a clock an hour behind, a claim
// every 15) has that hour in its recorded status, and a dashboard started
// now shows it on its first screen: the wall's tile and the pools table
// carry a sparkline of the hour, which no live sample could have made (the
// dashboard has seen one slot of its own).
func TestIntegrationTrendHourOnFirstScreen(t *testing.T) {
	env := kubetest.Require(t)
	ctx := t.Context()
	start := time.Now().Add(-65 * time.Minute)
	clock := start
	eng := &engine.Engine{Cluster: kube.NewCluster(env.Client, env.Namespace), Namespace: env.Namespace, Now: func() time.Time { return clock }}
	spec := engine.Spec{Image: "registry.example/desktop:1", Size: 6, CPU: "100m", Memory: "128Mi", Disk: "1Gi"}
	spec.Default()
	if _, err := eng.Apply(ctx, "desk", spec); err != nil {
		t.Fatalf("apply: %v", err)
	}
	claims := 0
	for step := 0; clock.Before(time.Now()); step++ {
		if step%3 == 1 {
			if _, err := eng.Claim(ctx, "desk", fmt.Sprintf("user%d@example.com", claims)); err == nil {
				claims++
			}
		}
		if _, err := eng.Reconcile(ctx, "desk"); err != nil {
			t.Fatalf("reconcile at %s: %v", clock.Format("15:04"), err)
		}
		clock = clock.Add(engine.HistoryInterval)
	}
	if claims < 4 {
		t.Fatalf("%d claims over the hour, want at least 4", claims)
	}
	// The recorded history as the API server holds it.
	snap, err := eng.Cluster.Snapshot(ctx, "desk")
	if err != nil {
		t.Fatal(err)
	}
	rec := engine.Observe(snap, time.Now()).Recorded.History
	if rec == nil || len(rec.Samples) < 4 {
		t.Fatalf("recorded history %+v: want a sample at least each time the counts changed", rec)
	}

	watcher := kube.NewWatcher(env.Client, env.Namespace)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := watcher.Start(wctx); err != nil {
		t.Fatal(err)
	}
	m := newModel(wctx, Options{
		Context: "plane", Namespace: env.Namespace, ReadOnly: true, Theme: themes.Dark(),
		Renderer: themes.NoColorRenderer(io.Discard), Now: time.Now, Data: watcher,
	})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 50})
	env.WaitFor(t, 30*time.Second, "the pool on the wall", func() (bool, error) {
		load(m, watcher)
		v := m.View()
		return strings.Contains(v, "desk") && !strings.Contains(v, "syncing"), nil
	})
	if n := len(m.feed.live[engine.PoolRef{Namespace: env.Namespace, Name: "desk"}].Samples); n > 1 {
		t.Fatalf("the dashboard has %d live samples already; the check needs its first screen", n)
	}
	wall := m.View()
	m.Update(keyMsg("tab"))
	table := m.View()
	// The pool's row in the table; the tile's trend line on the wall (its
	// name is on the border, its big count uses block glyphs too).
	for _, c := range []struct{ name, screen, marker string }{{"wall", wall, "free 6 h"}, {"pools table", table, "desk"}} {
		name, screen := c.name, c.screen
		var row string
		for _, l := range strings.Split(screen, "\n") {
			if strings.Contains(l, c.marker) && strings.ContainsAny(l, sparkGlyphs) {
				row = l
				break
			}
		}
		glyphs := map[rune]int{}
		for _, r := range row {
			if strings.ContainsRune(sparkGlyphs, r) {
				glyphs[r]++
			}
		}
		cells := 0
		for _, n := range glyphs {
			cells += n
		}
		// An hour is 4 cells of 15 minutes; the free count fell as the
		// claims came, so the cells are not all alike.
		if cells < 4 || len(glyphs) < 2 {
			t.Errorf("%s: the hour is not on the first screen (%d sparkline cells, %d levels) in %q\n%s", name, cells, len(glyphs), row, screen)
		}
	}
	t.Logf("%d claims over an hour, %d recorded samples; first screen shows them", claims, len(rec.Samples))
}

const sparkGlyphs = "▁▂▃▄▅▆▇█"
