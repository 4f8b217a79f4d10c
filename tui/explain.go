package tui

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// explainMember says in plain language why a member is in its state and what
// happens next. It is the one hook a fuller engine diagnosis will replace.
// hints are the dashboard keys that act on the situation, named after it.
func explainMember(v *engine.PoolView, mm *engine.Member, now time.Time, hints keyHints) string {
	var parts []string
	if v != nil && !v.Defined {
		parts = append(parts, "the pool has no definition, so nothing reconciles this member (apply the pool again, or delete its objects)")
	}
	// The diagnosis (shown beside this text) already quotes the cluster's
	// message: do not repeat it.
	msg := func(word string) string {
		if d := diagnose(v, mm, nil, nil, keyHints{}); d.Reason != "" && d.Evidence == mm.Message {
			return ""
		}
		return ": " + render.OrWord(mm.Message, word)
	}
	claimedBy := ""
	if mm.Claimed {
		claimedBy = "claimed by " + mm.Holder()
	}
	switch mm.State {
	case engine.StateFailed:
		p := "failed" + msg("no reason given")
		switch {
		case mm.Claimed:
			p += "; " + claimedBy + ", so it stays until released" + hint(hints.forceRelease)
		case mm.Backoff != nil && !mm.Drift && now.Before(mm.Backoff.RetryAt):
			// A reconcile now would skip it: its backoff holds it.
			p += fmt.Sprintf("; kept for its logs (failure %d in a row): a reconcile replaces it in %s",
				mm.Backoff.Failures, render.Duration(mm.Backoff.RetryAt.Sub(now)))
		default:
			p += "; the next reconcile replaces it" + hint(hints.reconcile)
		}
		parts = append(parts, p)
	case engine.StateUnschedulable:
		parts = append(parts, "the scheduler cannot place its Pod"+msg("no message")+
			"; it becomes free by itself once the cluster has room")
	case engine.StateTerminating:
		parts = append(parts, "being deleted")
	case engine.StateMissing:
		if mm.Claimed && mm.AboveSize {
			// A reconcile builds members up to the size only.
			parts = append(parts, "has no Pod and no PVC; not built again above the pool size: release it to end the claim"+hint(hints.forceRelease))
			break
		}
		parts = append(parts, "has no Pod and no PVC; the next reconcile creates it"+hint(hints.reconcile))
	case engine.StateStopped:
		parts = append(parts, "stopped (data PVC kept, no Pod); a claim or the next reconcile starts it")
	case engine.StateStarting:
		parts = append(parts, "starting: "+podProgress(mm.Pod))
	case engine.StateReady:
		if !mm.Claimed && !mm.InMaintenance() && mm.Free {
			parts = append(parts, "free: ready for the next claim")
		}
	}
	if mm.Claim != nil {
		c := mm.Claim
		switch {
		case c.Expires.IsZero() || !now.Before(c.Expires):
			parts = append(parts, fmt.Sprintf("claim by %s expired %s ago; nobody else can take this desktop until it is released%s",
				c.Holder, render.Duration(now.Sub(c.Expires)), hint(hints.forceRelease)))
		case mm.State != engine.StateFailed:
			parts = append(parts, fmt.Sprintf("%s, %s left on the claim", claimedBy, render.Duration(c.Expires.Sub(now))))
		}
	}
	if mm.InMaintenance() {
		if mm.HoldStale() {
			parts = append(parts, "a reconciler Lease was left behind (stale); the next reconcile takes it over"+hint(hints.reconcile))
		} else {
			parts = append(parts, "the reconciler is working on it (its Lease expires "+render.Ago(now, mm.Hold.Expires)+")")
		}
	}
	if mm.Drift {
		if mm.Claimed {
			parts = append(parts, "drifted from the pool definition: rebuilt from the new source when released")
		} else {
			parts = append(parts, driftWhy(v, mm))
		}
	}
	if mm.AboveSize && (v == nil || v.Defined) {
		if mm.Claimed {
			parts = append(parts, "above the pool size: deleted when released")
		} else {
			parts = append(parts, "above the pool size: the next reconcile deletes it")
		}
	}
	if v != nil && v.Source == "" && v.Defined {
		parts = append(parts, "the pool definition is invalid, so no member counts as free")
	}
	if len(mm.Problems) > 0 {
		parts = append(parts, "problems: "+strings.Join(mm.Problems, "; "))
	}
	if len(parts) == 0 {
		return string(mm.State)
	}
	return strings.Join(parts, "; ")
}

// podProgress describes a Pod that is not Ready yet.
func podProgress(p *corev1.Pod) string {
	if p == nil {
		return "no Pod"
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				return fmt.Sprintf("container %s is waiting: %s", cs.Name, render.JoinNonEmpty(": ", w.Reason, w.Message))
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && (c.Reason != "" || c.Message != "") {
			return fmt.Sprintf("%s=%s %s", c.Type, c.Status, render.JoinNonEmpty(": ", c.Reason, c.Message))
		}
	}
	return "Pod " + render.OrWord(string(p.Status.Phase), "Pending") + ", not Ready yet"
}

// driftWhy says what becomes of an unclaimed drifted member: a rollout's
// old member serves until the rollout replaces it (or, halted, keeps it);
// any other is replaced by the next reconcile.
func driftWhy(v *engine.PoolView, mm *engine.Member) string {
	if !mm.OldSource || v == nil {
		return "drifted from the pool definition: the next reconcile replaces it"
	}
	if v.RolloutHalted() {
		return "on an earlier image: kept, serving claims, while the rollout is halted"
	}
	return "on an earlier image: serves claims until the rollout replaces it, at most " + fmt.Sprint(v.Spec.RolloutBudget(v.Size)) + " members at a time"
}
