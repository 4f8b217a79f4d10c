package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// wallOpts builds a dashboard of the fleet fixtures for the wall and the
// command line.
type wallOpts struct {
	width, height int
	snaps         []engine.Snapshot
	clusters      []ClusterHealth // set: a fleet of clusters
	names         []string        // Options.ContextNames
	readOnly      bool
}

func newWallModel(t *testing.T, o wallOpts) *Model {
	t.Helper()
	var data DataSource = newFakeData(o.snaps)
	opts := Options{
		Context: "prod-eu", Namespace: "all", Fleet: true, ReadOnly: o.readOnly, Theme: themes.Dark(),
		Renderer: themes.NoColorRenderer(io.Discard), Now: func() time.Time { return t0 },
	}
	if o.clusters != nil {
		data = &clusterData{fakeData: data.(*fakeData), clusters: o.clusters}
		opts.Context, opts.Namespace, opts.Contexts, opts.ContextNames = strings.Join(o.names, ","), "each context's", true, o.names
	}
	opts.Data = data
	if !o.readOnly {
		opts.ActionsIn = func(string) Actions { return &fakeActions{} }
	}
	m := newModel(context.Background(), opts)
	m.Update(tea.WindowSizeMsg{Width: o.width, Height: o.height})
	m.Update(loadCmd(data, func() time.Time { return t0 })())
	m.Update(tickMsg(t0))
	return m
}

// clusterNames are the contexts of clusterHealths.
func clusterNames() []string { return []string{"prod-eu", labContext, "edge", "dmz"} }

// manyPools is a fleet of clusters whose pools do not fit on the wall:
// prod-eu has 20 healthy pools in two namespaces, prod-us 9 with one
// exhausted and one with a failed member, lab 6 (its cluster stale), edge
// and dmz none (unreachable, forbidden).
func manyPools() ([]engine.Snapshot, []ClusterHealth) {
	var snaps []engine.Snapshot
	add := func(kctx, namespace string, pools int, shape func(c *cluster, pool string, i int, s engine.Spec)) {
		c := &cluster{ns: namespace}
		for i := 1; i <= pools; i++ {
			name := fmt.Sprintf("pool-%02d", i)
			s := poolSpec("ghcr.io/example/desktop:2", 3, nil)
			c.pool(name, s, &engine.Status{UpdatedAt: ptrTime(t0.Add(-20 * time.Second))})
			shape(c, name, i, s)
		}
		for _, snap := range c.snapshots() {
			snap.Namespace = kctx + "/" + snap.Namespace
			snaps = append(snaps, snap)
		}
	}
	healthy := func(c *cluster, pool string, _ int, s engine.Spec) {
		for n := 1; n <= 3; n++ {
			c.member(pool, n, s)
		}
		c.claim(pool, pool+"-1", "alice@example.com", t0.Add(-10*time.Minute))
	}
	add("prod-eu", "vdi", 10, healthy)
	add("prod-eu", "kiosk", 10, healthy)
	add("prod-us", "vdi", 9, func(c *cluster, pool string, i int, s engine.Spec) {
		healthy(c, pool, i, s)
		switch i {
		case 4: // exhausted: every member claimed
			c.claim(pool, pool+"-2", "bob@example.com", t0.Add(-10*time.Minute))
			c.claim(pool, pool+"-3", "carol@example.com", t0.Add(-10*time.Minute))
		case 7: // a failed member
			c.pods[len(c.pods)-1].Status.Phase = "Failed"
		}
	})
	add(labContext, "vdi-eng", 6, healthy)
	return snaps, []ClusterHealth{
		{Context: "prod-eu", Synced: true, LastSync: t0.Add(-2 * time.Second)},
		{Context: "prod-us", Synced: true, LastSync: t0.Add(-time.Second)},
		{Context: labContext, Synced: true, LastSync: t0.Add(-42 * time.Second), ErrAt: t0.Add(-5 * time.Second), Err: errors.New("connection refused")},
		{Context: "edge", ErrAt: t0.Add(-3 * time.Second), Err: errors.New("dial tcp 10.0.0.9:6443: connection refused")},
		{Context: "dmz", Forbidden: errors.New("this identity may not list pods in namespace vdi")},
	}
}

func manyNames() []string { return []string{"prod-eu", "prod-us", labContext, "edge", "dmz"} }

func TestFleetWallGolden(t *testing.T) {
	many, manyHealth := manyPools()
	for _, tc := range []struct {
		name string
		o    wallOpts
		keys []string
	}{
		{name: "fleet_wall_80x24", o: wallOpts{width: 80, height: 24, snaps: fleetSnapshots(), readOnly: true}},
		{name: "fleet_wall_200x60", o: wallOpts{width: 200, height: 60, snaps: fleetSnapshots(), readOnly: true}},
		{name: "clusters_wall_80x24", o: wallOpts{width: 80, height: 24, snaps: clusterSnapshots(), clusters: clusterHealths(), names: clusterNames(), readOnly: true}},
		{name: "clusters_wall_200x60", o: wallOpts{width: 200, height: 60, snaps: clusterSnapshots(), clusters: clusterHealths(), names: clusterNames(), readOnly: true}},
		{name: "clusters_wall_many_80x24", o: wallOpts{width: 80, height: 24, snaps: many, clusters: manyHealth, names: manyNames(), readOnly: true}},
		{name: "clusters_wall_many_200x60", o: wallOpts{width: 200, height: 60, snaps: many, clusters: manyHealth, names: manyNames(), readOnly: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newWallModel(t, tc.o)
			press(m, tc.keys...)
			got := m.View()
			checkScreen(t, got, tc.o.width, tc.o.height)
			golden(t, tc.name, got)
		})
	}
}
