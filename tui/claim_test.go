package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
)

func (f *fakeActions) Claim(_ context.Context, pool, identity string) (engine.ClaimResult, error) {
	err := f.record(call{op: "claim", pool: pool, identity: identity})
	if err != nil {
		return engine.ClaimResult{}, err
	}
	return engine.ClaimResult{Member: pool + "-3"}, nil
}

func TestClaimDialogValidatesThenClaims(t *testing.T) {
	acts := &fakeActions{}
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: acts})
	press(m, "down", "a")
	if m.dialog == nil || !isDialog(m, "claim", true) {
		t.Fatalf("a did not open the claim dialog (note %q)", m.acts.note)
	}
	golden(t, "claim_120x40", m.View())
	for _, bad := range []struct{ typed, want string }{
		{"", "must not be empty"},
		{engine.ReconcilerIdentity, "reserved"},
		{" alice", "white space"},
	} {
		m.dialog.input.SetValue(bad.typed)
		if cmd := press(m, "enter"); cmd != nil || m.dialog == nil || !strings.Contains(m.dialog.err, bad.want) {
			t.Fatalf("%q: dialog err %q, want %q and no Cmd", bad.typed, m.dialog.err, bad.want)
		}
		if !strings.Contains(m.View(), bad.want) {
			t.Errorf("%q: the error is not shown inline", bad.typed)
		}
	}
	m.dialog.input.SetValue("")
	typeText(m, "carol@example.com")
	if m.dialog.err != "" {
		t.Error("typing did not clear the error")
	}
	cmd := press(m, "enter")
	if m.dialog != nil {
		t.Fatal("a valid identity left the dialog open")
	}
	done := waitMsg[actionDoneMsg](t, cmd)
	m.Update(done)
	calls := acts.Calls()
	if len(calls) != 1 || calls[0] != (call{op: "claim", pool: "desk", identity: "carol@example.com"}) {
		t.Fatalf("calls %+v", calls)
	}
	last := m.actlog.entries[len(m.actlog.entries)-1]
	if !last.done || last.req.describe() != "claim desk for carol@example.com" || last.text != "desk-3 claimed for carol@example.com" {
		t.Errorf("log entry %+v", last)
	}
}

func TestClaimNoFreeMemberShowsError(t *testing.T) {
	acts := &fakeActions{err: &engine.NoFreeMembersError{Desired: 5, Claimed: 5}}
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: acts})
	press(m, "down", "enter", "a")
	typeText(m, "dave@example.com")
	m.Update(waitMsg[actionDoneMsg](t, press(m, "enter")))
	if s := status(m); !strings.Contains(s, "pool has no free members") {
		t.Errorf("status %q", s)
	}
}

func TestReadOnlyIgnoresConsoleAndClaim(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{readOnly: true})
	wire(m).console = &fakeConsole{}
	wire(m).logs = &fakeLogs{text: "ok\n"}
	press(m, "tab", "down", "enter", "down")
	if m.screen != screenMembers {
		t.Fatalf("screen %v", m.screen)
	}
	for _, k := range []string{"c", "a"} {
		if cmd := press(m, k); cmd != nil || m.dialog != nil || m.screen != screenMembers {
			t.Errorf("read-only %s: cmd %v dialog %v screen %v", k, cmd != nil, m.dialog != nil, m.screen)
		}
	}
	if h := helpLine(m); strings.Contains(h, "console") || strings.Contains(h, "claim") || !strings.Contains(h, "logs") {
		t.Errorf("read-only help line %q: want logs, no console or claim", h)
	}
	// Logs are a read: offered in read-only mode.
	drainLogs(t, m, press(m, "l"))
	if m.screen != screenLogs || m.logs.buf.n != 1 {
		t.Errorf("read-only logs: screen %v, %d lines", m.screen, m.logs.buf.n)
	}
}
