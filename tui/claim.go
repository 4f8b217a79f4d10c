package tui

import (
	"fmt"
	"strings"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// claimDialog asks for the identity a free member of the pool is claimed
// for (the claim command's job, from the dashboard).
func claimDialog(t target, r actionRequest) dialogStep {
	d := dialogStep{title: "Claim a desktop of " + r.pool, confirm: "Claim"}
	if v := t.pool; v != nil {
		d.lines = append(d.lines, fmt.Sprintf("%d free of %s (%d claimed).", v.Status.Free, render.Plural(len(v.Members), "member", "members"), v.Status.Claimed))
	}
	d.lines = append(d.lines,
		"Claims a free member for the identity, as `claim` does: a second",
		"claim for the same identity gets the same desktop. Audited.")
	d.input = &dialogInput{prompt: "Identity (e.g. alice@example.com), then enter:", placeholder: "alice@example.com", limit: 253,
		accept: func(text string, r actionRequest) (actionRequest, *dialogStep, error) {
			// The identity is checked as the claim command checks it; an
			// invalid one stays in the dialog with the reason.
			if err := engine.ValidateIdentity(text); err != nil {
				return r, nil, err
			}
			r.identity = text
			return r, nil, nil
		}}
	return d
}

// claimText is the log's text for a finished claim.
func claimText(req actionRequest, r engine.ClaimResult) string {
	switch {
	case r.Member == "":
		return "no member claimed"
	case r.Renewed:
		return fmt.Sprintf("%s already held %s: its expired claim was renewed", req.identity, r.Member)
	case r.Existing:
		return fmt.Sprintf("%s already holds %s (same desktop)", req.identity, r.Member)
	}
	s := fmt.Sprintf("%s claimed for %s", r.Member, req.identity)
	if len(r.Warnings) > 0 {
		s += " (" + strings.Join(r.Warnings, "; ") + ")"
	}
	return s
}
