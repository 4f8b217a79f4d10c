package tui

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
)

func TestReconcileAction(t *testing.T) {
	acts := &fakeActions{}
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: acts})
	press(m, "down")
	cmd := press(m, "r")
	if len(m.acts.running) != 1 {
		t.Fatal("r did not start an action")
	}
	if !strings.Contains(status(m), "reconcile desk…") {
		t.Errorf("status while running: %q", status(m))
	}
	done := waitMsg[actionDoneMsg](t, cmd)
	if got, want := acts.Calls(), []call{{op: "reconcile", pool: "desk"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	m.Update(done)
	if len(m.acts.running) != 0 || !strings.Contains(status(m), "✓ reconcile desk: 1 change") {
		t.Errorf("status after: %q", status(m))
	}
}

func TestForceReleaseNeedsConfirmation(t *testing.T) {
	m, acts := openDesk(t, testOpts{})
	press(m, "down") // desk-2, held by bob
	press(m, "f")
	if m.dialog == nil || m.dialog.req.kind() != engine.ActionForceRelease || m.dialog.focus != 0 {
		t.Fatalf("f: dialog %+v", m.dialog)
	}
	// enter on the default button cancels.
	if cmd := press(m, "enter"); cmd != nil || m.dialog != nil {
		t.Fatal("enter on Cancel did not just close the dialog")
	}
	// esc cancels too.
	press(m, "f")
	if cmd := press(m, "esc"); cmd != nil || m.dialog != nil {
		t.Fatal("esc did not cancel")
	}
	if len(acts.Calls()) != 0 {
		t.Fatalf("cancelled dialogs called %+v", acts.Calls())
	}
	press(m, "f", "tab")
	if m.dialog.focus != 1 {
		t.Fatal("tab did not move to the confirm button")
	}
	cmd := press(m, "enter")
	if m.dialog != nil || cmd == nil {
		t.Fatal("confirm did not start the action")
	}
	m.Update(waitMsg[actionDoneMsg](t, cmd))
	want := []call{{op: "force-release", pool: "desk", member: "desk-2"}}
	if got := acts.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	if s := status(m); !strings.Contains(s, "✓ force-release desk-2 (bob@example.com): released from bob@example.com") {
		t.Errorf("status %q", s)
	}
}

// Releasing a user's claim from the dashboard is a force-release, whichever
// key asks: the dashboard is never the claim's holder.
func TestReleaseIsAForceRelease(t *testing.T) {
	m, acts := openDesk(t, testOpts{})
	press(m, "down", "down") // desk-3, carol
	press(m, "x")
	if m.dialog == nil || m.dialog.req.kind() != engine.ActionForceRelease || !strings.HasPrefix(m.dialog.step.title, "Force-release") {
		t.Fatalf("x: dialog %+v", m.dialog)
	}
	cmd := press(m, "right", "enter")
	m.Update(waitMsg[actionDoneMsg](t, cmd))
	want := []call{{op: "force-release", pool: "desk", member: "desk-3"}}
	if got := acts.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	// An unclaimed member has nothing to release: no dialog, a note.
	press(m, "down") // desk-4
	press(m, "x")
	if m.dialog != nil || !strings.Contains(status(m), "desk-4 has no claim") {
		t.Errorf("x on a free member: dialog %v status %q", m.dialog, status(m))
	}
	press(m, "f")
	if m.dialog != nil {
		t.Error("f on a member without a Lease opened a dialog")
	}
	// Release from the detail pane acts on the member shown.
	press(m, "up", "enter", "x")
	if m.dialog == nil || m.dialog.req.member != "desk-3" {
		t.Fatalf("x in details: %+v", m.dialog)
	}
}

func TestResizeValidatesAndConfirms(t *testing.T) {
	m, acts := openDesk(t, testOpts{})
	press(m, "s")
	if m.dialog == nil || !isDialog(m, "resize", true) {
		t.Fatal("s did not open the size input")
	}
	for _, bad := range []string{"abc", "-1", "100000", "5", ""} {
		for range 8 {
			press(m, "backspace")
		}
		typeText(m, bad)
		press(m, "enter")
		if !isDialog(m, "resize", true) || m.dialog.err == "" {
			t.Fatalf("size %q accepted", bad)
		}
	}
	for range 8 {
		press(m, "backspace")
	}
	typeText(m, "7")
	press(m, "enter")
	if !isDialog(m, "resize", false) || m.dialog.req.size != 7 || m.dialog.focus != 0 {
		t.Fatalf("valid size: %+v", m.dialog)
	}
	if !strings.Contains(m.View(), "desk-6 … desk-7") {
		t.Error("the confirmation does not name the new members")
	}
	cmd := press(m, "tab", "enter")
	m.Update(waitMsg[actionDoneMsg](t, cmd))
	if got, want := acts.Calls(), []call{{op: "resize", pool: "desk", size: 7}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	// Cancel at either step calls nothing.
	press(m, "s", "2", "esc")
	press(m, "s", "2", "enter", "esc")
	press(m, "s", "2", "enter", "enter")
	if len(acts.Calls()) != 1 {
		t.Fatalf("cancelled resizes called %+v", acts.Calls())
	}
}

func TestDeleteNeedsPoolName(t *testing.T) {
	m, acts := openDesk(t, testOpts{})
	press(m, "esc", "D")
	if m.dialog == nil || !isDialog(m, "delete", true) {
		t.Fatal("D did not open the delete dialog")
	}
	typeText(m, "des")
	if cmd := press(m, "enter"); cmd != nil || m.dialog == nil || !strings.Contains(m.dialog.err, "type desk exactly") {
		t.Fatalf("a partial name was accepted: %+v", m.dialog)
	}
	typeText(m, "k")
	cmd := press(m, "enter")
	m.Update(waitMsg[actionDoneMsg](t, cmd))
	if got, want := acts.Calls(), []call{{op: "delete", pool: "desk"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	press(m, "D")
	typeText(m, "desk")
	press(m, "esc")
	if len(acts.Calls()) != 1 || m.dialog != nil {
		t.Fatal("esc did not cancel the delete")
	}
}

func TestActionErrorShownWithoutCrash(t *testing.T) {
	acts := &fakeActions{err: errors.New("pool has no free members (desired 4, claimed 2, unschedulable 2)\x1b[2J")}
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: acts})
	cmd := press(m, "down", "r")
	m.Update(waitMsg[actionDoneMsg](t, cmd))
	s := status(m)
	if !strings.Contains(s, "✗ reconcile desk: pool has no free members") || strings.Contains(s, "\x1b") {
		t.Errorf("status %q", s)
	}
	press(m, "L")
	if !m.showLog || !strings.Contains(m.View(), "ACTION LOG (1 since start)") {
		t.Error("L does not show the log")
	}
	checkScreen(t, m.View(), 120, 40)
	press(m, "L")
	if m.showLog {
		t.Error("L does not hide the log")
	}
}

func TestActionPanicBecomesError(t *testing.T) {
	cmd := actionCmd(t.Context(), panicActions{&fakeActions{}}, "desk", time.Second, 1, actionRequest{act: tableAction(t, "delete"), pool: "desk"})
	msg := cmd().(actionDoneMsg)
	if msg.err == nil || !strings.Contains(msg.err.Error(), "internal error") {
		t.Errorf("panic became %v", msg.err)
	}
}

type panicActions struct{ *fakeActions }

func (panicActions) Delete(_ context.Context, _ string) (engine.DeleteResult, error) {
	panic("boom")
}

func TestReadOnlyIgnoresActionKeys(t *testing.T) {
	acts := &fakeActions{}
	m, _ := newTestModel(t, fixture.Demo(), testOpts{readOnly: true, actions: acts})
	if m.screen != screenWall {
		t.Fatal("read-only does not start on the wall")
	}
	if a, _ := m.reach().actions(poolRefIn(m, "desk")); a != nil || m.canAct() {
		t.Fatal("read-only reaches the Actions")
	}
	try := func(where string) {
		for _, k := range []string{"r", "s", "D", "x", "f"} {
			cmd := press(m, k)
			if m.dialog != nil {
				t.Fatalf("%s: %s opened a dialog", where, k)
			}
			if cmd != nil {
				if _, ok := cmd().(actionDoneMsg); ok {
					t.Fatalf("%s: %s ran an action", where, k)
				}
			}
		}
	}
	try("wall")
	press(m, "tab")
	try("pools")
	press(m, "down", "enter")
	try("members")
	press(m, "down", "enter")
	try("detail")
	if n := len(acts.Calls()); n != 0 {
		t.Fatalf("read-only made %d calls", n)
	}
	if got := m.startAction(actionRequest{act: tableAction(t, "delete"), pool: "desk"}); got != nil {
		t.Fatal("startAction ran in read-only mode")
	}
	press(m, "?")
	help := m.View()
	for _, word := range []string{"reconcile", "resize", "delete", "release"} {
		if strings.Contains(help, word) {
			t.Errorf("read-only help mentions %q", word)
		}
	}
}

// TestActionTable: every action of the table is whole (a known engine
// action, keys no other action has, a label, a description, and a call or a
// tool), its key is bound unless it writes in read-only mode, and the
// permissions asked are its engine actions.
func TestActionTable(t *testing.T) {
	seen := map[string]string{}
	for i := range actionTable {
		a := &actionTable[i]
		if a.name == "" || !a.kind.Known() || len(a.keys) == 0 || a.help == "" || a.describe == nil {
			t.Errorf("%q is not whole: %+v", a.name, a)
		}
		if (a.run == nil) == (a.open == nil) {
			t.Errorf("%s: want an engine call or a tool, not both or neither", a.name)
		}
		if a.open != nil && a.dialog != nil {
			t.Errorf("%s: a tool has no dialog", a.name)
		}
		for _, k := range a.keys {
			if other, dup := seen[k]; dup {
				t.Errorf("key %s is both %s's and %s's", k, other, a.name)
			}
			seen[k] = a.name
		}
		if !slices.Contains(ActionNames, a.kind) {
			t.Errorf("%s: its permission %s is not asked", a.name, a.kind)
		}
		for _, readOnly := range []bool{false, true} {
			k := newKeyMap(readOnly, nil)
			if got := k.actionFor(keyMsg(a.keys[0])); (got == a) != (!readOnly || !a.write) {
				t.Errorf("%s, read-only %v: key %s runs %+v", a.name, readOnly, a.keys[0], got)
			}
		}
	}
}
