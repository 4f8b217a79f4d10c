package demo

import (
	"context"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// A fleet demo brings up the pools of three namespaces, and the fleet
// cache (one cluster-wide informer per kind) sees them all, each in its
// namespace.
func TestFleetDemoShowsSeveralNamespaces(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	s, err := New(Options{Seed: 7, Now: clk.Now, Fleet: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Namespaces(); len(got) != 3 || got[0] != DefaultNamespace {
		t.Fatalf("Namespaces() = %v", got)
	}
	// Every pool of the fleet namespaces gets Ready members.
	ctx := context.Background()
	readyIn := func() map[string]int {
		snaps, err := kube.ListFleet(ctx, s.Client(), nil)
		if err != nil {
			t.Fatal(err)
		}
		ready := map[string]int{}
		for _, v := range engine.ObserveAll(snaps, clk.Now()) {
			ready[v.Namespace+"/"+v.Name] = v.Status.Ready
		}
		return ready
	}
	for i := 0; i < 240; i++ {
		steps(t, s, clk, 1, nil)
		ready := readyIn()
		done := true
		for _, p := range fleetPools() {
			done = done && ready[p.namespace+"/"+p.name] == p.spec.Size
		}
		if done && ready[DefaultNamespace+"/desk"] > 0 {
			break
		}
	}
	ready := readyIn()
	for _, p := range fleetPools() {
		if got := ready[p.namespace+"/"+p.name]; got != p.spec.Size {
			t.Errorf("%s/%s: %d ready, want %d (after 60 simulated seconds)", p.namespace, p.name, got, p.spec.Size)
		}
	}
	if ready[DefaultNamespace+"/desk"] == 0 {
		t.Errorf("the main namespace's desk has no ready member: %v", ready)
	}

	w := kube.NewFleetWatcher(s.Client(), nil)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.Start(wctx); err != nil {
		t.Fatal(err)
	}
	if !w.WaitForSync(wctx) {
		t.Fatal("the fleet cache did not sync within 10s")
	}
	namespaces := map[string]bool{}
	for _, snap := range w.Snapshots() {
		namespaces[snap.Namespace] = true
	}
	for _, ns := range s.Namespaces() {
		if !namespaces[ns] {
			t.Errorf("the fleet cache has no pool in %s (has %v)", ns, namespaces)
		}
	}
}
