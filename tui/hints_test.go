package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/key"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// TestKeyHints: the explanations and the diagnosis's fix name the keys of
// the key map the dashboard passes in (a rebound key too), and none when
// actions cannot run or in read-only mode.
func TestKeyHints(t *testing.T) {
	rebound := newKeyMap(false, nil)
	for i := range rebound.actions {
		if rebound.actions[i].act.name == "reconcile" {
			rebound.actions[i].b = key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "reconcile"))
		}
	}
	claim := &engine.Claim{Holder: "alice@example.com", Expires: t0.Add(time.Hour)}
	failed := engine.Member{Name: "desk-1", State: engine.StateFailed, Message: "boom"}
	failedClaimed := engine.Member{Name: "desk-2", State: engine.StateFailed, Message: "boom", Claimed: true, Claim: claim}
	missing := engine.Member{Name: "desk-3", State: engine.StateMissing}
	missingAbove := engine.Member{Name: "desk-4", State: engine.StateMissing, Claimed: true, Claim: claim, AboveSize: true}
	cases := []struct {
		name   string
		hints  keyHints
		member engine.Member
		why    string // in the explanation
		fix    string // the diagnosis's fix
		none   bool   // no key is named
	}{
		{"failed", hintsFrom(ptr(newKeyMap(false, nil)), true), failed, "the next reconcile replaces it (r reconcile)", "", false},
		{"failed and claimed: force-release alone", hintsFrom(ptr(newKeyMap(false, nil)), true), failedClaimed,
			"so it stays until released (f force-release)", "", false},
		{"missing", hintsFrom(ptr(newKeyMap(false, nil)), true), missing, "the next reconcile creates it (r reconcile)", "run reconcile (r)", false},
		{"missing, claimed, above the size: no rebuild to wait for", hintsFrom(ptr(newKeyMap(false, nil)), true), missingAbove,
			"not built again above the pool size: release it to end the claim (f force-release)",
			"not built again (the pool was made smaller): release it to end the claim", false},
		{"a rebound key", hintsFrom(&rebound, true), missing, "the next reconcile creates it (R reconcile)", "run reconcile (R)", false},
		{"no actions wired", hintsFrom(ptr(newKeyMap(false, nil)), false), missing, "the next reconcile creates it", "run reconcile", true},
		{"read-only", hintsFrom(ptr(newKeyMap(true, nil)), true), failedClaimed, "so it stays until released", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := &engine.PoolView{Name: "desk", Defined: true, Source: "s"}
			why := explainMember(v, &c.member, t0, c.hints)
			if !strings.Contains(why, c.why) || strings.Contains(why, "f/x") {
				t.Errorf("explanation %q, want %q in it and a hint by one key", why, c.why)
			}
			if c.none && strings.Contains(why, "(") {
				t.Errorf("explanation without keys names one: %q", why)
			}
			if c.fix != "" {
				if d := diagnose(v, &c.member, nil, nil, c.hints); d.Fix != c.fix {
					t.Errorf("fix %q, want %q", d.Fix, c.fix)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
