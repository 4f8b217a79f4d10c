//go:build integration && outage

package tui

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// The API server goes away while the dashboard runs on a real Watcher: the
// header turns to disconnected with the data's age, the old pools stay,
// action keys are refused with "API server unreachable", nothing quits; when
// the server returns, the header shows live again by itself.
func TestIntegrationOutageDashboard(t *testing.T) {
	env := kubetest.Require(t)
	seedPool(t, env, "out", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watcher := kube.NewWatcher(env.Client, env.Namespace)
	if err := watcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	acts := &fakeActions{}
	m := newModel(ctx, Options{
		Context: "admin", Namespace: env.Namespace, Theme: themes.Dark(), Renderer: themes.NoColorRenderer(io.Discard),
		Now: time.Now, Data: watcher, Resolver: &resolver{actions: acts, events: &kube.Events{Client: env.Client}},
	})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	pc := newPaced(m, watcher, 500*time.Millisecond)
	load(m, watcher)
	pc.until(t, "live header with the pool", 30*time.Second, func(v string) bool {
		return strings.Contains(v, "live · synced") && strings.Contains(v, "out")
	})

	stopping := time.Now()
	env.StopComponent(t, "kube-apiserver")
	restarted := false
	defer func() {
		if !restarted {
			env.StartPlane(t)
		}
	}()
	took := pc.until(t, "disconnected header", 15*time.Second, func(v string) bool {
		return strings.Contains(v, "disconnected · data ") && strings.Contains(v, " old")
	})
	t.Logf("disconnected shown %s after the stop returned (%s after it began)", took.Round(time.Millisecond), time.Since(stopping).Round(time.Millisecond))
	if v := m.View(); !strings.Contains(v, "out") {
		t.Fatalf("the old pools are gone while disconnected:\n%s", v)
	}

	// Action keys on the pools, the members and a member: refused, no dialog, no call.
	m.screen = screenPools
	for _, k := range []string{"r", "s", "D"} {
		_, cmd := m.Update(keyMsg(k))
		if cmd != nil || m.dialog != nil || !strings.Contains(m.acts.note, unreachable) {
			t.Fatalf("%s while disconnected: cmd %v, dialog %v, note %q", k, cmd != nil, m.dialog != nil, m.acts.note)
		}
	}
	m.Update(keyMsg("enter"))
	for _, k := range []string{"x", "f", "r"} {
		_, cmd := m.Update(keyMsg(k))
		if cmd != nil || m.dialog != nil || !strings.Contains(m.acts.note, unreachable) {
			t.Fatalf("%s on the members while disconnected: cmd %v, dialog %v, note %q", k, cmd != nil, m.dialog != nil, m.acts.note)
		}
	}
	if v := m.View(); !strings.Contains(v, "API server unreachable") {
		t.Fatalf("the status line does not say why:\n%s", v)
	}
	for range 3 {
		pc.step()
	}

	starting := time.Now()
	env.StartPlane(t)
	restarted = true
	took = pc.until(t, "live header after the restart", 20*time.Second, func(v string) bool {
		return strings.Contains(v, "live · synced")
	})
	t.Logf("live again %s after the plane was up (%s after the start began)", took.Round(time.Millisecond), time.Since(starting).Round(time.Millisecond))
	if pc.quit {
		t.Fatal("the model returned tea.Quit")
	}
	if n := len(acts.Calls()); n != 0 {
		t.Fatalf("%d actions ran during the outage", n)
	}
	if why := m.refusal(tableAction(t, "reconcile"), poolRefIn(m, "desk")); why != "" {
		t.Fatalf("still refused after recovery: %q", why)
	}
}
