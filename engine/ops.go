package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// readPool reads a pool and parses its definition. A missing pool is
// ErrPoolNotFound; a persistent pool is ErrPersistentMode.
func (e *Engine) readPool(ctx context.Context, pool string) (Snapshot, Spec, error) {
	if err := ValidatePoolName(pool); err != nil {
		return Snapshot{}, Spec{}, err
	}
	snap, err := e.Cluster.Snapshot(ctx, pool)
	if err != nil {
		return Snapshot{}, Spec{}, fmt.Errorf("read pool %s: %w", pool, err)
	}
	if snap.ConfigMap == nil {
		return snap, Spec{}, fmt.Errorf("%w: %s (no ConfigMap %s in namespace %s)", ErrPoolNotFound, pool, ConfigMapName(pool), e.Namespace)
	}
	spec, err := ParseSpec(snap.ConfigMap.Data[KeySpec])
	if err != nil {
		return snap, Spec{}, fmt.Errorf("pool %s: %w", pool, err)
	}
	return snap, spec, nil
}

// ClaimResult reports a claim.
type ClaimResult struct {
	Member string
	// Existing: the identity already held this member (a second claim gets
	// the same desktop); Renewed: its expired claim was renewed.
	Existing bool
	Renewed  bool
	// Started: the member had no Pod and one was created.
	Started bool
	// Warnings are failures that do not undo the claim (the display annotation).
	Warnings []string
}

// Claim gives a free member of the pool to identity: the first writer to
// create the member's Lease wins. A second claim by the same identity gets the
// same member and renews it when expired. A member with no Pod is started.
func (e *Engine) Claim(ctx context.Context, pool, identity string) (res ClaimResult, err error) {
	defer func() {
		e.audit(ctx, AuditEntry{Pool: pool, Action: "claim", Member: res.Member, Identity: identity, Err: err})
	}()
	if err := ValidateIdentity(identity); err != nil {
		return res, err
	}
	snap, spec, err := e.readPool(ctx, pool)
	if err != nil {
		return res, err
	}
	now := e.Now()
	view := Observe(snap, now)
	for i := range view.Members {
		m := &view.Members[i]
		if !m.Claimed || m.Claim.Holder != identity {
			continue
		}
		res = ClaimResult{Member: m.Name, Existing: true}
		if m.Claim.Expired {
			if _, err := e.Cluster.UpdateLease(ctx, renewLease(m.Lease, now)); err != nil {
				return res, fmt.Errorf("renew claim on %s: %w", m.Name, err)
			}
			res.Renewed = true
		}
		if m.Pod == nil && m.Index > 0 && m.State != StateTerminating {
			if err := e.startClaimed(ctx, snap, spec, m); err != nil {
				return res, err
			}
			res.Started = true
		}
		return res, nil
	}

	var free []*Member
	for i := range view.Members {
		if view.Members[i].Free {
			free = append(free, &view.Members[i])
		}
	}
	rank := map[State]int{StateReady: 0, StateStarting: 1, StateStopped: 2}
	sort.SliceStable(free, func(i, j int) bool { return rank[free[i].State] < rank[free[j].State] })
	for _, m := range free {
		_, err := e.Cluster.CreateLease(ctx, ClaimLease(snap.Namespace, pool, m.Name, identity, now))
		if errors.Is(err, ErrAlreadyExists) {
			continue // someone else was first; try the next free member
		}
		if err != nil {
			return res, fmt.Errorf("claim %s: %w", m.Name, err)
		}
		res = ClaimResult{Member: m.Name}
		if m.PVC != nil {
			who := identity
			if err := e.Cluster.AnnotatePVC(ctx, m.PVC.Name, AnnotationAssignedTo, &who); err != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("display annotation on %s: %v", m.PVC.Name, err))
			}
		}
		if m.Pod == nil {
			if err := e.startClaimed(ctx, snap, spec, m); err != nil {
				return res, err
			}
			res.Started = true
		}
		return res, nil
	}
	st := view.Status
	return res, &NoFreeMembersError{Desired: st.Desired, Claimed: st.Claimed, Unschedulable: st.Unschedulable}
}

// startClaimed creates the Pod of a claimed member that has none (its PVC too
// when that is missing). The claim's Lease protects the member meanwhile.
func (e *Engine) startClaimed(ctx context.Context, snap Snapshot, spec Spec, m *Member) error {
	if m.PVC == nil {
		if err := ignoreExists(e.Cluster.CreatePVC(ctx, BuildPVC(snap.Namespace, snap.Pool, m.Index, spec))); err != nil {
			return fmt.Errorf("start %s: create PVC: %w", m.Name, err)
		}
	}
	if err := ignoreExists(e.Cluster.CreatePod(ctx, BuildPod(snap.Namespace, snap.Pool, m.Index, spec))); err != nil {
		return fmt.Errorf("start %s: create Pod: %w", m.Name, err)
	}
	return nil
}

// ReleaseResult reports a release.
type ReleaseResult struct {
	Member string
	// NoOp: the member had no claim, so nothing was done.
	NoOp           bool
	PreviousHolder string
	// Recreated: a fresh member was built (false when above the size).
	Recreated bool
}

// Release ends identity's claim on member: the Lease passes to the reconciler
// (compare-and-swap), the Pod, console Service and data PVC are deleted and
// waited for, the member is created again from the current source when its
// index is within the size, and the Lease is deleted. With force, the claim
// of another identity is released (identity may then be empty). A member
// without a claim is left alone.
func (e *Engine) Release(ctx context.Context, pool, member, identity string, force bool) (res ReleaseResult, err error) {
	res.Member = member
	defer func() {
		action := "release"
		if force {
			action = "force-release"
		}
		if !res.NoOp || err != nil {
			e.audit(ctx, AuditEntry{Pool: pool, Action: action, Member: member, Identity: identity, PreviousHolder: res.PreviousHolder, Err: err})
		}
	}()
	if !force || identity != "" {
		if err := ValidateIdentity(identity); err != nil {
			return res, err
		}
	}
	snap, spec, err := e.readPool(ctx, pool)
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
	view := Observe(snap, e.Now())
	m := view.Member(member)
	if m == nil || m.Lease == nil {
		res.NoOp = true
		return res, nil
	}
	if m.Maintenance {
		return res, fmt.Errorf("%w: %s (try again when the reconciler is done)", ErrMaintenance, member)
	}
	res.PreviousHolder = m.Claim.Holder
	if m.Claim.Holder != identity && !force {
		return res, fmt.Errorf("%w: %s is claimed by %q, not %q (an administrator can use --force)", ErrNotHolder, member, m.Claim.Holder, identity)
	}
	held, err := e.Cluster.UpdateLease(ctx, setLeaseHolder(m.Lease, ReconcilerIdentity, ReconcilerLeaseTTL, e.Now()))
	if err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
			return res, fmt.Errorf("release %s: the claim changed meanwhile (released or renewed by someone else); nothing was done: %w", member, err)
		}
		return res, fmt.Errorf("release %s: take lease: %w", member, err)
	}
	// Until the old desktop is gone, a failure gives the claim back to its
	// holder, so nobody else is handed the previous user's data.
	destroyed := false
	defer func() {
		if !destroyed {
			if gerr := e.giveBack(ctx, held, m.Lease); gerr != nil {
				err = fmt.Errorf("%w; giving the claim back failed too (%v): the reconciler Lease stays until it is stale, and the member is marked released so it is rebuilt, never reused", err, gerr)
			} else {
				err = fmt.Errorf("%w; the claim was given back to %q", err, res.PreviousHolder)
			}
			return
		}
		if uerr := e.unlock(ctx, held); uerr != nil && err == nil {
			err = fmt.Errorf("release %s: remove lease: %w", member, uerr)
		}
	}()
	// Mark the data as released first: should the delete fail or the process
	// die, the member counts as drifted and is rebuilt, never handed out.
	if m.PVC != nil {
		mark := "true"
		if err := e.Cluster.AnnotatePVC(ctx, m.PVC.Name, AnnotationReleased, &mark); err != nil && !errors.Is(err, ErrNotFound) {
			return res, fmt.Errorf("release %s: mark PVC released: %w", member, err)
		}
	}
	if err := e.destroyMember(ctx, m); err != nil {
		return res, fmt.Errorf("release %s: %w", member, err)
	}
	destroyed = true
	if idx <= spec.Size {
		if err := e.createMember(ctx, snap.Namespace, pool, idx, spec, true); err != nil {
			return res, fmt.Errorf("release %s: the old desktop is gone but a new one could not be created (the next reconcile creates it): %w", member, err)
		}
		res.Recreated = true
	}
	return res, nil
}

// ApplyResult reports an apply.
type ApplyResult struct {
	Created   bool
	Changed   bool
	Warnings  []string
	Reconcile ReconcileResult
}

// Apply creates or updates the pool definition, then reconciles once. The
// status already recorded is kept.
func (e *Engine) Apply(ctx context.Context, pool string, spec Spec) (res ApplyResult, err error) {
	defer func() {
		e.audit(ctx, AuditEntry{Pool: pool, Action: "apply", Detail: fmt.Sprintf("image %s size %d", spec.Image, spec.Size), Err: err})
	}()
	if err := ValidatePoolName(pool); err != nil {
		return res, err
	}
	spec.Default()
	if err := spec.Validate(); err != nil {
		return res, err
	}
	res.Warnings = spec.Warnings()
	snap, err := e.Cluster.Snapshot(ctx, pool)
	if err != nil {
		return res, fmt.Errorf("read pool %s: %w", pool, err)
	}
	if snap.ConfigMap == nil {
		if _, err := e.Cluster.CreateConfigMap(ctx, BuildConfigMap(e.Namespace, pool, spec)); err != nil {
			if errors.Is(err, ErrAlreadyExists) {
				return res, fmt.Errorf("create pool %s: created by someone else meanwhile; run apply again: %w", pool, err)
			}
			return res, fmt.Errorf("create pool %s: %w", pool, err)
		}
		res.Created, res.Changed = true, true
	} else if snap.ConfigMap.Data[KeySpec] != spec.Encode() {
		cm := snap.ConfigMap.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[KeySpec] = spec.Encode()
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[LabelPool] = pool
		if _, err := e.Cluster.UpdateConfigMap(ctx, cm); err != nil {
			return res, fmt.Errorf("update pool %s: %w", pool, err)
		}
		res.Changed = true
	}
	rr, err := e.Reconcile(ctx, pool)
	res.Reconcile = rr
	return res, err
}

// Resize sets the pool size (compare-and-swap on the ConfigMap's
// resourceVersion, so of two concurrent resizes one fails clearly) and
// reconciles once.
func (e *Engine) Resize(ctx context.Context, pool string, size int) (res ReconcileResult, err error) {
	defer func() {
		e.audit(ctx, AuditEntry{Pool: pool, Action: "resize", Detail: fmt.Sprintf("size %d", size), Err: err})
	}()
	snap, spec, err := e.readPool(ctx, pool)
	if err != nil {
		return res, err
	}
	spec.Size = size
	if err := spec.Validate(); err != nil {
		return res, err
	}
	if err := e.updateSpec(ctx, snap, spec); err != nil {
		return res, fmt.Errorf("resize %s: %w", pool, err)
	}
	return e.Reconcile(ctx, pool)
}

func (e *Engine) updateSpec(ctx context.Context, snap Snapshot, spec Spec) error {
	if snap.ConfigMap.Data[KeySpec] == spec.Encode() {
		return nil
	}
	cm := snap.ConfigMap.DeepCopy()
	cm.Data[KeySpec] = spec.Encode()
	if _, err := e.Cluster.UpdateConfigMap(ctx, cm); err != nil {
		if errors.Is(err, ErrConflict) {
			return fmt.Errorf("the pool definition was changed by someone else meanwhile; look again and retry: %w", err)
		}
		return err
	}
	return nil
}

// Delete removes a pool: size 0 first, then every unclaimed member, then the
// definition. It refuses while members are claimed and keeps the definition
// when a member delete fails, so it is safe to run again. Deleting a pool
// that does not exist succeeds.
func (e *Engine) Delete(ctx context.Context, pool string) (err error) {
	defer func() { e.audit(ctx, AuditEntry{Pool: pool, Action: "delete", Err: err}) }()
	if err := ValidatePoolName(pool); err != nil {
		return err
	}
	snap, err := e.Cluster.Snapshot(ctx, pool)
	if err != nil {
		return fmt.Errorf("read pool %s: %w", pool, err)
	}
	if snap.ConfigMap == nil {
		if len(snap.Pods)+len(snap.PVCs) == 0 {
			return nil
		}
		return fmt.Errorf("%w: %s has no definition but %d Pods and %d PVCs carry its label; remove them by hand", ErrPoolNotFound, pool, len(snap.Pods), len(snap.PVCs))
	}
	spec, perr := ParseSpec(snap.ConfigMap.Data[KeySpec])
	if perr == nil {
		spec.Size = 0
		if err := e.updateSpec(ctx, snap, spec); err != nil {
			return fmt.Errorf("delete %s: set size 0: %w", pool, err)
		}
		if snap, err = e.Cluster.Snapshot(ctx, pool); err != nil {
			return fmt.Errorf("read pool %s: %w", pool, err)
		}
	} else {
		// A broken definition cannot be rewritten; remove its members anyway.
		spec = Spec{Image: "-", Size: 0}
		spec.Default()
	}
	res, rerr := e.reconcile(ctx, snap, spec, 0)
	var claimed []string
	for _, a := range res.Actions {
		if strings.HasPrefix(a.Skipped, "claimed") {
			claimed = append(claimed, a.Member+" ("+a.Skipped+")")
		}
	}
	if len(claimed) > 0 {
		return fmt.Errorf("%w: %s still has %d claimed members: %s; release them (release --force) and run delete again", ErrClaimed, pool, len(claimed), strings.Join(claimed, ", "))
	}
	if rerr != nil {
		return fmt.Errorf("delete %s: the definition stays, run delete again: %w", pool, rerr)
	}
	left, err := e.Cluster.Snapshot(ctx, pool)
	if err != nil {
		return fmt.Errorf("read pool %s: %w", pool, err)
	}
	if n := len(left.Pods) + len(left.PVCs); n > 0 {
		return fmt.Errorf("delete %s: %d member objects remain (a reconciler may be working on them); run delete again", pool, n)
	}
	for _, l := range left.Leases {
		if err := e.Cluster.DeleteLease(ctx, l.Name, l.ResourceVersion); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("delete %s: lease %s: %w", pool, l.Name, err)
		}
	}
	if err := e.Cluster.DeleteConfigMap(ctx, snap.ConfigMap.Name, snap.ConfigMap.UID); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("delete %s: definition: %w", pool, err)
	}
	return nil
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
