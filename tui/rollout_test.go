package tui

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
)

// R resumes a halted rollout, after a confirmation that says why it halted;
// on a pool whose rollout runs it refuses and opens nothing; read-only, it
// is bound to nothing.
func TestResumeRolloutConfirms(t *testing.T) {
	acts := &fakeActions{}
	m, _ := newTestModel(t, fixture.Rollout(), testOpts{width: 120, height: 40, actions: acts})
	press(m, "R") // desk: rolling
	if m.dialog != nil {
		t.Fatal("R on a rolling pool opened a dialog")
	}
	if !strings.Contains(m.View(), "desk has no halted rollout: nothing to resume") {
		t.Error("R on a rolling pool does not say why nothing happens")
	}
	press(m, "down", "R") // lab: halted
	if m.dialog == nil {
		t.Fatal("R on a halted rollout opened no confirmation")
	}
	view := m.View()
	for _, want := range []string{"Resume the rollout of registry.invalid/lab:9 on lab?", "2 of 2 new members failed", "2 members are still on the old image"} {
		if !strings.Contains(view, want) {
			t.Errorf("the confirmation does not say %q", want)
		}
	}
	press(m, "esc")
	if len(acts.Calls()) != 0 {
		t.Fatalf("a cancelled resume called %+v", acts.Calls())
	}
	press(m, "R")
	cmd := press(m, "tab", "enter")
	m.Update(waitMsg[actionDoneMsg](t, cmd))
	if got, want := acts.Calls(), []call{{op: "resume", pool: "lab"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}

	ro, _ := newTestModel(t, fixture.Rollout(), testOpts{width: 120, height: 40, readOnly: true})
	press(ro, "down", "R")
	if ro.dialog != nil {
		t.Fatal("read-only: R opened a dialog")
	}
}
