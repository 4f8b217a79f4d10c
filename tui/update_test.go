package tui

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// openDesk opens the members of desk (the second pool).
func openDesk(t *testing.T, o testOpts) (*Model, *fakeActions) {
	t.Helper()
	acts := &fakeActions{}
	if o.actions == nil && !o.readOnly {
		o.actions = acts
	}
	m, _ := newTestModel(t, demoCluster(), o)
	press(m, "down", "enter")
	if m.screen != screenMembers || m.members.pool != "desk" {
		t.Fatalf("screen %d pool %q, want the members of desk", m.screen, m.members.pool)
	}
	return m, acts
}

func TestPoolsNavigation(t *testing.T) {
	m, _ := newTestModel(t, demoCluster(), testOpts{actions: &fakeActions{}})
	steps := []struct {
		key, want string
	}{
		{"down", "desk"}, {"j", "ghost"}, {"up", "desk"}, {"k", "broken"}, {"up", "broken"},
		{"G", "kiosk"}, {"down", "kiosk"}, {"g", "broken"}, {"end", "kiosk"}, {"home", "broken"},
		{"pgdown", "kiosk"}, {"pgup", "broken"},
	}
	for _, s := range steps {
		press(m, s.key)
		if m.pools.selected != s.want {
			t.Fatalf("after %s: selected %q, want %q", s.key, m.pools.selected, s.want)
		}
	}
	press(m, "G", "enter")
	if m.screen != screenMembers || m.members.pool != "kiosk" {
		t.Fatalf("enter opened %d/%q", m.screen, m.members.pool)
	}
	press(m, "esc")
	if m.screen != screenPools || m.pools.selected != "kiosk" {
		t.Fatalf("esc went to %d with %q selected", m.screen, m.pools.selected)
	}
}

func TestMembersNavigationAndSelectionByName(t *testing.T) {
	m, _ := openDesk(t, testOpts{})
	press(m, "down", "down")
	if m.members.selected != "desk-3" {
		t.Fatalf("selected %q, want desk-3", m.members.selected)
	}
	// Sorting by state reorders rows; the selection stays on desk-3.
	press(m, "S")
	if m.members.sort != sortState || m.members.selected != "desk-3" || m.members.current().Name != "desk-3" {
		t.Fatalf("after S: sort %v, selected %q, current %q", m.members.sort, m.members.selected, m.members.current().Name)
	}
	if first := m.members.all[m.members.rows[0]].Name; first != "desk-5" {
		t.Errorf("sorted by state, first row is %s, want the unschedulable desk-5", first)
	}
	// A new snapshot where desk-3 moved still keeps it selected.
	c := demoCluster()
	c.pods = append(c.pods[2:], c.pods[:2]...)
	m.Update(dataMsg{views: c.views(), at: t0, health: health{synced: true, lastSync: t0}})
	if m.members.current().Name != "desk-3" {
		t.Errorf("after a new snapshot the cursor is on %s, want desk-3", m.members.current().Name)
	}
	for i := 1; i < int(numSortKeys); i++ {
		press(m, "S")
	}
	if m.members.sort != sortIndex {
		t.Errorf("S did not cycle back to the member order: %v", m.members.sort)
	}
	press(m, "G")
	if m.members.selected != "desk-6" {
		t.Errorf("G selected %q", m.members.selected)
	}
	press(m, "g")
	if m.members.selected != "desk-1" {
		t.Errorf("g selected %q", m.members.selected)
	}
	// The selected member disappears: the cursor stays in range.
	press(m, "G")
	c = demoCluster()
	c.pods = c.pods[:5]
	c.pvcs = c.pvcs[:5]
	m.Update(dataMsg{views: c.views(), at: t0, health: health{synced: true}})
	if cur := m.members.current(); cur == nil || cur.Name != "desk-5" {
		t.Errorf("after desk-6 vanished the cursor is on %q", m.members.selected)
	}
}

func TestMembersFilter(t *testing.T) {
	m, _ := openDesk(t, testOpts{})
	press(m, "/")
	if !m.members.filtering {
		t.Fatal("/ did not start filtering")
	}
	typeText(m, "bob")
	if len(m.members.rows) != 1 || m.members.current().Name != "desk-2" {
		t.Fatalf("filter bob: %d rows", len(m.members.rows))
	}
	// While typing, action keys are text: "r" does not reconcile.
	if cmd := press(m, "backspace", "backspace", "backspace"); cmd != nil {
		if _, ok := cmd().(actionDoneMsg); ok {
			t.Fatal("a key typed into the filter ran an action")
		}
	}
	typeText(m, "expired")
	if len(m.members.rows) != 1 || m.members.current().Name != "desk-2" {
		t.Fatalf("filter expired: %d rows", len(m.members.rows))
	}
	press(m, "enter")
	if m.members.filtering || m.members.filter.Value() != "expired" {
		t.Fatalf("enter: filtering %v value %q", m.members.filtering, m.members.filter.Value())
	}
	press(m, "esc") // clears the filter, stays in members
	if m.screen != screenMembers || len(m.members.rows) != 6 || m.members.selected != "desk-2" {
		t.Fatalf("esc: screen %d rows %d selected %q", m.screen, len(m.members.rows), m.members.selected)
	}
	press(m, "/")
	typeText(m, "zzz")
	if len(m.members.rows) != 0 || m.members.current() != nil {
		t.Fatal("a filter matching nothing left rows")
	}
	if !strings.Contains(m.View(), "no member matches") {
		t.Error("no hint for an empty filter result")
	}
	press(m, "esc")
	if m.members.filtering || len(m.members.rows) != 6 {
		t.Fatal("esc while typing did not clear the filter")
	}
}

func TestDetailPaneLoadsEvents(t *testing.T) {
	ev := &fakeEvents{}
	m, _ := openDesk(t, testOpts{events: ev})
	press(m, "down")
	cmd := press(m, "enter")
	if m.screen != screenDetail || m.detail.member != "desk-2" || !m.detail.loading {
		t.Fatalf("enter: screen %d member %q loading %v", m.screen, m.detail.member, m.detail.loading)
	}
	if !strings.Contains(m.View(), "loading…") {
		t.Error("the pane does not say its events are loading")
	}
	msg := waitMsg[eventsMsg](t, cmd)
	if ev.calls.Load() != 2 {
		t.Errorf("Events called %d times, want 2 (Pod and PVC)", ev.calls.Load())
	}
	// An answer to an older request is dropped.
	m.Update(eventsMsg{req: msg.req - 1, err: errors.New("stale")})
	if !m.detail.loading {
		t.Fatal("a stale answer was taken")
	}
	m.Update(msg)
	if m.detail.loading || len(m.detail.events) != 3 {
		t.Fatalf("events: loading %v, %d events", m.detail.loading, len(m.detail.events))
	}
	if m.detail.events[0].Reason != "Pulled" {
		t.Errorf("events not newest first: %s", m.detail.events[0].Reason)
	}
	press(m, "esc")
	if m.screen != screenMembers || m.members.selected != "desk-2" {
		t.Fatalf("esc from details: screen %d selected %q", m.screen, m.members.selected)
	}
}

func TestEventsErrorShown(t *testing.T) {
	m, _ := openDesk(t, testOpts{events: &fakeEvents{}})
	press(m, "enter")
	m.Update(eventsMsg{req: m.detail.req, err: errors.New("events is forbidden")})
	if v := m.View(); !strings.Contains(v, "✗ events is forbidden") {
		t.Errorf("events error not shown:\n%s", v)
	}
}

func TestReconcileAction(t *testing.T) {
	acts := &fakeActions{}
	m, _ := newTestModel(t, demoCluster(), testOpts{actions: acts})
	press(m, "down")
	cmd := press(m, "r")
	if len(m.acts.running) != 1 {
		t.Fatal("r did not start an action")
	}
	if !strings.Contains(m.statusView(), "reconcile desk…") {
		t.Errorf("status while running: %q", m.statusView())
	}
	done := waitMsg[actionDoneMsg](t, cmd)
	if got, want := acts.Calls(), []call{{op: "reconcile", pool: "desk"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	m.Update(done)
	if len(m.acts.running) != 0 || !strings.Contains(m.statusView(), "✓ reconcile desk: 1 change") {
		t.Errorf("status after: %q", m.statusView())
	}
}

func TestForceReleaseNeedsConfirmation(t *testing.T) {
	m, acts := openDesk(t, testOpts{})
	press(m, "down") // desk-2, held by bob
	press(m, "f")
	if m.dialog == nil || m.dialog.req.kind != actForceRelease || m.dialog.focus != 0 {
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
	want := []call{{op: "release", pool: "desk", member: "desk-2", identity: "", force: true}}
	if got := acts.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	if s := m.statusView(); !strings.Contains(s, "✓ force-release desk-2 (bob@example.com): released from bob@example.com") {
		t.Errorf("status %q", s)
	}
}

func TestReleaseUsesHolder(t *testing.T) {
	m, acts := openDesk(t, testOpts{})
	press(m, "down", "down") // desk-3, carol
	press(m, "x")
	if m.dialog == nil || m.dialog.req.kind != actRelease {
		t.Fatalf("x: dialog %+v", m.dialog)
	}
	cmd := press(m, "right", "enter")
	m.Update(waitMsg[actionDoneMsg](t, cmd))
	want := []call{{op: "release", pool: "desk", member: "desk-3", identity: "carol@example.com"}}
	if got := acts.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	// An unclaimed member has nothing to release: no dialog, a note.
	press(m, "down") // desk-4
	press(m, "x")
	if m.dialog != nil || !strings.Contains(m.statusView(), "desk-4 is not claimed") {
		t.Errorf("x on a free member: dialog %v status %q", m.dialog, m.statusView())
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
	if m.dialog == nil || m.dialog.kind != dlgResizeInput {
		t.Fatal("s did not open the size input")
	}
	for _, bad := range []string{"abc", "-1", "100000", "5", ""} {
		for range 8 {
			press(m, "backspace")
		}
		typeText(m, bad)
		press(m, "enter")
		if m.dialog.kind != dlgResizeInput || m.dialog.err == "" {
			t.Fatalf("size %q accepted", bad)
		}
	}
	for range 8 {
		press(m, "backspace")
	}
	typeText(m, "7")
	press(m, "enter")
	if m.dialog.kind != dlgResizeConfirm || m.dialog.req.size != 7 || m.dialog.focus != 0 {
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
	if m.dialog == nil || m.dialog.kind != dlgDelete {
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
	m, _ := newTestModel(t, demoCluster(), testOpts{actions: acts})
	cmd := press(m, "down", "r")
	m.Update(waitMsg[actionDoneMsg](t, cmd))
	s := m.statusView()
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
	cmd := actionCmd(t.Context(), panicActions{&fakeActions{}}, time.Second, 1, actionRequest{kind: actDelete, pool: "desk"})
	msg := cmd().(actionDoneMsg)
	if msg.err == nil || !strings.Contains(msg.err.Error(), "internal error") {
		t.Errorf("panic became %v", msg.err)
	}
}

type panicActions struct{ *fakeActions }

func (panicActions) Delete(_ context.Context, _ string) error { panic("boom") }

func TestReadOnlyIgnoresActionKeys(t *testing.T) {
	acts := &fakeActions{}
	m, _ := newTestModel(t, demoCluster(), testOpts{readOnly: true, actions: acts})
	if m.screen != screenWall {
		t.Fatal("read-only does not start on the wall")
	}
	if m.opts.Actions != nil {
		t.Fatal("read-only kept the Actions")
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
	if got := m.startAction(actionRequest{kind: actDelete, pool: "desk"}); got != nil {
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

func TestQuitAndHelpKeys(t *testing.T) {
	m, _ := newTestModel(t, demoCluster(), testOpts{actions: &fakeActions{}})
	if _, ok := press(m, "q")().(tea.QuitMsg); !ok {
		t.Error("q does not quit")
	}
	press(m, "?")
	if !m.showHelp {
		t.Fatal("? does not show help")
	}
	press(m, "r")
	if len(m.acts.running) != 0 {
		t.Fatal("a key behind the help overlay ran an action")
	}
	press(m, "esc")
	if m.showHelp {
		t.Fatal("esc does not close help")
	}
	press(m, "tab")
	if m.screen != screenWall {
		t.Fatal("tab does not show the wall")
	}
	press(m, "tab")
	if m.screen != screenPools {
		t.Fatal("tab does not go back to the table")
	}
	m.dialog = newDeleteDialog(m.st, "desk", m.view("desk"))
	if _, ok := press(m, "ctrl+c")().(tea.QuitMsg); !ok {
		t.Error("ctrl+c does not quit from a dialog")
	}
}

func TestTickAdvancesClock(t *testing.T) {
	m, _ := openDesk(t, testOpts{})
	before := m.View()
	m.Update(tickMsg(t0.Add(20 * time.Minute)))
	if m.now != t0.Add(20*time.Minute) {
		t.Fatal("tick did not set now")
	}
	after := m.View()
	if before == after || !strings.Contains(after, "✗ expired") {
		t.Error("time left did not move with the clock")
	}
	// desk-1's claim (42m old) expires at +18m.
	if !strings.Contains(after, "desk-1 Ready         alice@example.com   1h02m ✗ expired") {
		t.Errorf("desk-1 not shown expired after 20 minutes:\n%s", after)
	}
}

func TestConnectionStates(t *testing.T) {
	m, _ := newTestModel(t, demoCluster(), testOpts{actions: &fakeActions{}})
	set := func(h health) string {
		m.health = h
		return m.headerView()
	}
	if s := set(health{synced: true, lastSync: t0.Add(-2 * time.Second)}); !strings.Contains(s, "● live · synced 2s ago") {
		t.Errorf("live: %q", s)
	}
	if s := set(health{synced: true, lastSync: t0.Add(-time.Minute), errAt: t0.Add(-30 * time.Second), err: errors.New("connection refused")}); !strings.Contains(s, "✗ disconnected · data 1m old") {
		t.Errorf("disconnected: %q", s)
	}
	if s := set(health{}); !strings.Contains(s, "◌ syncing…") {
		t.Errorf("syncing: %q", s)
	}
	m.now = t0.Add(time.Minute)
	if s := set(health{err: errors.New("forbidden"), errAt: t0}); !strings.Contains(s, "✗ disconnected · no data") {
		t.Errorf("never synced with an error: %q", s)
	}
	if s := set(health{}); !strings.Contains(s, "✗ not synced after 1m") {
		t.Errorf("sync deadline: %q", s)
	}
}

func TestMissingDefinitionAndBrokenSpecDoNotCrash(t *testing.T) {
	m, _ := newTestModel(t, demoCluster(), testOpts{actions: &fakeActions{}})
	for _, pool := range []string{"broken", "ghost"} {
		m.openMembers(pool)
		v := m.View()
		checkScreen(t, v, 120, 40)
		press(m, "enter", "esc", "s", "esc", "esc")
	}
	m.openMembers("ghost")
	press(m, "s")
	if m.dialog != nil || !strings.Contains(m.statusView(), "ghost has no definition") {
		t.Errorf("resize of an undefined pool: %v %q", m.dialog, m.statusView())
	}
	// The open pool vanishes from the data.
	m.Update(dataMsg{views: nil, at: t0, health: health{synced: true}})
	if v := m.View(); !strings.Contains(v, "pool ghost is gone") {
		t.Errorf("vanished pool:\n%s", v)
	}
	_ = engine.StateReady
}
