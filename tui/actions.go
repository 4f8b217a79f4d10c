package tui

import (
	"context"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// actionTable is every action of the dashboard, each described once: its
// key and help, where its key is listed, what it acts on, its engine action
// (the permission it is checked for, one name with audit and RBAC), its
// checks, its confirmation and its engine call with the text it logs. The
// key handling (actionKey), the help (keyMap.actionsOn, FullHelp, the
// unavailable actions), the permission check (refusal, ActionNames) and the
// dialog (dialogStep) are derived from it: adding an action is adding an
// entry. The order is the help's.
var actionTable = []action{
	{
		name: "logs", kind: engine.ActionLogs, keys: []string{"l"}, help: "logs",
		on: actsOn(screenMembers, screenDetail), scope: scopeMember,
		mark: sandboxdMark,
		open: func(m *Model, t target, _ actionRequest) tea.Cmd { return m.openLogs(t.ref, t.member) },
		// A read, never logged: the request only names it.
		describe: func(r actionRequest) string { return "logs " + r.member },
	},
	{
		name: "console", kind: engine.ActionConsole, keys: []string{"c"}, help: "console", write: true,
		on: actsOn(screenMembers, screenDetail), scope: scopeMember,
		mark:     sandboxdMark,
		open:     func(m *Model, t target, r actionRequest) tea.Cmd { return m.openConsole(r, t.member) },
		describe: func(r actionRequest) string { return "console " + r.member },
	},
	{
		name: "claim", kind: engine.ActionClaim, keys: []string{"a"}, help: "claim", write: true,
		on: actsOn(screenPools, screenMembers), scope: scopeMembers,
		prepare: func(t target, _ *actionRequest) (string, int) {
			if t.pool == nil || !t.pool.Defined {
				return refused(t.title + " has no definition: no member can be claimed")
			}
			return "", levelNone
		},
		dialog: claimDialog,
		run: func(ctx context.Context, a Actions, pool string, r actionRequest) (string, error) {
			res, err := a.Claim(ctx, pool, r.identity)
			return claimText(r, res), err
		},
		describe: func(r actionRequest) string { return fmt.Sprintf("claim %s for %s", r.pool, r.identity) },
	},
	{
		// The dashboard has no claim identity of its own: releasing a claim
		// from it always releases another identity's, which is a
		// force-release (the same permission check, confirmation and audit
		// as release --force); x and f are one action.
		name: "force-release", kind: engine.ActionForceRelease, keys: []string{"f", "x"}, help: "force-release", write: true,
		on: actsOn(screenMembers, screenDetail), scope: scopeMember,
		prepare: func(t target, r *actionRequest) (string, int) {
			c := t.member.LeaseRead() // the reconciler's too: a force-release may end it
			if c == nil {
				return t.member.Name + " has no claim: nothing to release", levelWarn
			}
			r.holder = c.Holder
			return "", levelNone
		},
		dialog: releaseDialog,
		run: func(ctx context.Context, a Actions, pool string, r actionRequest) (string, error) {
			res, err := a.ForceRelease(ctx, pool, r.member)
			return releaseText(r, res), err
		},
		describe: func(r actionRequest) string {
			if r.holder != "" {
				return fmt.Sprintf("force-release %s (%s)", r.member, r.holder)
			}
			return "force-release " + r.member
		},
	},
	{
		// An expired claim still holds its desktop until it is released;
		// renew keeps it for its holder (a broker that stopped renewing, a
		// user still at work) instead of force-releasing it. It is the
		// engine's claim by the holder's identity, which renews that
		// identity's expired claim: the claim permission, audited as a
		// claim.
		name: "renew", kind: engine.ActionClaim, keys: []string{"n"}, help: "renew", write: true,
		on: actsOn(screenDetail), scope: scopeMember,
		prepare: func(t target, r *actionRequest) (string, int) {
			c := t.member.Claim
			switch {
			case c == nil:
				return t.member.Name + " is not claimed by a user: nothing to renew", levelWarn
			case !c.Expired:
				return fmt.Sprintf("%s's claim on %s has %s left: nothing to renew", c.Holder, t.member.Name, render.Duration(c.Expires.Sub(t.now))), levelWarn
			}
			r.identity = c.Holder
			return "", levelNone
		},
		dialog: func(t target, r actionRequest) dialogStep {
			c, expired := t.member.Claim, "no expiry recorded"
			if !c.Expires.IsZero() {
				expired = "expired " + render.Duration(t.now.Sub(c.Expires)) + " ago"
			}
			return dialogStep{title: fmt.Sprintf("Renew %s's claim on %s?", r.identity, r.member), confirm: "Renew",
				lines: []string{
					fmt.Sprintf("Holder: %s (claimed %s, %s)", r.identity, clock(t.now, c.Acquired), expired),
					fmt.Sprintf("The claim is renewed for %s, as its holder's own claim renews it: the desktop and its data stay.", render.Duration(engine.ClaimDuration)),
					fmt.Sprintf("It is a claim on %s's behalf: should they hold no member of the pool by then, a free one is claimed for them. Audited.", r.identity),
				}}
		},
		run: func(ctx context.Context, a Actions, pool string, r actionRequest) (string, error) {
			res, err := a.Claim(ctx, pool, r.identity)
			switch {
			case err != nil:
				return "", err
			case res.Member != r.member:
				return r.member + " is no longer " + r.identity + "'s: " + claimText(r, res), nil
			case res.Renewed:
				return fmt.Sprintf("%s's claim on %s renewed for %s", r.identity, r.member, render.Duration(engine.ClaimDuration)), nil
			}
			return fmt.Sprintf("%s's claim on %s had been renewed meanwhile: nothing done", r.identity, r.member), nil
		},
		describe: func(r actionRequest) string { return fmt.Sprintf("renew %s for %s", r.member, r.identity) },
	},
	{
		name: "reconcile", kind: engine.ActionReconcile, keys: []string{"r"}, help: "reconcile", write: true,
		on: actsOn(screenPools, screenMembers, screenDetail), scope: scopePool,
		// No dialog: a reconcile only does what the definition says.
		run: func(ctx context.Context, a Actions, pool string, _ actionRequest) (string, error) {
			res, err := a.Reconcile(ctx, pool)
			return reconcileText(res), err
		},
		describe: func(r actionRequest) string { return "reconcile " + r.pool },
	},
	{
		name: "resize", kind: engine.ActionResize, keys: []string{"s"}, help: "resize", write: true,
		on: actsOn(screenPools, screenMembers), scope: scopePool,
		prepare: func(t target, r *actionRequest) (string, int) {
			if t.pool == nil || !t.pool.Defined {
				return refused(t.title + " has no definition to resize")
			}
			r.from = t.pool.Size
			return "", levelNone
		},
		dialog: resizeDialog,
		run: func(ctx context.Context, a Actions, pool string, r actionRequest) (string, error) {
			res, err := a.Resize(ctx, pool, r.size)
			return fmt.Sprintf("size %d; %s", r.size, reconcileText(res)), err
		},
		describe: func(r actionRequest) string { return fmt.Sprintf("resize %s %d → %d", r.pool, r.from, r.size) },
	},
	{
		name: "delete", kind: engine.ActionDelete, keys: []string{"D"}, help: "delete pool", write: true,
		on: actsOn(screenPools), scope: scopePool,
		dialog: deleteDialog,
		run: func(ctx context.Context, a Actions, pool string, _ actionRequest) (string, error) {
			res, err := a.Delete(ctx, pool)
			return deleteText(res), err
		},
		describe: func(r actionRequest) string { return "delete pool " + r.pool },
	},
}

// sandboxdMark marks console and logs in the help when the selected member
// cannot have them (a sandboxd member: "c console ✗ sandboxd").
func sandboxdMark(t target) string {
	if t.member == nil {
		return ""
	}
	var spec engine.Spec
	if t.pool != nil {
		spec = t.pool.Spec
	}
	if engine.StreamingUnavailable(engine.MemberBackend(spec, t.member.Pod)) == "" {
		return ""
	}
	return render.GlyphBad + " sandboxd"
}
