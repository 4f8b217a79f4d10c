package permderive

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The derivation reaches the paths one pool cannot: a claim that renews the
// caller's expired claim (leases update) and gives back a duplicate won in a
// race with the same identity (leases delete); a resize that grows the pool
// (pods and persistentvolumeclaims create).
func TestDeriveReachesEveryPath(t *testing.T) {
	for _, tc := range []struct {
		action engine.Action
		want   []engine.Permission
	}{
		{engine.ActionClaim, []engine.Permission{
			{Group: "coordination.k8s.io", Resource: "leases", Verb: "update"},
			{Group: "coordination.k8s.io", Resource: "leases", Verb: "delete"},
			{Group: "coordination.k8s.io", Resource: "leases", Verb: "create"},
			{Resource: "pods", Verb: "create"},
		}},
		{engine.ActionResize, []engine.Permission{
			{Resource: "pods", Verb: "create"},
			{Resource: "persistentvolumeclaims", Verb: "create"},
			{Resource: "pods", Verb: "delete"},
			{Resource: "persistentvolumeclaims", Verb: "delete"},
		}},
		{engine.ActionForceRelease, []engine.Permission{engine.PermForceRelease}},
	} {
		got, err := Derive(tc.action)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tc.want {
			if !slices.Contains(got, p) {
				t.Errorf("%s: the derivation misses %s (derived: %v)", tc.action, p, got)
			}
		}
	}
}

// A scenario that no longer takes its path fails the derivation instead of
// dropping that path's permissions.
func TestDeriveFailsWhenAScenarioMissesItsPath(t *testing.T) {
	var renewal scenario
	for _, sc := range derivations[engine.ActionClaim] {
		if strings.Contains(sc.name, "renewed") {
			renewal = sc
		}
	}
	if renewal.act == nil {
		t.Fatal("no renewal scenario for claim")
	}
	renewal.at = 2 * time.Hour // alice's claim is not expired yet
	err := renewal.run(map[engine.Permission]bool{})
	if err == nil || !strings.Contains(err.Error(), "want it renewed") {
		t.Fatalf("run = %v, want the missed renewal reported", err)
	}
}

func TestEveryActionHasADerivation(t *testing.T) {
	for _, a := range engine.AllActions {
		if len(derivations[a]) == 0 {
			t.Errorf("no derivation for %s", a)
		}
	}
	if _, err := Derive("assign"); err == nil {
		t.Error("Derive of an unknown action succeeded")
	}
}

// Only isolated pools need networkpolicies: no action's own derivation
// holds them, the four that reconcile or remove a pool's policy need them
// for an isolated pool, and the others never.
func TestDeriveIsolated(t *testing.T) {
	np := func(verbs ...string) []engine.Permission {
		var out []engine.Permission
		for _, v := range verbs {
			out = append(out, engine.Permission{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: v})
		}
		return out
	}
	want := map[engine.Action][]engine.Permission{
		engine.ActionReconcile: np("create", "get", "patch"),
		engine.ActionResize:    np("create", "get", "patch"),
		engine.ActionApply:     np("create", "delete", "get", "patch"),
		engine.ActionDelete:    np("delete", "get"),
	}
	for _, a := range engine.AllActions {
		plain, err := Derive(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range plain {
			if p.Resource == "networkpolicies" {
				t.Errorf("%s needs %s on a pool that is not isolated", a, p)
			}
		}
		got, err := DeriveIsolated(a)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[a]) {
			t.Errorf("%s on an isolated pool needs %v more, want %v", a, got, want[a])
		}
	}
}

// The un-isolate scenario on a pool that never was isolated misses its
// path and says so.
func TestDeriveIsolatedFailsWhenAScenarioMissesItsPath(t *testing.T) {
	for _, sc := range isolatedDerivations[engine.ActionApply] {
		if !strings.Contains(sc.name, "un-isolated") {
			continue
		}
		sc.isolated = false
		err := sc.run(map[engine.Permission]bool{})
		if err == nil || !strings.Contains(err.Error(), "was not removed") {
			t.Fatalf("run = %v, want the missed removal reported", err)
		}
		return
	}
	t.Fatal("no un-isolate scenario for apply")
}
