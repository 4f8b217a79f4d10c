package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// ReleaseResult reports a release.
type ReleaseResult struct {
	Member string
	// NoOp: the member had no claim, so nothing was done.
	NoOp           bool
	PreviousHolder string
	// Recreated: a fresh member was built (false when above the size).
	Recreated bool
	// RemovedUnheld: the member's Lease had no holder (no claim) and a
	// force-release removed it; nothing else was touched.
	RemovedUnheld bool
}

// Release ends identity's claim on member: the Lease passes to the reconciler
// (compare-and-swap), the Pod, console Service and data PVC are deleted and
// waited for, the definition is read again and the member created from it
// when its index is within that size, and the Lease is deleted. A claim of another
// identity is ErrNotHolder (see ForceRelease). A member without a claim is
// left alone.
func (e *Engine) Release(ctx context.Context, pool, member, identity string) (ReleaseResult, error) {
	return e.release(ctx, ActionRelease, pool, member, identity)
}

// ForceRelease ends the claim on member whoever holds it, as Release does
// for its holder. It is an administrator's action: the engine asks Authorize
// for PermForceRelease first. A member without a claim is left alone.
func (e *Engine) ForceRelease(ctx context.Context, pool, member string) (ReleaseResult, error) {
	return e.release(ctx, ActionForceRelease, pool, member, "")
}

// release is Release (action ActionRelease, identity the holder) and
// ForceRelease (ActionForceRelease, no identity).
func (e *Engine) release(ctx context.Context, action Action, pool, member, identity string) (res ReleaseResult, err error) {
	force := action == ActionForceRelease
	res.Member = member
	defer func() {
		if !res.NoOp || err != nil {
			e.audit(ctx, AuditEntry{Pool: pool, Action: action, Member: member, Identity: identity, PreviousHolder: res.PreviousHolder, Err: err})
		}
	}()
	if !force {
		if err := ValidateIdentity(identity); err != nil {
			return res, err
		}
	}
	snap, _, err := e.readPool(ctx, pool)
	if err != nil {
		return res, err
	}
	if force {
		if err := e.authorize(ctx, PermForceRelease); err != nil {
			return res, err
		}
	}
	idx, ok := MemberIndex(pool, member)
	if !ok {
		return res, fmt.Errorf("%w: %q is not a member name of pool %s (%s-<n>)", ErrMemberNotFound, member, pool, pool)
	}
	m, err := e.claimToRelease(ctx, snap, member, identity, force, &res)
	if err != nil || m == nil {
		return res, err
	}
	held, err := e.takeClaim(ctx, m, member)
	if err != nil {
		return res, err
	}
	err = e.replaceReleased(ctx, snap.Namespace, pool, member, idx, m, held, &res)
	return res, err
}

// claimToRelease checks the claim on member in snap that a release is to
// end, and returns the member to take over. It returns no member, and no
// error, when the release ends here: no claim (res.NoOp), or a Lease with no
// holder, which force removes (res.RemovedUnheld). A member under
// maintenance, or (without force) claimed by another identity, is an error;
// res.PreviousHolder is the holder found.
func (e *Engine) claimToRelease(ctx context.Context, snap Snapshot, member, identity string, force bool, res *ReleaseResult) (*Member, error) {
	view := Observe(snap, e.Now())
	m := view.Member(member)
	if m == nil || m.Lease == nil {
		res.NoOp = true
		return nil, nil
	}
	if m.Unheld() {
		// A Lease with no holder is no claim: release has nothing to end;
		// release --force removes the Lease at once (by resourceVersion).
		if !force {
			res.NoOp = true
			return nil, nil
		}
		if err := e.Cluster.DeleteLease(ctx, m.Lease.Name, m.Lease.ResourceVersion); err != nil {
			return nil, fmt.Errorf("release %s: remove the Lease with no holder: %w", member, err)
		}
		res.RemovedUnheld = true
		return nil, nil
	}
	if m.InMaintenance() {
		return nil, maintenanceError(m, e.Now())
	}
	res.PreviousHolder = m.Claim.Holder
	if m.Claim.Holder != identity && !force {
		return nil, fmt.Errorf("%w: %s is claimed by %q, not %q (an administrator can use --force)", ErrNotHolder, member, m.Claim.Holder, identity)
	}
	return m, nil
}

// takeClaim passes m's Lease from its holder to the reconciler
// (compare-and-swap), marked as a release of that holder's claim, and
// returns the Lease now held. When it fails nothing was done.
func (e *Engine) takeClaim(ctx context.Context, m *Member, member string) (*coordinationv1.Lease, error) {
	take := setLeaseHolder(m.Lease, ReconcilerIdentity, ReconcilerLeaseTTL, e.Now())
	if take.Annotations == nil {
		take.Annotations = map[string]string{}
	}
	take.Annotations[AnnotationReleasing] = m.Claim.Holder
	held, err := e.Cluster.UpdateLease(ctx, take)
	if err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("release %s: the claim changed meanwhile (released or renewed by someone else); nothing was done: %w", member, err)
		}
		return nil, fmt.Errorf("release %s: take lease: %w (should the API server have taken it all the same, %s is under maintenance and a reconcile rebuilds it once the Lease is stale)", member, err, member)
	}
	return held, nil
}

// replaceReleased does a release's writes once its claim is taken over
// (held): mark the data released, destroy the member and wait until it is
// gone, then build it again from the definition read now when idx is within
// its size (res.Recreated). settleRelease then removes the Lease, or gives
// the claim back, or leaves the member under maintenance.
func (e *Engine) replaceReleased(ctx context.Context, namespace, pool, member string, idx int, m *Member, held *coordinationv1.Lease, res *ReleaseResult) (err error) {
	marked, destroyed := false, false
	defer func() {
		err = e.settleRelease(ctx, err, member, held, m.Lease, res.PreviousHolder, marked, destroyed)
	}()
	// A claimed member is started without a Lease (Reconcile details): a
	// start that checked the claim before this take may have created a Pod
	// since the pool was read. Destroy what the member has now, or that Pod
	// would stay on the released data and keep its PVC from going.
	if fresh, ferr := e.Cluster.Snapshot(ctx, pool); ferr == nil {
		fv := Observe(fresh, e.Now())
		if cur := fv.Member(member); cur != nil {
			m.Pod, m.PVC = cur.Pod, cur.PVC
		}
	}
	// Mark the data as released first: should the delete fail or the process
	// die, the member counts as drifted and is rebuilt, never handed out.
	if m.PVC != nil {
		mark := "true"
		if err := e.Cluster.AnnotatePVC(ctx, m.PVC.Name, AnnotationReleased, &mark); err != nil && !errors.Is(err, ErrNotFound) {
			// The API server may have taken the mark all the same (its answer
			// lost): the claim goes back only when a fresh read shows the
			// data unmarked; marked, or unknown, the release goes on later.
			marked = !e.pvcUnmarked(ctx, m.PVC)
			return fmt.Errorf("release %s: mark PVC released: %w", member, err)
		}
	}
	marked = true
	if err := e.destroyMember(ctx, m); err != nil {
		return fmt.Errorf("release %s: %w", member, err)
	}
	// destroyMember deleted the console Service; the contract's release
	// waits until it is gone too.
	if err := e.wait(ctx, KindService, ConsoleServiceName(member), ""); err != nil {
		return fmt.Errorf("release %s: %w", member, err)
	}
	destroyed = true
	// The waits may have taken minutes, and the definition may have changed
	// meanwhile (an apply, a resize): the new member is built from the
	// definition read now, and only when its index is within that size.
	again, spec, err := e.readPool(ctx, pool)
	if err != nil {
		return fmt.Errorf("release %s: the old desktop is gone, but the pool definition could not be read again, so no new one was built (the next reconcile creates it): %w", member, err)
	}
	if idx <= EffectiveSize(spec, RecordedElastic(again.ConfigMap.Data[KeyStatus])) {
		if err := e.createMember(ctx, namespace, pool, idx, spec, true); err != nil {
			return fmt.Errorf("release %s: the old desktop is gone but a new one could not be created (the next reconcile creates it): %w", member, err)
		}
		res.Recreated = true
	}
	return nil
}

// settleRelease ends a release whose claim was taken over (held; previous is
// the Lease before, of previousHolder) and whose writes returned err, and
// returns the release's error. Until the data is marked released, a failure
// gives the claim back to its holder: nothing was destroyed. From then on
// the release is never undone: should a delete or a wait fail, the Lease
// stays with the reconciler (maintenance) and the next reconcile finishes
// the job once it is stale, as for a reconciler that stopped mid-step.
func (e *Engine) settleRelease(ctx context.Context, err error, member string, held, previous *coordinationv1.Lease, previousHolder string, marked, destroyed bool) error {
	switch {
	case err == nil || destroyed:
		// Done, or the old desktop is gone and only the new one failed:
		// the Lease goes, so that the next reconcile creates it at once.
		if uerr := e.unlock(ctx, held); uerr != nil && err == nil {
			err = fmt.Errorf("release %s: remove lease: %w", member, uerr)
		} else if uerr != nil {
			err = fmt.Errorf("%w (removing the lease failed too: %v)", err, uerr)
		}
	case !marked:
		if gerr := e.giveBack(ctx, held, previous); gerr != nil {
			err = fmt.Errorf("%w; giving the claim back failed too (%v): the reconciler Lease stays until it is stale (%s), then a reconcile rebuilds the member", err, gerr, e.Now().Add(ReconcilerLeaseTTL).UTC().Format(time.RFC3339))
		} else {
			err = fmt.Errorf("%w; nothing was destroyed and the claim was given back to %q", err, previousHolder)
		}
	default:
		err = fmt.Errorf("%w; the release is not undone: %s stays under maintenance and a reconcile finishes it once the reconciler Lease is stale (%s)", err, member, leaseStale(held, e.Now()).UTC().Format(time.RFC3339))
	}
	return err
}

// pvcUnmarked tells, from a fresh read, that the member's data PVC (the one
// seen, by UID) carries no release mark and is not being deleted: a release
// whose mark failed may give the claim back. Any doubt (the read fails) is a
// no.
func (e *Engine) pvcUnmarked(ctx context.Context, seen *corev1.PersistentVolumeClaim) bool {
	cur, err := e.Cluster.GetPVC(ctx, seen.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		return false // gone meanwhile: no longer the data that was claimed
	case err != nil:
		return false
	case cur.UID != seen.UID:
		return false
	}
	return cur.Annotations[AnnotationReleased] == "" && cur.DeletionTimestamp == nil
}

// maintenanceError says that member is under the reconciler's maintenance
// and when its Lease is stale, from which on a reconcile finishes the work.
func maintenanceError(m *Member, now time.Time) error {
	stale := leaseStale(m.Lease, now)
	if m.HoldStale() || !now.Before(stale) {
		return fmt.Errorf("%w: %s (its Lease is stale since %s: the next reconcile takes it over and finishes the work)", ErrMaintenance, m.Name, stale.UTC().Format(time.RFC3339))
	}
	return fmt.Errorf("%w: %s (its Lease is stale at %s, in %s; a reconcile then finishes the work, or try again when the reconciler is done)",
		ErrMaintenance, m.Name, stale.UTC().Format(time.RFC3339), stale.Sub(now).Round(time.Second))
}

// leaseStale is when a reconciler Lease becomes stale (taken over by the
// next reconcile).
func leaseStale(l *coordinationv1.Lease, now time.Time) time.Time {
	if l == nil {
		return now
	}
	c, _ := interpretLease(l, now)
	if c.Since.IsZero() {
		return now
	}
	return c.Since.Add(ReconcilerLeaseTTL)
}

// giveBack returns a claim the release had taken over to its previous holder
// (compare-and-swap on the Lease the release holds).
func (e *Engine) giveBack(ctx context.Context, held, previous *coordinationv1.Lease) error {
	c := previous.DeepCopy()
	c.ResourceVersion = held.ResourceVersion
	c.Spec.LeaseTransitions = held.Spec.LeaseTransitions
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	_, err := e.Cluster.UpdateLease(gctx, c)
	return err
}
