package tui

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
)

// renewActions answers a claim as the engine answers its holder's claim of
// an expired one: the same member, renewed (res).
type renewActions struct {
	*fakeActions
	res engine.ClaimResult
}

func (r renewActions) Claim(ctx context.Context, pool, identity string) (engine.ClaimResult, error) {
	if _, err := r.fakeActions.Claim(ctx, pool, identity); err != nil {
		return engine.ClaimResult{}, err
	}
	return r.res, nil
}

// renewOn opens the detail pane of member of desk in a dashboard whose
// actions answer res.
func renewOn(t *testing.T, member string, res engine.ClaimResult) (*Model, *fakeActions) {
	t.Helper()
	acts := &fakeActions{}
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: renewActions{fakeActions: acts, res: res}})
	press(m, "down", "enter")
	for range 10 {
		if _, mm := m.about(); mm != nil && mm.Name == member {
			break
		}
		press(m, "down")
	}
	press(m, "enter")
	if _, mm := m.about(); m.screen != screenDetail || mm == nil || mm.Name != member {
		t.Fatalf("not on %s's details", member)
	}
	return m, acts
}

// n on a member whose claim expired asks to renew it for its holder (the
// dialog starts on Cancel), then claims as the holder; a claim that is not
// expired, or no claim, is refused with a note and no dialog.
func TestRenewExpiredClaim(t *testing.T) {
	m, acts := renewOn(t, "desk-2", engine.ClaimResult{Member: "desk-2", Existing: true, Renewed: true})
	press(m, "n")
	if !isDialog(m, "renew", false) || m.dialog.focus != 0 || m.dialog.req.identity != "bob@example.com" || m.dialog.req.kind() != engine.ActionClaim {
		t.Fatalf("n on desk-2 (bob's claim expired): dialog %+v, note %q", m.dialog, m.acts.note)
	}
	golden(t, "renew_120x40", m.View())
	if cmd := press(m, "enter"); cmd != nil || m.dialog != nil || len(acts.Calls()) != 0 {
		t.Fatal("enter on Cancel renewed")
	}
	press(m, "n", "tab")
	cmd := press(m, "enter")
	if m.dialog != nil || cmd == nil || !strings.Contains(status(m), "renew desk-2 for bob@example.com…") {
		t.Fatalf("confirm did not start the renewal: status %q", status(m))
	}
	m.Update(waitMsg[actionDoneMsg](t, cmd))
	if got, want := acts.Calls(), []call{{op: "claim", pool: "desk", identity: "bob@example.com"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	if s := status(m); !strings.Contains(s, "✓ renew desk-2 for bob@example.com: bob@example.com's claim on desk-2 renewed for 1h") {
		t.Errorf("status %q", s)
	}

	for _, c := range []struct{ member, note string }{
		{"desk-3", "carol@example.com's claim on desk-3 has 57m left: nothing to renew"},
		{"desk-4", "desk-4 is not claimed by a user: nothing to renew"},
	} {
		m, acts := renewOn(t, c.member, engine.ClaimResult{})
		if cmd := press(m, "n"); cmd != nil || m.dialog != nil || !strings.Contains(status(m), c.note) || len(acts.Calls()) != 0 {
			t.Errorf("n on %s: dialog %v, status %q", c.member, m.dialog, status(m))
		}
	}
}

// A renewal that finds the claim gone says what the claim did instead
// (it is a claim on the holder's behalf).
func TestRenewOfAClaimGoneMeanwhile(t *testing.T) {
	m, _ := renewOn(t, "desk-2", engine.ClaimResult{Member: "desk-4"})
	press(m, "n", "tab")
	m.Update(waitMsg[actionDoneMsg](t, press(m, "enter")))
	if s := status(m); !strings.Contains(s, "desk-2 is no longer bob@example.com's: desk-4 claimed for bob@example.com") {
		t.Errorf("status %q", s)
	}
}

// Renew is checked for the claim permission; read-only mode has no renew.
func TestRenewNeedsTheClaimPermission(t *testing.T) {
	m, acts := renewOn(t, "desk-2", engine.ClaimResult{})
	m.Update(capsMsg{caps: []engine.Capability{{Action: engine.ActionClaim, Missing: &engine.Permission{Group: "coordination.k8s.io", Resource: "leases", Verb: "create"}}}})
	if cmd := press(m, "n"); cmd != nil || m.dialog != nil || !strings.Contains(status(m), "renew is not allowed: needs create leases.coordination.k8s.io") {
		t.Errorf("n without the claim permission: dialog %v, status %q", m.dialog, status(m))
	}
	if len(acts.Calls()) != 0 {
		t.Errorf("calls %+v", acts.Calls())
	}
	if ro := newKeyMap(true, nil); ro.actionFor(keyMsg("n")) != nil {
		t.Error("n is bound in read-only mode")
	}
}
