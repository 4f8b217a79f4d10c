package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeleteResult reports a delete.
type DeleteResult struct {
	// LeftAlone are the objects that carry the pool's label but are not its
	// members ("pvc/scratch, not a member"): delete never touches them.
	LeftAlone []string
}

// Delete removes a pool: size 0 first, then every unclaimed member, then the
// definition. It never removes a claim: while members are claimed (whether
// or not their Pod and PVC still exist) it names them and returns
// ErrClaimed, and it keeps the definition when a member delete fails or a
// reconciler still holds a member's Lease, so it is safe to run again.
// Objects that carry the pool label but are not members are left alone and
// listed. An isolated pool's NetworkPolicy goes last before the definition
// (a policy of that name without the pool label is left alone). Deleting a
// pool that does not exist succeeds.
func (e *Engine) Delete(ctx context.Context, pool string) (res DeleteResult, err error) {
	defer func() { e.audit(ctx, AuditEntry{Pool: pool, Action: ActionDelete, Err: err}) }()
	if err := ValidatePoolName(pool); err != nil {
		return res, err
	}
	snap, err := e.Cluster.Snapshot(ctx, pool)
	if err != nil {
		return res, fmt.Errorf("read pool %s: %w", pool, err)
	}
	if snap.ConfigMap == nil {
		if len(snap.Pods)+len(snap.PVCs) == 0 {
			return res, nil
		}
		return res, fmt.Errorf("%w: %s has no definition but %d Pods and %d PVCs carry its label; remove them by hand", ErrPoolNotFound, pool, len(snap.Pods), len(snap.PVCs))
	}
	spec, perr := ParseSpec(snap.ConfigMap.Data[KeySpec])
	if perr == nil {
		spec = spec.Fixed(0) // an elastic pool too: min and spare no longer hold
		if err := e.writeSpec(ctx, snap, spec); err != nil {
			return res, fmt.Errorf("delete %s: set size 0: %w", pool, err)
		}
		if snap, err = e.Cluster.Snapshot(ctx, pool); err != nil {
			return res, fmt.Errorf("read pool %s: %w", pool, err)
		}
	} else {
		// A broken definition cannot be rewritten; remove its members anyway.
		spec = Spec{Image: "-", Size: 0}
		spec.Default()
	}
	claimed := claimedMembers(Observe(withSize(snap, spec), e.Now()), nil)
	rr, rerr := e.reconcile(ctx, snap, spec, 0)
	for _, a := range rr.Actions {
		if strings.HasPrefix(a.Skipped, "claimed") && !slices.ContainsFunc(claimed, func(c string) bool { return strings.HasPrefix(c, a.Member+" ") }) {
			claimed = append(claimed, a.Member+" ("+a.Skipped+")")
		}
	}
	left, lerr := e.Cluster.Snapshot(ctx, pool)
	if lerr == nil {
		res.LeftAlone = leftAlone(left)
	}
	if len(claimed) > 0 {
		return res, claimedError(pool, claimed)
	}
	if rerr != nil {
		return res, fmt.Errorf("delete %s: the definition stays, run delete again: %w", pool, rerr)
	}
	if lerr != nil {
		return res, fmt.Errorf("read pool %s: %w", pool, lerr)
	}
	lv := Observe(withSize(left, spec), e.Now())
	if claimed = claimedMembers(lv, nil); len(claimed) > 0 {
		return res, claimedError(pool, claimed) // claimed meanwhile
	}
	var remain, busy, blocked []string
	var unheld []*coordinationv1.Lease
	for i := range lv.Members {
		m := &lv.Members[i]
		switch {
		case m.Index == 0:
		case m.Blocked != "":
			blocked = append(blocked, m.Name+" ("+m.Blocked+")")
		case m.Exists():
			remain = append(remain, m.Name)
		case m.Unheld():
			unheld = append(unheld, m.Lease)
		case m.Lease != nil:
			// A reconciler's Lease (a release at work, or another
			// reconcile): only its holder, or a reconcile once it is
			// stale, removes it.
			busy = append(busy, fmt.Sprintf("%s (under maintenance, stale at %s)", m.Name, leaseStale(m.Lease, e.Now()).UTC().Format(time.RFC3339)))
		}
	}
	switch {
	case len(blocked) > 0:
		return res, fmt.Errorf("delete %s: the definition stays: %d members are blocked by objects that are not this pool's: %s; remove those objects and run delete again", pool, len(blocked), strings.Join(blocked, ", "))
	case len(remain) > 0:
		return res, fmt.Errorf("delete %s: %d members still have objects (a reconciler may be working on them): %s; run delete again", pool, len(remain), strings.Join(remain, ", "))
	case len(busy) > 0:
		return res, fmt.Errorf("delete %s: the definition stays while a reconciler holds a member's Lease: %s; run delete again", pool, strings.Join(busy, ", "))
	}
	for _, l := range unheld {
		// No claim and nobody's work: it goes with the pool, unless it
		// changed meanwhile (resourceVersion).
		if err := e.Cluster.DeleteLease(ctx, l.Name, l.ResourceVersion); err != nil && !errors.Is(err, ErrConflict) {
			return res, fmt.Errorf("delete %s: lease %s: %w", pool, l.Name, err)
		}
	}
	// An isolated pool's NetworkPolicy goes before its definition, so that a
	// failure leaves the definition to run delete again with. A definition
	// that does not parse may have been isolated: its policy (the pool
	// label says it is the pool's) is removed when this identity may.
	switch {
	case perr == nil && spec.Isolate:
		if _, err := e.removeIsolation(ctx, pool); err != nil {
			return res, fmt.Errorf("delete %s: the definition stays: %w; run delete again", pool, err)
		}
	case perr != nil:
		_, _ = e.removeIsolation(ctx, pool)
	}
	// The PodDisruptionBudget too (every member is gone by now).
	if _, err := e.removeProtection(ctx, pool); err != nil {
		return res, fmt.Errorf("delete %s: the definition stays: %w; run delete again", pool, err)
	}
	if err := e.Cluster.DeleteConfigMap(ctx, snap.ConfigMap.Name, snap.ConfigMap.UID); err != nil && !errors.Is(err, ErrNotFound) {
		return res, fmt.Errorf("delete %s: definition: %w", pool, err)
	}
	return res, nil
}

// claimedMembers names the members of v held by a user, with their holder,
// appended to out.
func claimedMembers(v PoolView, out []string) []string {
	for i := range v.Members {
		if m := &v.Members[i]; m.Claimed && m.Index > 0 {
			out = append(out, fmt.Sprintf("%s (claimed by %q)", m.Name, m.Claim.Holder))
		}
	}
	return out
}

func claimedError(pool string, claimed []string) error {
	return fmt.Errorf("%w: %s still has %d claimed members: %s; a claim ends only by its release: release them (release --force) and run delete again",
		ErrClaimed, pool, len(claimed), strings.Join(claimed, ", "))
}

// leftAlone lists the objects of snap that carry the pool label but are not
// its members: a name that is no member's, or a member's name on an object
// labelled for another member.
func leftAlone(snap Snapshot) []string {
	var out []string
	add := func(kind, name, member string, meta metav1.ObjectMeta) {
		if _, ok := MemberIndex(snap.Pool, member); !ok {
			out = append(out, kind+"/"+name+", not a member")
		} else if why := foreignWhy(snap.Pool, member, meta); why != "" && kind != "lease" {
			out = append(out, kind+"/"+name+", not this pool's member ("+why+")")
		}
	}
	for _, p := range snap.Pods {
		if p != nil {
			add("pod", p.Name, p.Name, p.ObjectMeta)
		}
	}
	for _, c := range snap.PVCs {
		if c != nil {
			member, ok := MemberFromPVCName(c.Name)
			if !ok {
				member = ""
			}
			add("pvc", c.Name, member, c.ObjectMeta)
		}
	}
	for _, l := range snap.Leases {
		if l != nil {
			member, _ := MemberFromLeaseName(l.Name)
			add("lease", l.Name, member, l.ObjectMeta)
		}
	}
	sort.Strings(out)
	return out
}
