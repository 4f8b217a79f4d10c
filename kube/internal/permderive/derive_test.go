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
