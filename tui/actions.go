package tui

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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
		// A halted rollout stops replacing members until an apply or this:
		// the reconcile permission (it writes the pool's ConfigMap and
		// reconciles), audited as a reconcile.
		name: "resume rollout", kind: engine.ActionReconcile, keys: []string{"R"}, help: "resume rollout", write: true,
		on: actsOn(screenPools, screenMembers, screenDetail), scope: scopePool,
		listed: func(v *engine.PoolView) bool {
			if v == nil {
				return false
			}
			return v.RolloutHalted()
		},
		prepare: func(t target, _ *actionRequest) (string, int) {
			if t.pool == nil {
				return refused(t.title + " is not in the snapshot")
			}
			if !t.pool.RolloutHalted() {
				return t.title + " has no halted rollout: nothing to resume", levelWarn
			}
			return "", levelNone
		},
		dialog: resumeDialog,
		run: func(ctx context.Context, a Actions, pool string, _ actionRequest) (string, error) {
			res, err := a.ResumeRollout(ctx, pool)
			return "rollout resumed; " + reconcileText(res), err
		},
		describe: func(r actionRequest) string { return "resume the rollout of " + r.pool },
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

// What the actions above refer to: their dialogs, checks and texts.

// releaseDialog confirms a force-release (f and x).
func releaseDialog(t target, r actionRequest) dialogStep {
	mm, now := t.member, t.now
	d := dialogStep{title: fmt.Sprintf("Force-release %s?", mm.Name), confirm: "Force release", danger: true}
	claim := ""
	if c := mm.LeaseRead(); c != nil {
		claim = " (claimed " + clock(now, c.Acquired)
		if c.Expires.IsZero() || !now.Before(c.Expires) {
			claim += ", expired " + render.Duration(now.Sub(c.Expires)) + " ago)"
		} else {
			claim += ", " + render.Duration(c.Expires.Sub(now)) + " left)"
		}
		if mm.InMaintenance() {
			claim = " (the reconciler's maintenance Lease)"
		}
	}
	d.lines = append(d.lines, "Holder: "+render.OrWord(r.holder, "(none)")+claim)
	d.lines = append(d.lines, "This deletes the Pod, the console Service and the data PVC "+engine.PVCName(mm.Name))
	image := ""
	if t.pool != nil {
		image = t.pool.Spec.Image
	}
	if mm.AboveSize {
		d.lines = append(d.lines, "and does not rebuild it: "+mm.Name+" is above the pool size.")
	} else {
		d.lines = append(d.lines, "and builds a fresh desktop from "+render.OrWord(image, "the pool's image")+".")
	}
	d.lines = append(d.lines, "The user's unsaved work is lost.")
	return d
}

// resizeDialog asks for the new size, then confirms it (resizeConfirm).
func resizeDialog(t target, _ actionRequest) dialogStep {
	v := t.pool
	d := dialogStep{title: "Resize " + v.Name, confirm: "Next"}
	d.lines = []string{fmt.Sprintf("Current size %d: %d claimed, %d free.", v.Size, v.Status.Claimed, v.Status.Free)}
	in := &dialogInput{prompt: fmt.Sprintf("New size (0–%d), then enter:", engine.MaxPoolSize), placeholder: strconv.Itoa(v.Size), limit: 6}
	if s := v.Spec; s.Elastic() {
		// The size typed is the one the pool starts from; the reconciler
		// then moves it within the bounds to keep the spare.
		d.lines = append(d.lines, fmt.Sprintf("Elastic %d..%d, spare %d: the new size is the size it starts from (now %d); "+
			"the reconciler then grows or shrinks it within those bounds to keep the spare free.", s.MinSize, s.MaxSize, s.SpareTarget(), s.Size))
		in.prompt = fmt.Sprintf("New size (%d–%d), then enter:", s.MinSize, s.MaxSize)
	}
	in.accept = func(text string, r actionRequest) (actionRequest, *dialogStep, error) {
		size, err := parseSize(text, r.from)
		if err == nil {
			err = elasticBounds(v, size)
		}
		if err != nil {
			return r, nil, err
		}
		r.size = size
		next := resizeConfirm(v, size)
		return r, &next, nil
	}
	d.input = in
	return d
}

// resizeConfirm is the confirmation of a valid size.
func resizeConfirm(v *engine.PoolView, size int) dialogStep {
	d := dialogStep{title: fmt.Sprintf("Resize %s from %d to %d?", v.Name, v.Size, size), confirm: "Resize", danger: true}
	d.lines = []string{"Resize writes the new size and reconciles once."}
	if v.Spec.Elastic() {
		d.lines[0] = fmt.Sprintf("Resize writes the size it starts from and reconciles once (then it moves within %d..%d).", v.Spec.MinSize, v.Spec.MaxSize)
	}
	if size > v.Size {
		d.lines = append(d.lines, fmt.Sprintf("%s created: %s.", render.Plural(size-v.Size, "member is", "members are"),
			rangeNames(v.Name, v.Size+1, size)))
		return d
	}
	var free, held []string
	for i := range v.Members {
		mm := &v.Members[i]
		if mm.Index <= size || !mm.Exists() {
			continue
		}
		if mm.Claimed {
			held = append(held, mm.Name+" ("+mm.Holder()+")")
		} else {
			free = append(free, mm.Name)
		}
	}
	if len(free) > 0 {
		d.lines = append(d.lines, "Deleted with their data: "+listShort(free, 6)+".")
	}
	if len(held) > 0 {
		d.lines = append(d.lines, "Claimed, so kept until released: "+listShort(held, 4)+".")
	}
	return d
}

func rangeNames(pool string, from, to int) string {
	if from == to {
		return engine.MemberName(pool, from)
	}
	return engine.MemberName(pool, from) + " … " + engine.MemberName(pool, to)
}

func listShort(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// deleteDialog asks for the pool's name as the user sees it (its title),
// typed exactly.
func deleteDialog(t target, r actionRequest) dialogStep {
	d := dialogStep{title: "Delete pool " + r.pool + "?", confirm: "Delete", danger: true}
	members, claimed := 0, 0
	if v := t.pool; v != nil {
		for i := range v.Members {
			if v.Members[i].Exists() {
				members++
			}
			if v.Members[i].Claimed {
				claimed++
			}
		}
	}
	d.lines = []string{
		fmt.Sprintf("The size is set to 0, then %s deleted with", render.Plural(members, "member is", "members are")),
		"their data PVCs, then the definition. This cannot be undone.",
	}
	if claimed > 0 {
		d.lines = append(d.lines, fmt.Sprintf("%s claimed by users.", render.Plural(claimed, "member is", "members are")))
	}
	d.input = &dialogInput{prompt: "Type the pool name to confirm:", placeholder: r.pool, limit: 64,
		accept: func(text string, r actionRequest) (actionRequest, *dialogStep, error) {
			if text != r.pool {
				return r, nil, fmt.Errorf("type %s exactly to delete it", r.pool)
			}
			return r, nil, nil
		}}
	return d
}

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

// parseSize validates a typed pool size.
func parseSize(s string, current int) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("type a number")
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a whole number", s)
	case n < 0:
		return 0, fmt.Errorf("the size must not be negative")
	case n > engine.MaxPoolSize:
		return 0, fmt.Errorf("the size must be at most %d", engine.MaxPoolSize)
	case n == current:
		return 0, fmt.Errorf("the pool already has size %d", n)
	}
	return n, nil
}

// elasticBounds refuses a size outside an elastic pool's [minSize, maxSize]
// (the engine's Validate refuses it too; the dialog says so before).
func elasticBounds(v *engine.PoolView, size int) error {
	if v == nil || !v.Spec.Elastic() {
		return nil
	}
	if s := v.Spec; size < s.MinSize || size > s.MaxSize {
		return fmt.Errorf("%d is outside %d..%d (the elastic pool's minSize..maxSize)", size, s.MinSize, s.MaxSize)
	}
	return nil
}

func reconcileText(r engine.ReconcileResult) string {
	skipped := 0
	for _, a := range r.Actions {
		if a.Skipped != "" {
			skipped++
		}
	}
	s := render.Plural(r.Done(), "change", "changes")
	if skipped > 0 {
		s += fmt.Sprintf(", %d skipped", skipped)
	}
	if n := len(r.Errors); n > 0 {
		s += ", " + render.Plural(n, "error", "errors") + ": " + engine.ErrorSummary(r.Errors, maxErrorLines)
	}
	return s
}

func deleteText(r engine.DeleteResult) string {
	if len(r.LeftAlone) == 0 {
		return "pool deleted"
	}
	return "pool deleted; left alone: " + strings.Join(r.LeftAlone, "; ")
}

func releaseText(req actionRequest, r engine.ReleaseResult) string {
	switch {
	case r.NoOp:
		return req.member + " had no claim: nothing done"
	case r.RemovedUnheld:
		return req.member + " had a Lease with no holder: removed"
	case r.Recreated:
		return fmt.Sprintf("released from %s, rebuilt from the current image", render.OrWord(r.PreviousHolder, req.holder))
	}
	return fmt.Sprintf("released from %s, not rebuilt (above the size)", render.OrWord(r.PreviousHolder, req.holder))
}

// resumeDialog confirms the resume of a halted rollout: why it halted, in
// the failing members' own words, and what resuming does.
func resumeDialog(t target, r actionRequest) dialogStep {
	ro := t.pool.Rollout()
	return dialogStep{title: fmt.Sprintf("Resume the rollout of %s on %s?", ro.Image, t.title), confirm: "Resume", danger: true,
		lines: []string{
			ro.Halted,
			fmt.Sprintf("%d members are still on the old image, serving; resumed, the rollout replaces them at most %d at a time.", ro.Old, ro.Budget),
			"New members that fail halt it again. To roll back instead, apply the old image. Audited.",
		}}
}
