package tui

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// listedPool is a pool of n members as the informers hold it while they
// list: the ConfigMap and the Pods, and the PVCs only when pvcs is set.
func listedPool(n int, pvcs bool) []engine.Snapshot {
	spec := engine.Spec{Image: "ghcr.io/example/desktop:2", Size: n}
	spec.Default()
	snap := engine.Snapshot{Namespace: ns, Pool: "desk", ConfigMap: engine.BuildConfigMap(ns, "desk", spec)}
	for i := 1; i <= n; i++ {
		snap.Pods = append(snap.Pods, engine.BuildPod(ns, "desk", i, spec))
		if pvcs {
			snap.PVCs = append(snap.PVCs, engine.BuildPVC(ns, "desk", i, spec))
		}
	}
	return []engine.Snapshot{snap}
}

// firstFrame is the screen after the dashboard's first read of data, at
// elapsed since its start.
func firstFrame(t *testing.T, data *fakeData, elapsed time.Duration, width, height int) (*Model, string) {
	t.Helper()
	m := newModel(context.Background(), Options{
		Context: "prod-eu", Namespace: ns, Theme: themes.Dark(),
		Renderer: themes.NoColorRenderer(io.Discard), Now: func() time.Time { return t0.Add(elapsed) },
		Data: data, Resolver: &resolver{actions: &fakeActions{}},
	})
	m.feed.started = t0
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	m.Update(tickMsg(t0.Add(elapsed)))
	m.Update(m.feed.load(m.now)())
	return m, m.View()
}

// TestNoAlarmBeforeSync: while the caches list, a pool whose Pods are
// listed but not yet its PVCs is not shown as failed or exhausted; the
// header says syncing. Once synced (or past the sync deadline, when the
// header already says the sync failed) the pools are shown.
func TestNoAlarmBeforeSync(t *testing.T) {
	tests := []struct {
		name      string
		pvcs      bool
		synced    bool
		elapsed   time.Duration
		loaded    bool
		header    string
		wantShown []string
	}{
		{name: "configmap and pods listed, pvcs not", elapsed: 2 * time.Second, header: render.GlyphSyncing + " syncing…",
			wantShown: []string{"waiting for the first snapshot"}},
		{name: "every cache synced", pvcs: true, synced: true, elapsed: 2 * time.Second, loaded: true, header: render.GlyphLive + " live",
			wantShown: []string{"desk", "1000 free of 1000"}},
		{name: "not synced past the deadline", elapsed: syncDeadline + time.Second, loaded: true, header: render.GlyphBad + " not synced after",
			wantShown: []string{"desk", "1000 failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := newFakeData(listedPool(1000, tt.pvcs))
			data.synced = tt.synced
			m, got := firstFrame(t, data, tt.elapsed, 120, 40)
			checkScreen(t, got, 120, 40)
			if m.feed.loaded != tt.loaded {
				t.Errorf("loaded = %v, want %v", m.feed.loaded, tt.loaded)
			}
			if h := header(m); !strings.Contains(h, tt.header) {
				t.Errorf("header %q lacks %q", h, tt.header)
			}
			for _, w := range tt.wantShown {
				if !strings.Contains(got, w) {
					t.Errorf("screen lacks %q:\n%s", w, got)
				}
			}
			if tt.loaded {
				return // synced, or past the deadline: the alarm is the header's
			}
			for _, alarm := range []string{render.GlyphWarn, render.GlyphBad, "exhausted", "failed", "FAILED"} {
				if strings.Contains(got, alarm) {
					t.Errorf("an unsynced screen shows %q:\n%s", alarm, got)
				}
			}
		})
	}
}

// TestFirstFrameSyncingGolden is the dashboard's first frame while its
// caches list 1,000 members.
func TestFirstFrameSyncingGolden(t *testing.T) {
	_, got := firstFrame(t, newUnsynced(listedPool(1000, false)), 2*time.Second, 120, 40)
	checkScreen(t, got, 120, 40)
	golden(t, "first_frame_syncing_120x40", got)
}

func newUnsynced(snaps []engine.Snapshot) *fakeData {
	d := newFakeData(snaps)
	d.synced, d.lastSync = false, time.Time{}
	return d
}

// TestActionKeysPendingUntilCapabilities: the first screen does not wait
// for the permissions; until they arrive the action keys show as pending,
// then as allowed or not (after an error, as unknown: available).
func TestActionKeysPendingUntilCapabilities(t *testing.T) {
	tests := []struct {
		name    string
		answer  *capsMsg // nil: not answered yet
		pending bool
	}{
		{name: "not answered", pending: true},
		{name: "answered", answer: &capsMsg{caps: operatorCaps}},
		{name: "refused", answer: &capsMsg{err: errors.New("the server is unavailable")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModel(context.Background(), Options{
				Context: "prod-eu", Namespace: ns, Theme: themes.Dark(),
				Renderer: themes.NoColorRenderer(io.Discard), Now: func() time.Time { return t0 },
				Data: newFakeData(fixture.Demo().Snapshots()), Resolver: &resolver{actions: &fakeActions{}, access: &fakeAccess{}},
			})
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			m.Update(m.feed.load(m.now)())
			if tt.answer != nil {
				m.Update(*tt.answer)
			}
			if !m.feed.loaded {
				t.Fatal("the pools are not shown before the permissions")
			}
			if got := strings.Contains(helpLine(m), render.GlyphSyncing); got != tt.pending {
				t.Errorf("help line %q: pending shown = %v, want %v", helpLine(m), got, tt.pending)
			}
			m.Update(keyMsg("?"))
			if got := strings.Contains(m.View(), "permissions pending"); got != tt.pending {
				t.Errorf("help overlay: pending shown = %v, want %v", got, tt.pending)
			}
		})
	}
}
