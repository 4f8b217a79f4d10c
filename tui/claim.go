package tui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// newClaimDialog asks for the identity a free member of the pool is
// claimed for (the claim command's job, from the dashboard).
// (pool as the user sees it: title).
func newClaimDialog(st themes.Styles, v *engine.PoolView, ref engine.PoolRef, pool string) *dialogModel {
	d := &dialogModel{kind: dlgClaim, title: "Claim a desktop of " + pool, confirm: "Claim", hasInput: true}
	d.req = actionRequest{kind: actClaim, ref: ref, pool: pool}
	if v != nil {
		d.lines = append(d.lines, fmt.Sprintf("%d free of %s (%d claimed).", v.Status.Free, render.Plural(len(v.Members), "member", "members"), v.Status.Claimed))
	}
	d.lines = append(d.lines,
		"Claims a free member for the identity, as `claim` does: a second",
		"claim for the same identity gets the same desktop. Audited.")
	d.prompt = "Identity (e.g. alice@example.com), then enter:"
	d.input = newInput(st, "alice@example.com", 253)
	return d
}

// openClaim opens the claim dialog for a pool.
func (m *Model) openClaim(pool engine.PoolRef) tea.Cmd {
	if !m.canAct() {
		m.setNote(render.GlyphBad+" read-only: claim is a write", levelError)
		return nil
	}
	v := m.pool(pool)
	if v == nil || !v.Defined {
		m.setNote(render.GlyphBad+" "+sanitize.Sanitize(m.title(pool))+" has no definition: no member can be claimed", levelError)
		return nil
	}
	m.dialog = newClaimDialog(m.st, v, pool, m.title(pool))
	return m.dialog.input.Focus()
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
