package engine

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ClaimResult reports a claim.
type ClaimResult struct {
	Member string
	// Existing: the identity already held this member (a second claim gets
	// the same desktop); Renewed: its expired claim was renewed.
	Existing bool
	Renewed  bool
	// Started: the member had no Pod and one was created.
	Started bool
	// Grew: the pool is elastic, had no free member, and the claim took
	// (and built) the first member above its size.
	Grew bool
	// Warnings are failures that do not undo the claim (the display annotation).
	Warnings []string
}

// Claim gives a free member of the pool to identity: the first writer to
// create the member's Lease wins. A second claim by the same identity gets the
// same member and renews it when expired. A member with no Pod is started.
//
// A claim first works from the pool's recorded status and reads by name and
// label (claimFast): a crowd of claims at nine (a login storm) must not cost
// the API server a read of the whole pool per claim. It reads the whole pool
// (claimRead) when the status cannot tell (none, stale, the identity may hold
// a claim it cannot see by label), and when nothing the status called free
// was.
func (e *Engine) Claim(ctx context.Context, pool, identity string) (res ClaimResult, err error) {
	defer func() {
		e.audit(ctx, AuditEntry{Pool: pool, Action: ActionClaim, Member: res.Member, Identity: identity, Err: err})
	}()
	if err := ValidateIdentity(identity); err != nil {
		return res, err
	}
	if err := ValidatePoolName(pool); err != nil {
		return res, err
	}
	r := &claimRound{e: e, ns: e.Namespace, pool: pool, identity: identity}
	if c, ok := e.Cluster.(CachedReader); !ok || !c.SnapshotsCached() {
		if got, done, err := r.fast(ctx); done {
			return got, err
		}
	}
	return r.read(ctx)
}

// claimRound is one claim's attempts: what it learned of the members taken
// and blocked carries over from the fast path to the whole read.
type claimRound struct {
	e                  *Engine
	ns, pool, identity string
	spec               Spec
	cm                 *corev1.ConfigMap // the definition the members are checked against
	taken              map[string]bool
	lost               int // races lost
	blocked            []string
	fromStatus         bool // the candidates come from the recorded status: no objects read yet
	// old: the candidates are members of an earlier source that serve
	// (Member.Serving), tried when none is free.
	old bool
}

// fast claims from the recorded status (see Claim); done is false when the
// whole pool must be read.
func (r *claimRound) fast(ctx context.Context) (ClaimResult, bool, error) {
	e := r.e
	cm, err := e.Cluster.GetConfigMap(ctx, ConfigMapName(r.pool))
	switch {
	case errors.Is(err, ErrNotFound):
		return ClaimResult{}, true, fmt.Errorf("%w: %s (no ConfigMap %s in namespace %s)", ErrPoolNotFound, r.pool, ConfigMapName(r.pool), e.Namespace)
	case err != nil:
		return ClaimResult{}, false, nil // the whole read says what is wrong
	}
	if p, ok := DefinedPool(cm.Name, cm.Labels); !ok || p != r.pool {
		return ClaimResult{}, false, nil
	}
	spec, err := ParseSpec(cm.Data[KeySpec])
	if err != nil {
		return ClaimResult{}, true, fmt.Errorf("pool %s: %w", r.pool, err)
	}
	st, err := ParseStatus(cm.Data[KeyStatus])
	size := EffectiveSize(spec, st.Elastic)
	if err != nil || st.RowsCut > 0 || st.Source != spec.SourceHash() || st.Desired != size || (size > 0 && len(st.Members) == 0) {
		return ClaimResult{}, false, nil // no status of this definition to go by
	}
	for i := range st.Members {
		if st.Members[i].Holder == r.identity {
			return ClaimResult{}, false, nil // a claim of the identity's: renew or start it on the whole read
		}
	}
	// A claim of the identity's made since the status was written is found
	// by converge, once this claim won a Lease: the earlier one is answered
	// (on the whole read, which renews or starts it) and this one given back.
	r.spec, r.cm, r.fromStatus = spec, cm, true
	var free []*Member
	rows := map[string]bool{}
	for i := range st.Members {
		row := &st.Members[i]
		rows[row.Name] = true
		idx, ok := MemberIndex(r.pool, row.Name)
		if !ok || idx > size || row.Holder != "" || row.Maintenance || row.Drift || row.AboveSize || row.Blocked != "" {
			continue
		}
		switch row.State {
		case StateReady, StateStarting, StateStopped:
			free = append(free, &Member{Name: row.Name, Pool: r.pool, Index: idx, State: row.State})
		case StateUnschedulable:
			// Recorded before its PVC was bound or a node had room: it may
			// be free by now. Tried after every member recorded free (the
			// fresh read after its Lease is won says), so that an elastic
			// pool does not grow past a desktop that is ready.
			free = append(free, &Member{Name: row.Name, Pool: r.pool, Index: idx, State: row.State})
		}
	}
	sortFree(free)
	freePick := claimPicker{identity: r.identity, candidates: free}
	if got, done, err := r.try(ctx, &freePick, false); done {
		if got.Existing {
			return ClaimResult{}, false, nil
		}
		return got, true, err
	}
	if spec.Elastic() {
		// The status does not know the members claimed above the size
		// since it was written: the pool's Leases do. The claim tries the
		// first member above the size untaken; a race lost there widens
		// its window to the crowd's (claimPicker.lostIn). Races lost on
		// the members the status called free do not: they tell of a stale
		// status as much as of a crowd (claims one after the other, with
		// no reconcile between, lose them too), and a race lost leaves no
		// trace to count the crowd by.
		r.relist(ctx, &freePick)
		var above []*Member
		for idx := size + 1; idx <= spec.MaxSize; idx++ {
			if name := MemberName(r.pool, idx); !rows[name] {
				above = append(above, &Member{Name: name, Pool: r.pool, Index: idx, State: StateMissing, AboveSize: true})
			}
		}
		if got, done, err := r.try(ctx, &claimPicker{identity: r.identity, candidates: above, window: 1, gone: freePick.gone, lost: r.lost}, true); done {
			if got.Existing {
				return ClaimResult{}, false, nil
			}
			if err == nil {
				got.Grew = true
			}
			return got, true, err
		}
	}
	return ClaimResult{}, false, nil
}

// read claims on a read of the whole pool.
func (r *claimRound) read(ctx context.Context) (res ClaimResult, err error) {
	e, pool, identity := r.e, r.pool, r.identity
	snap, spec, err := e.readPool(ctx, pool)
	if err != nil {
		return res, err
	}
	r.ns, r.spec, r.cm, r.fromStatus = snap.Namespace, spec, snap.ConfigMap, false
	now := e.Now()
	view := Observe(snap, now)
	if m := heldBy(&view, identity); m != nil {
		res = ClaimResult{Member: m.Name, Existing: true}
		if m.Claim.Expired {
			if _, err := e.Cluster.UpdateLease(ctx, renewLease(m.Lease, now)); err != nil {
				return res, fmt.Errorf("renew claim on %s: %w", m.Name, err)
			}
			res.Renewed = true
		}
		if m.Pod == nil && m.Index > 0 && m.State != StateTerminating {
			if err := e.startClaimed(ctx, snap.Namespace, pool, spec, m, identity); err != nil {
				return res, err
			}
			res.Started = true
		}
		return res, nil
	}

	// Every claimant of a crowd reads much the same free list: each starts
	// at a point of it derived from its identity and, after a lost race,
	// reads the Leases again and picks afresh among the members still
	// untaken (claimPicker), so a claim costs O(1) Lease creates whatever
	// the crowd, not one per claimant that came first.
	var free []*Member
	for i := range view.Members {
		if view.Members[i].Free {
			free = append(free, &view.Members[i])
		}
	}
	sortFree(free)
	freePick := claimPicker{identity: identity, candidates: free, gone: r.taken, lost: r.lost}
	if got, done, err := r.try(ctx, &freePick, false); done {
		return got, err
	}
	// A rollout's members still on an earlier source keep serving: when no
	// member of the current source is free, a claim takes one of them (it
	// stays marked drift, and its release rebuilds it from the current
	// source), before an elastic pool grows for it (a build takes a while;
	// they are Ready now).
	var serving []*Member
	for i := range view.Members {
		if m := &view.Members[i]; m.Serving && !r.taken[m.Name] {
			serving = append(serving, m)
		}
	}
	if len(serving) > 0 {
		r.old = true
		got, done, err := r.try(ctx, &claimPicker{identity: identity, candidates: serving, gone: r.taken, lost: r.lost}, false)
		r.old = false
		if done {
			return got, err
		}
	}
	// An elastic pool below its ceiling grows for the claim at once: the
	// claim takes a member above the size that has no objects and no
	// Lease (first writer wins, as for any member) and builds it; the
	// reconciler then takes the size up to it. So a burst larger than the
	// spare waits for no reconcile, only for its desktops to start.
	// A claim alone takes the first member above the size; the claimants of
	// a burst spread over a window of the first ones as wide as the crowd
	// still contending (claimPicker.lostIn), so growth stays at the lowest
	// indices while a crowd still spreads.
	if spec.Elastic() {
		var above []*Member
		for idx := view.Size + 1; idx <= spec.MaxSize; idx++ {
			name := MemberName(pool, idx)
			m := view.Member(name)
			if m != nil && (m.Exists() || m.Lease != nil || m.Blocked != "") {
				continue
			}
			if m == nil {
				m = &Member{Name: name, Pool: pool, Index: idx, State: StateMissing, AboveSize: true}
			}
			above = append(above, m)
		}
		if got, done, err := r.try(ctx, &claimPicker{identity: identity, candidates: above, window: 1, gone: r.taken, lost: r.lost}, true); done {
			if err == nil {
				got.Grew = true
			}
			return got, err
		}
	}
	st := view.Status
	return res, &NoFreeMembersError{Desired: st.Desired, Claimed: st.Claimed, Unschedulable: st.Unschedulable, MaxSize: spec.MaxSize, Blocked: r.blocked}
}

// try claims the members pick offers, one after the other, until one is
// the claimant's (done) or none is left. grow: the members are above the
// size, to be built (they must have no objects).
func (r *claimRound) try(ctx context.Context, pick *claimPicker, grow bool) (ClaimResult, bool, error) {
	if pick.gone == nil {
		pick.gone = map[string]bool{}
	}
	r.taken = pick.gone
	for m := pick.next(); m != nil; m = pick.next() {
		out, got, err := r.claimMember(ctx, m, grow)
		pick.taken(m.Name)
		switch out {
		case claimDone:
			return got, true, err
		case claimBlocked:
			r.blocked = append(r.blocked, err.Error())
		case claimLost:
			// Read the pool's Leases again: the next pick skips every
			// member claimed since this claim's first read.
			pick.lost++
			r.lost = pick.lost
			r.relist(ctx, pick)
			pick.lostIn()
		}
	}
	return ClaimResult{}, false, nil
}

// relist reads the pool's Leases: their members are taken for pick.
func (r *claimRound) relist(ctx context.Context, pick *claimPicker) {
	leases, err := r.e.Cluster.ListLabelledLeases(ctx, r.pool, "")
	if err != nil {
		return
	}
	for _, l := range leases {
		if name, ok := MemberFromLeaseName(l.Name); ok {
			pick.taken(name)
		}
	}
}

// claimOutcome is what one attempt on a member came to.
type claimOutcome int

const (
	claimDone    claimOutcome = iota // the member is the claimant's (or an error)
	claimLost                        // someone else's Lease was first
	claimBlocked                     // an object the pool did not make holds its name
	claimGone                        // a fresh read found it not free (or, to be built, not empty)
)

// claimMember tries to claim m: claimLost when someone else's Lease was
// first, claimBlocked (with a *BlockedError) when an object the pool did not
// make holds the member's name, claimGone when a fresh read finds the
// member not free after all (a stale status or cache) or, to be built
// (grow), not empty; the Lease is given back in both. claimDone otherwise,
// with the claim or an error.
func (r *claimRound) claimMember(ctx context.Context, m *Member, grow bool) (claimOutcome, ClaimResult, error) {
	e, pool, identity := r.e, r.pool, r.identity
	won, err := e.Cluster.CreateLease(ctx, ClaimLease(r.ns, pool, m.Name, identity, e.Now()))
	if errors.Is(err, ErrAlreadyExists) {
		return claimLost, ClaimResult{}, nil
	}
	if err != nil {
		return claimDone, ClaimResult{}, fmt.Errorf("claim %s: %w", m.Name, err)
	}
	res := ClaimResult{Member: m.Name}
	// The same identity may be claiming from another place at this very
	// moment: every racer keeps the identity's earliest claim and gives
	// its own back when it is not that one, so all answer one member.
	first, err := e.converge(ctx, pool, identity, won)
	if err != nil {
		res.Warnings = append(res.Warnings, err.Error())
	} else if first != m.Name {
		return claimDone, ClaimResult{Member: first, Existing: true}, nil
	}
	// The read above may be old (a status, a cache, or a Pod lost since),
	// and it holds only the pool's labelled objects: whether the member is
	// free, whether it is started, and whether it is the pool's at all, is
	// decided on a fresh read of its objects by name. An object the pool
	// did not make on the member's name (no pool labels, or another
	// pool's) blocks it, as in reconcile: its Lease is given back and
	// nothing of it is touched.
	cur, warn := e.readMember(ctx, m)
	giveBack := func(out claimOutcome, why error) (claimOutcome, ClaimResult, error) {
		if err := e.unlock(ctx, won); err != nil {
			return claimDone, ClaimResult{}, fmt.Errorf("claim %s: %v, and giving its Lease back failed: %w", m.Name, why, err)
		}
		return out, ClaimResult{}, why
	}
	if warn != "" {
		if r.fromStatus {
			return giveBack(claimGone, errors.New(warn)) // nothing read of it at all
		}
		res.Warnings = append(res.Warnings, warn)
	}
	if why := blockedBy(pool, m.Name, cur.Pod, cur.PVC, ""); why != "" {
		return giveBack(claimBlocked, &BlockedError{Member: m.Name, Reason: m.Name + ": " + why})
	}
	if warn == "" && r.cm != nil {
		fresh := r.observe(cur)
		switch {
		case grow && fresh.Blocked != "":
			return giveBack(claimGone, fmt.Errorf("%s is no longer empty", m.Name))
		case grow && cur.Exists() && !builtFree(fresh):
			return giveBack(claimGone, fmt.Errorf("%s is no longer empty", m.Name))
		case grow && cur.Exists():
			// Built since the claim's read, free: a spare member a
			// reconciler added while the claim ran (the size it read is
			// behind). The claim takes it, as it would any free member:
			// passed over, it stays free below the claims above it.
		case !grow && !fresh.Free && !(r.old && fresh.Serving) && !(fresh.State == StateMissing && !fresh.AboveSize && fresh.Blocked == ""):
			// (a member within the size that lost its objects since is
			// built for the claim, as reconcile would build it)
			return giveBack(claimGone, fmt.Errorf("%s is no longer free (%s)", m.Name, fresh.State))
		}
	}
	if cur.Pod != nil && !ClaimMarked(cur.Pod) {
		// One write, the first after the checks: from now on the pool's
		// PodDisruptionBudget covers the desktop. A Pod gone meanwhile (an
		// eviction that came before the marks) is started again below, for
		// the claim and marked. Should the patch fail, the claim stands and
		// the next reconcile marks the Pod (repairClaimMarks).
		switch err := e.setClaimMarks(ctx, cur.Pod, true); {
		case errors.Is(err, ErrNotFound):
			cur.Pod = nil
		case err != nil:
			res.Warnings = append(res.Warnings, fmt.Sprintf("claim marks on Pod %s (protection from eviction, until a reconcile sets them): %v", cur.Pod.Name, err))
		}
	}
	if cur.PVC != nil {
		who := identity
		if err := e.Cluster.AnnotatePVC(ctx, cur.PVC.Name, AnnotationAssignedTo, &who); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("display annotation on %s: %v", cur.PVC.Name, err))
		}
	}
	if cur.Pod == nil {
		if err := e.startClaimed(ctx, r.ns, pool, r.spec, cur, identity); err != nil {
			return claimDone, res, err
		}
		res.Started = true
	}
	return claimDone, res, nil
}

// builtFree tells whether m, observed by claimRound.observe above the size
// the claim read, is a member a reconciler just built: the pool's, of the
// current definition, unblocked, starting or started (Unschedulable too: a
// member just built waits for its PVC to bind, and one built for the claim
// would wait as long).
func builtFree(m Member) bool {
	switch m.State {
	case StateReady, StateStarting, StateStopped, StateUnschedulable:
		return m.Index > 0 && m.Blocked == "" && m.Source != "" && !m.Drift
	}
	return false
}

// observe is the member with objects cur as Observe sees it under the
// round's definition and recorded status, without its Lease (the claim's
// own) and without the node's health (a read by name cannot tell it).
func (r *claimRound) observe(cur *Member) Member {
	snap := Snapshot{Namespace: r.ns, Pool: r.pool, ConfigMap: r.cm}
	if cur.Pod != nil {
		snap.Pods = []*corev1.Pod{cur.Pod}
	}
	if cur.PVC != nil {
		snap.PVCs = []*corev1.PersistentVolumeClaim{cur.PVC}
	}
	v := Observe(snap, r.e.Now())
	if m := v.Member(cur.Name); m != nil {
		return *m
	}
	return Member{Name: cur.Name, State: StateMissing}
}

// heldBy returns the member the identity holds (its earliest claim, should
// it hold several), or nil.
func heldBy(v *PoolView, identity string) *Member {
	var held *Member
	for i := range v.Members {
		m := &v.Members[i]
		if m.Claimed && m.Claim.Holder == identity && (held == nil || createdBefore(m.Lease, held.Lease)) {
			held = m
		}
	}
	return held
}
