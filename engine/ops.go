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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	if m.Unheld {
		// A Lease with no holder is no claim: release has nothing to end;
		// release --force removes the Lease at once (by resourceVersion).
		if !force {
			res.NoOp = true
			return res, nil
		}
		if err := e.Cluster.DeleteLease(ctx, m.Lease.Name, m.Lease.ResourceVersion); err != nil {
			return res, fmt.Errorf("release %s: remove the Lease with no holder: %w", member, err)
		}
		res.RemovedUnheld = true
		return res, nil
	}
	if m.Maintenance {
		return res, maintenanceError(m, e.Now())
	}
	res.PreviousHolder = m.Claim.Holder
	if m.Claim.Holder != identity && !force {
		return res, fmt.Errorf("%w: %s is claimed by %q, not %q (an administrator can use --force)", ErrNotHolder, member, m.Claim.Holder, identity)
	}
	take := setLeaseHolder(m.Lease, ReconcilerIdentity, ReconcilerLeaseTTL, e.Now())
	if take.Annotations == nil {
		take.Annotations = map[string]string{}
	}
	take.Annotations[AnnotationReleasing] = m.Claim.Holder
	held, err := e.Cluster.UpdateLease(ctx, take)
	if err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
			return res, fmt.Errorf("release %s: the claim changed meanwhile (released or renewed by someone else); nothing was done: %w", member, err)
		}
		return res, fmt.Errorf("release %s: take lease: %w (should the API server have taken it all the same, %s is under maintenance and a reconcile rebuilds it once the Lease is stale)", member, err, member)
	}
	// Until the data is marked released, a failure gives the claim back to
	// its holder: nothing was destroyed. From then on the release is never
	// undone: should a delete or a wait fail, the Lease stays with the
	// reconciler (maintenance) and the next reconcile finishes the job once
	// it is stale, as for a reconciler that stopped mid-step.
	marked, destroyed := false, false
	defer func() {
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
			if gerr := e.giveBack(ctx, held, m.Lease); gerr != nil {
				err = fmt.Errorf("%w; giving the claim back failed too (%v): the reconciler Lease stays until it is stale (%s), then a reconcile rebuilds the member", err, gerr, e.Now().Add(ReconcilerLeaseTTL).UTC().Format(time.RFC3339))
			} else {
				err = fmt.Errorf("%w; nothing was destroyed and the claim was given back to %q", err, res.PreviousHolder)
			}
		default:
			err = fmt.Errorf("%w; the release is not undone: %s stays under maintenance and a reconcile finishes it once the reconciler Lease is stale (%s)", err, member, leaseStale(held, e.Now()).UTC().Format(time.RFC3339))
		}
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
			return res, fmt.Errorf("release %s: mark PVC released: %w", member, err)
		}
	}
	marked = true
	if err := e.destroyMember(ctx, m); err != nil {
		return res, fmt.Errorf("release %s: %w", member, err)
	}
	// destroyMember deleted the console Service; the contract's release
	// waits until it is gone too.
	if err := e.wait(ctx, KindService, ConsoleServiceName(member), ""); err != nil {
		return res, fmt.Errorf("release %s: %w", member, err)
	}
	destroyed = true
	// The waits may have taken minutes, and the definition may have changed
	// meanwhile (an apply, a resize): the new member is built from the
	// definition read now, and only when its index is within that size.
	_, spec, err = e.readPool(ctx, pool)
	if err != nil {
		return res, fmt.Errorf("release %s: the old desktop is gone, but the pool definition could not be read again, so no new one was built (the next reconcile creates it): %w", member, err)
	}
	if idx <= spec.Size {
		if err := e.createMember(ctx, snap.Namespace, pool, idx, spec, true); err != nil {
			return res, fmt.Errorf("release %s: the old desktop is gone but a new one could not be created (the next reconcile creates it): %w", member, err)
		}
		res.Recreated = true
	}
	return res, nil
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
	if m.MaintenanceStale || !now.Before(stale) {
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

// ApplyResult reports an apply.
type ApplyResult struct {
	Created   bool
	Changed   bool
	Warnings  []string
	Reconcile ReconcileResult
}

// Apply writes spec as the whole pool definition (creating the pool when
// needed), then reconciles once. The status already recorded is kept. For an
// edit of the stored definition use ApplyEdit.
func (e *Engine) Apply(ctx context.Context, pool string, spec Spec) (ApplyResult, error) {
	return e.ApplyEdit(ctx, pool, func(*Spec) (Spec, error) { return spec, nil }, true)
}

// SpecEdit turns the stored definition (nil for a new pool, or when the
// definition is replaced) into the one to write.
type SpecEdit func(stored *Spec) (Spec, error)

// ApplyEdit creates or changes the pool definition with edit, then
// reconciles once. The definition is written with a compare-and-swap on the
// resourceVersion it was read at, so a concurrent change is never lost. A
// stored definition that does not parse, or says mode: persistent, is an
// error and nothing is written, unless replace is set: then edit gets nil and
// its result replaces the definition whole. Errors of edit are returned as
// they are.
func (e *Engine) ApplyEdit(ctx context.Context, pool string, edit SpecEdit, replace bool) (res ApplyResult, err error) {
	var spec Spec
	defer func() {
		detail := ""
		if spec.Image != "" {
			detail = fmt.Sprintf("image %s size %d", spec.Image, spec.Size)
		}
		e.audit(ctx, AuditEntry{Pool: pool, Action: ActionApply, Detail: detail, Err: err})
	}()
	if err := ValidatePoolName(pool); err != nil {
		return res, err
	}
	snap, err := e.Cluster.Snapshot(ctx, pool)
	if err != nil {
		return res, fmt.Errorf("read pool %s: %w", pool, err)
	}
	var stored *Spec
	if snap.ConfigMap != nil && !replace {
		data := snap.ConfigMap.Data[KeySpec]
		cur, perr := ParseSpec(data)
		switch {
		case errors.Is(perr, ErrPersistentMode):
			return res, fmt.Errorf("pool %s is stored with mode: persistent: %w; nothing was written", pool, perr)
		case perr != nil:
			return res, fmt.Errorf("the stored definition of pool %s (ConfigMap %s) does not parse: %s; nothing was written (fix it with kubectl edit, or give apply --replace to write the whole definition from the flags and the defaults)",
				pool, snap.ConfigMap.Name, LocateSpecError(data, perr))
		}
		stored = &cur
	}
	if spec, err = edit(stored); err != nil {
		return res, err
	}
	spec.Default()
	if err := spec.Validate(); err != nil {
		return res, err
	}
	res.Warnings = spec.Warnings()
	if snap.ConfigMap == nil {
		if _, err := e.Cluster.CreateConfigMap(ctx, BuildConfigMap(e.Namespace, pool, spec)); err != nil {
			if errors.Is(err, ErrAlreadyExists) {
				return res, fmt.Errorf("create pool %s: created by someone else meanwhile; run apply again: %w", pool, err)
			}
			return res, fmt.Errorf("create pool %s: %w", pool, err)
		}
		res.Created, res.Changed = true, true
	} else if snap.ConfigMap.Data[KeySpec] != spec.Encode() || snap.ConfigMap.Labels[LabelPool] != pool {
		if err := e.writeSpec(ctx, snap, spec); err != nil {
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
		e.audit(ctx, AuditEntry{Pool: pool, Action: ActionResize, Detail: fmt.Sprintf("size %d", size), Err: err})
	}()
	snap, spec, err := e.readPool(ctx, pool)
	if err != nil {
		return res, err
	}
	spec.Size = size
	if err := spec.Validate(); err != nil {
		return res, err
	}
	if err := e.writeSpec(ctx, snap, spec); err != nil {
		return res, fmt.Errorf("resize %s: %w", pool, err)
	}
	return e.Reconcile(ctx, pool)
}

// writeSpec writes spec into the pool's ConfigMap with a compare-and-swap on
// the resourceVersion of snap (a merge patch carrying it), and labels the
// ConfigMap with its pool. Nothing is written when the definition is already
// spec.
func (e *Engine) writeSpec(ctx context.Context, snap Snapshot, spec Spec) error {
	cm := snap.ConfigMap
	enc := spec.Encode()
	if cm.Data[KeySpec] == enc && cm.Labels[LabelPool] == snap.Pool {
		return nil
	}
	err := e.Cluster.PatchConfigMap(ctx, cm.Name, cm.ResourceVersion, map[string]string{LabelPool: snap.Pool}, map[string]string{KeySpec: enc})
	if errors.Is(err, ErrConflict) {
		return fmt.Errorf("the pool definition was changed by someone else meanwhile; look again and retry: %w", err)
	}
	return err
}

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
// listed. Deleting a pool that does not exist succeeds.
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
		spec.Size = 0
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
		case m.Unheld:
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
