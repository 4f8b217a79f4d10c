package engine

import (
	"strings"
	"testing"
	"time"
)

// TestDiagnoseHints: a fix that points at reconcile names no key by itself
// and the caller's with Hints; the reason and the evidence are the same
// either way.
func TestDiagnoseHints(t *testing.T) {
	claim := &Claim{Holder: "alice@example.com", Expires: time.Now().Add(time.Hour)}
	cases := []struct {
		name      string
		m         Member
		errs      []string // of the last reconcile
		plain     string   // the fix without hints
		withHints string   // with Hints{Reconcile: "r"}
	}{
		{"missing", Member{Name: "desk-1", State: StateMissing}, nil,
			"run reconcile", "run reconcile (r)"},
		{"missing, claimed", Member{Name: "desk-1", State: StateMissing, Claimed: true, Claim: claim}, nil,
			"the next reconcile builds it again for its user; the claim is kept",
			"the next reconcile (r) builds it again for its user; the claim is kept"},
		{"stopped", Member{Name: "desk-1", State: StateStopped}, nil,
			"the next reconcile starts it", "the next reconcile (r) starts it"},
		{"stopped, claimed", Member{Name: "desk-1", State: StateStopped, Claimed: true, Claim: claim}, nil,
			"the next reconcile starts it with its user's data PVC; the claim is kept",
			"the next reconcile (r) starts it with its user's data PVC; the claim is kept"},
		{"create failed: no action to point at", Member{Name: "desk-1", State: StateMissing},
			[]string{`create desk-1: pods "desk-1" is forbidden: exceeded quota`},
			"see the error; the next reconcile tries again", "see the error; the next reconcile tries again"},
		{"create refused by Pod Security admission", Member{Name: "desk-1", State: StateStopped},
			[]string{`start desk-1: create Pod: pods "desk-1" is forbidden: violates PodSecurity "baseline:latest": privileged (container "desktop" must not set securityContext.privileged=true)`},
			"the namespace's label pod-security.kubernetes.io/enforce enforces baseline:latest, stricter than the pool's podSecurity: relabel the namespace to the pool's level, or apply the pool with a podSecurity the namespace admits; then run reconcile",
			"the namespace's label pod-security.kubernetes.io/enforce enforces baseline:latest, stricter than the pool's podSecurity: relabel the namespace to the pool's level, or apply the pool with a podSecurity the namespace admits; then run reconcile (r)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain := Diagnose(&c.m, nil, nil, c.errs)
			hinted := DiagnoseWith(&c.m, nil, nil, c.errs, Hints{Reconcile: "r"})
			if plain.Fix != c.plain || hinted.Fix != c.withHints {
				t.Errorf("fix %q with hints %q, want %q and %q", plain.Fix, hinted.Fix, c.plain, c.withHints)
			}
			if strings.Contains(plain.Fix, "(") {
				t.Errorf("the fix without hints names a key: %q", plain.Fix)
			}
			if plain.Reason != hinted.Reason || plain.Evidence != hinted.Evidence || plain.Reason == "" {
				t.Errorf("reason %q/%q, evidence %q/%q", plain.Reason, hinted.Reason, plain.Evidence, hinted.Evidence)
			}
		})
	}
}
