package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
)

// openDesk opens the members of desk (the second pool).
func openDesk(t *testing.T, o testOpts) (*Model, *fakeActions) {
	t.Helper()
	acts := &fakeActions{}
	if o.actions == nil && !o.readOnly {
		o.actions = acts
	}
	m, _ := newTestModel(t, fixture.Demo(), o)
	press(m, "down", "enter")
	if m.screen != screenMembers || m.title(m.members.pool) != "desk" {
		t.Fatalf("screen %d pool %q, want the members of desk", m.screen, m.members.pool)
	}
	return m, acts
}

func TestPoolsNavigation(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
	steps := []struct {
		key, want string
	}{
		{"down", "desk"}, {"j", "ghost"}, {"up", "desk"}, {"k", "broken"}, {"up", "broken"},
		{"G", "kiosk"}, {"down", "kiosk"}, {"g", "broken"}, {"end", "kiosk"}, {"home", "broken"},
		{"pgdown", "kiosk"}, {"pgup", "broken"},
	}
	for _, s := range steps {
		press(m, s.key)
		if m.title(m.table.selected) != s.want {
			t.Fatalf("after %s: selected %q, want %q", s.key, m.table.selected, s.want)
		}
	}
	press(m, "G", "enter")
	if m.screen != screenMembers || m.title(m.members.pool) != "kiosk" {
		t.Fatalf("enter opened %d/%q", m.screen, m.members.pool)
	}
	press(m, "esc")
	if m.screen != screenPools || m.title(m.table.selected) != "kiosk" {
		t.Fatalf("esc went to %d with %q selected", m.screen, m.table.selected)
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
	c := fixture.Demo()
	c.Pods = append(c.Pods[2:], c.Pods[:2]...)
	m.Update(dataMsg{pools: c.Views(), at: t0, health: health{synced: true, lastSync: t0}})
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
	c = fixture.Demo()
	c.Pods = c.Pods[:5]
	c.PVCs = c.PVCs[:5]
	m.Update(dataMsg{pools: c.Views(), at: t0, health: health{synced: true}})
	if cur := m.members.current(); cur == nil || cur.Name != "desk-5" {
		t.Errorf("after desk-6 vanished the cursor is on %q", m.members.selected)
	}
}

func TestMembersFilter(t *testing.T) {
	m, _ := openDesk(t, testOpts{})
	press(m, "/")
	if !m.members.filter.typing {
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
	if m.members.filter.typing || m.members.filter.Value() != "expired" {
		t.Fatalf("enter: filtering %v value %q", m.members.filter.typing, m.members.filter.Value())
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
	if m.members.filter.typing || len(m.members.rows) != 6 {
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

func TestQuitAndHelpKeys(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
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
	ref := poolRefIn(m, "desk")
	req := actionRequest{act: tableAction(t, "delete"), ref: ref, pool: "desk"}
	m.dialog = newDialog(m.st, req, deleteDialog(target{ref: ref, title: "desk", pool: m.pool(ref), now: t0}, req))
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
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
	set := func(h health) string {
		m.feed.health = h
		return header(m)
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
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
	for _, pool := range []string{"broken", "ghost"} {
		m.openMembers(poolRefIn(m, pool))
		v := m.View()
		checkScreen(t, v, 120, 40)
		press(m, "enter", "esc", "s", "esc", "esc")
	}
	m.openMembers(poolRefIn(m, "ghost"))
	press(m, "s")
	if m.dialog != nil || !strings.Contains(status(m), "ghost has no definition") {
		t.Errorf("resize of an undefined pool: %v %q", m.dialog, status(m))
	}
	// The open pool vanishes from the data.
	m.Update(dataMsg{pools: nil, at: t0, health: health{synced: true}})
	if v := m.View(); !strings.Contains(v, "pool ghost is gone") {
		t.Errorf("vanished pool:\n%s", v)
	}
	_ = engine.StateReady
}

// An open detail pane reads its Events again when the member's Pod changed,
// at most every eventsRefreshEvery, and keeps showing the old ones meanwhile.
func TestDetailPaneRefreshesEventsWhenTheMemberChanges(t *testing.T) {
	ev := &fakeEvents{}
	m, _ := openDesk(t, testOpts{events: ev})
	press(m, "down")
	m.Update(waitMsg[eventsMsg](t, press(m, "enter")))
	if m.detail.member != "desk-2" || m.detail.loading || ev.calls.Load() != 2 {
		t.Fatalf("opened %q, loading %v, %d calls", m.detail.member, m.detail.loading, ev.calls.Load())
	}
	changed := func(rv string) []engine.PoolView {
		views := fixture.Demo().Views()
		for i := range views {
			if mm := views[i].Member("desk-2"); views[i].Name == "desk" && mm != nil && mm.Pod != nil {
				mm.Pod.ResourceVersion = rv
			}
		}
		return views
	}
	req := m.detail.req
	// Changed, but too soon after the first read.
	m.Update(dataMsg{pools: changed("999"), at: t0.Add(2 * time.Second), health: health{synced: true, lastSync: t0}})
	if m.detail.req != req {
		t.Fatal("Events read again within eventsRefreshEvery")
	}
	// The clock moves on: the change is read.
	_, cmd := m.Update(tickMsg(t0.Add(eventsRefreshEvery + time.Second)))
	if m.detail.req != req+1 {
		t.Fatalf("Events not read again after the member changed (req %d, was %d)", m.detail.req, req)
	}
	if v := m.View(); strings.Contains(v, "loading…") || !strings.Contains(v, "Pulled") {
		t.Errorf("the pane hid its Events while reading them again:\n%s", v)
	}
	m.Update(waitMsg[eventsMsg](t, cmd))
	if m.detail.loading || ev.calls.Load() != 4 {
		t.Fatalf("after the refresh: loading %v, %d calls", m.detail.loading, ev.calls.Load())
	}
	// Nothing changed since: no read.
	m.Update(dataMsg{pools: changed("999"), at: t0.Add(3 * eventsRefreshEvery), health: health{synced: true, lastSync: t0}})
	m.Update(tickMsg(t0.Add(4 * eventsRefreshEvery)))
	if m.detail.req != req+1 {
		t.Fatal("Events read again with no change to the member")
	}
}

// The pools filter: typing narrows the table and moves the selection onto a
// match; enter keeps the filter and opens nothing; esc clears it.
func TestPoolsFilter(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
	all := len(m.table.rows)
	press(m, "/", "c", "a", "d")
	if !m.table.filter.typing || len(m.table.rows) != 1 || m.title(m.table.selected) != "gpu" {
		t.Fatalf("/cad: filtering %v, shown %v, selected %q", m.table.filter.typing, m.table.rows, m.table.selected)
	}
	press(m, "enter")
	if m.table.filter.typing || m.screen != screenPools || len(m.table.rows) != 1 {
		t.Fatalf("enter: filtering %v, screen %d, shown %v", m.table.filter.typing, m.screen, m.table.rows)
	}
	press(m, "enter")
	if m.screen != screenMembers || m.title(m.members.pool) != "gpu" {
		t.Fatalf("enter on the match opened %q (screen %d)", m.members.pool, m.screen)
	}
	press(m, "esc")
	press(m, "esc")
	if m.table.filter.Value() != "" || len(m.table.rows) != all || m.title(m.table.selected) != "gpu" {
		t.Fatalf("esc: filter %q, %d shown of %d, selected %q", m.table.filter.Value(), len(m.table.rows), all, m.table.selected)
	}
	// New data keeps the filter.
	press(m, "/", "z", "z", "enter")
	m.Update(dataMsg{pools: fixture.Demo().Views(), at: t0, health: health{synced: true, lastSync: t0}})
	if len(m.table.rows) != 0 || m.table.selected != (engine.PoolRef{}) {
		t.Fatalf("after new data: shown %v, selected %q", m.table.rows, m.table.selected)
	}
	if cmd := press(m, "r"); cmd != nil || len(m.acts.running) != 0 {
		t.Fatal("an action ran with no pool shown")
	}
}
