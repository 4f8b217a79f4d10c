package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// Reconcile brings a pool in line with its definition: create or repair an
// isolated pool's NetworkPolicy, create missing members, start stopped
// ones, replace unclaimed drifted or failed ones (a failing one only once
// its backoff ends: planBackoff), delete unclaimed ones above the size,
// record the status. It takes the member Lease
// as the reconciler before each create, replace or delete and never touches a
// claimed member. It returns a *StepError when any step failed.
func (e *Engine) Reconcile(ctx context.Context, pool string) (ReconcileResult, error) {
	var read ReconcileResult
	start := e.Now()
	snap, err := e.Cluster.Snapshot(ctx, pool)
	read.timeStep(StepRead, start, e.Now())
	if err != nil {
		return read, fmt.Errorf("read pool %s: %w", pool, err)
	}
	if snap.ConfigMap == nil {
		return read, fmt.Errorf("%w: %s (no ConfigMap %s in namespace %s)", ErrPoolNotFound, pool, ConfigMapName(pool), e.Namespace)
	}
	spec, err := ParseSpec(snap.ConfigMap.Data[KeySpec])
	if err != nil {
		e.recordSpecError(ctx, snap, err)
		return read, fmt.Errorf("pool %s: %w", pool, err)
	}
	if _, err := ParseStatus(snap.ConfigMap.Data[KeyStatus]); err != nil {
		// What it records (an elastic pool's size, a rollout and its halt,
		// the members' backoffs) decides what the steps do: a reconciler
		// that cannot read it changes nothing rather than overwrite it.
		return read, &UnreadableStatusError{Pool: pool, ConfigMap: snap.ConfigMap.Name, Err: err}
	}
	var iso *IsolationView
	var pre reconcilePre
	if spec.Isolate {
		v, err := e.ensureIsolation(ctx, pool, spec)
		iso = &v
		if err != nil {
			pre.errors = append(pre.errors, err.Error())
		}
	}
	prot := e.protect(ctx, snap)
	pre.protection = &prot
	size := spec.Size
	var el *ElasticDecision
	if spec.Elastic() {
		// The size is decided on the pool as it is now, at the size its
		// status records; the steps then work at the size decided.
		v := Observe(snap, e.Now())
		d := PlanElasticOn(spec, &v, v.Recorded.Elastic, e.Now(), e.ClockID)
		size, el = d.Status.Size, &d
	}
	res, err := e.reconcileWith(ctx, snap, spec, size, pre, el)
	res.Isolation = iso
	res.Protection = &prot
	res.Timings = append(read.Timings, res.Timings...)
	return res, err
}

// recordSpecError writes a status that names the broken definition, once;
// never over a status it cannot read.
func (e *Engine) recordSpecError(ctx context.Context, snap Snapshot, specErr error) {
	rec, err := ParseStatus(snap.ConfigMap.Data[KeyStatus])
	if err != nil {
		return
	}
	msg := "spec: " + specErr.Error()
	if len(rec.Errors) == 1 && rec.Errors[0] == msg {
		return
	}
	rec.Errors = []string{msg}
	now := e.Now()
	rec.UpdatedAt = &now
	_ = e.Cluster.PatchConfigMapData(ctx, snap.ConfigMap.Name, KeyStatus, rec.Encode())
}

// reconcile runs the steps for a parsed spec with the given size (Delete uses 0).
func (e *Engine) reconcile(ctx context.Context, snap Snapshot, spec Spec, size int) (ReconcileResult, error) {
	return e.reconcileWith(ctx, snap, spec.Fixed(size), size, reconcilePre{}, nil)
}

// reconcilePre is what a reconcile found before its steps: the errors of
// the pool's NetworkPolicy, recorded in the status with the steps' own, and
// the pool's PodDisruptionBudget (nil: a delete's reconcile, which neither
// protects the claimed members nor repairs their claim marks).
type reconcilePre struct {
	errors     []string
	protection *ProtectionView
}

// reconcileWith is reconcile with what was found before its steps (pre). An
// elastic pool's reconcile passes its decision (el): the steps work on the
// pool as a fixed pool of the size decided, the power policy stopped
// stops or keeps stopped the free members beyond the spare, and the
// decision is recorded in the status.
func (e *Engine) reconcileWith(ctx context.Context, snap Snapshot, spec Spec, size int, pre reconcilePre, el *ElasticDecision) (ReconcileResult, error) {
	orig := spec
	spec = spec.Fixed(size)
	now := e.Now()
	view := Observe(withSize(snap, spec), now)
	e.recheckBlocked(ctx, &view)
	backoffs := e.planBackoff(&view, now)
	var resume string
	var written time.Time
	if snap.ConfigMap != nil {
		resume, written = snap.ConfigMap.Data[KeyRolloutResume], Written(snap.ConfigMap)
	}
	roll := planRollout(orig, &view, resume, e.serverNow(), written)
	var res ReconcileResult
	res.Errors = append(res.Errors, pre.errors...)
	if p := pre.protection; p != nil && !p.Protected() {
		res.Unprotected = p.Detail
	}
	var mu sync.Mutex
	blocked := map[string]string{} // members a create found blocked
	add := func(a MemberAction) {
		mu.Lock()
		var be *BlockedError
		if errors.As(a.Err, &be) {
			// Recorded as the member's block, the same words as the next
			// reconcile's, which leaves the member alone.
			blocked[a.Member] = be.Reason
		} else {
			res.Actions = append(res.Actions, a)
			if a.Err != nil {
				res.Errors = append(res.Errors, fmt.Sprintf("%s %s: %v", a.Step, a.Member, a.Err))
			}
		}
		mu.Unlock()
	}
	timeStep := func(step Step, start, end time.Time) {
		mu.Lock()
		res.timeStep(step, start, end)
		mu.Unlock()
	}

	p := planReconcile(&view, blocked, roll.hold, roll.restart, add)
	if el != nil && orig.PowerPolicy() == PowerStopped {
		var keep map[string]bool
		p.stops, keep = stopPlan(orig.SpareTarget(), &view)
		p.starts = slices.DeleteFunc(p.starts, func(m *Member) bool { return keep[m.Name] })
		p.createStopped = stoppedCreates(orig.SpareTarget(), &view, p)
	}
	p.claimedCreates, p.claimedStarts = e.stillClaimed(ctx, snap.Pool, p.claimedCreates, p.claimedStarts, add)
	e.runPlan(ctx, snap, spec, p, add, timeStep)
	if pre.protection != nil {
		e.repairClaimMarks(ctx, &view, add)
	}
	e.recordClaimedSources(ctx, orig, &view, add)
	for _, a := range res.Actions {
		// A failing member replaced (or whose replace was tried: it may
		// have destroyed the member before it failed) counts its new build
		// as the next failure until it is Ready.
		if b := backoffs[a.Member]; a.Step == StepReplace && a.Skipped == "" && b != nil && backedOff(view.Member(a.Member)) {
			backoffs[a.Member] = e.afterReplace(b, e.Now())
		}
	}
	roll.countWave(&view, res.Actions, e.serverNow())
	res.Rollout = roll.rec
	sort.Slice(res.Actions, func(i, j int) bool {
		a, b := res.Actions[i], res.Actions[j]
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		return a.Member < b.Member
	})
	sort.Strings(res.Errors)

	e.recordStatus(ctx, snap, spec, view, blocked, backoffs, &res, elasticRecord(orig, el))
	if len(res.Errors) > 0 {
		return res, &StepError{Errors: res.Errors}
	}
	return res, nil
}

// reconcilePlan is the members each step of a reconcile works on.
type reconcilePlan struct {
	creates, starts, unlocks, replaces, deletes []*Member
	// oldStarts: old members a halted rollout starts on their recorded
	// source (rolloutPlan.restart).
	oldStarts []*Member
	// stops: free members of an elastic pool beyond its spare whose Pod
	// goes (the power policy stopped).
	stops []*Member
	// Claimed members, started for their holder without a reconciler Lease.
	claimedCreates, claimedStarts []*Member
	// createStopped: members created with their PVC only (an elastic pool
	// with the power policy stopped that runs its spare already).
	createStopped map[string]bool
}

// stoppedCreates is which of the plan's creates of an elastic pool with the
// power policy stopped are made stopped (PVC only): those beyond what the
// spare needs running once the plan's starts ran, the highest index first.
// (A pool grown past a gap, by claims of a burst above its size, builds the
// members between stopped, not running beyond the spare until the next
// reconcile stops them.)
func stoppedCreates(spare int, v *PoolView, p reconcilePlan) map[string]bool {
	running := 0
	for i := range v.Members {
		if m := &v.Members[i]; m.Free && m.NodeDown == "" && (m.State == StateReady || m.State == StateStarting) {
			running++
		}
	}
	need := spare - running - len(p.starts) + len(p.stops)
	creates := append([]*Member(nil), p.creates...)
	sort.Slice(creates, func(i, j int) bool { return creates[i].Index < creates[j].Index })
	var stopped map[string]bool
	for i, m := range creates {
		if i < need {
			continue
		}
		if stopped == nil {
			stopped = map[string]bool{}
		}
		stopped[m.Name] = true
	}
	return stopped
}

// planReconcile sorts the members of view into the steps (memberWork). It
// adds the members already blocked to blocked and reports as skipped (add)
// a replace that waits for a down node, for a backoff, or for the
// rollout (hold: why a member of an earlier source waits); the old members a
// halted rollout starts again (restart) go to oldStarts.
func planReconcile(view *PoolView, blocked, hold map[string]string, restart map[string]bool, add func(MemberAction)) reconcilePlan {
	var p reconcilePlan
	for i := range view.Members {
		m := &view.Members[i]
		if m.Blocked != "" && m.Index > 0 {
			blocked[m.Name] = m.Blocked
		}
		switch memberWork(m) {
		case workClaimedCreate:
			p.claimedCreates = append(p.claimedCreates, m)
		case workClaimedStart:
			p.claimedStarts = append(p.claimedStarts, m)
		case workDelete:
			p.deletes = append(p.deletes, m)
		case workCreate:
			p.creates = append(p.creates, m)
		case workReplace:
			if restart[m.Name] {
				p.oldStarts = append(p.oldStarts, m)
				continue
			}
			if why := hold[m.Name]; why != "" && m.OldSource {
				add(MemberAction{Step: StepReplace, Member: m.Name, Skipped: why})
				continue
			}
			p.replaces = append(p.replaces, m)
		case workStart:
			p.starts = append(p.starts, m)
		case workUnlock:
			p.unlocks = append(p.unlocks, m)
		case workWaitNode:
			add(MemberAction{Step: StepReplace, Member: m.Name, Skipped: "node " + m.Node + " is down: replaced once it is back"})
		case workBackoff:
			add(MemberAction{Step: StepReplace, Member: m.Name, Skipped: backoffSkip(m.Backoff, view.ObservedAt)})
		}
	}
	return p
}

// runPlan runs the member steps of p in their order: create, start, unlock,
// replace, delete (each step's claimed members right after its others). Each
// member's outcome goes to add, each step's time to timeStep.
func (e *Engine) runPlan(ctx context.Context, snap Snapshot, spec Spec, p reconcilePlan, add func(MemberAction), timeStep func(step Step, start, end time.Time)) {
	ns := snap.Namespace
	// timed runs a step when it has members and records how long it took.
	timed := func(step Step, members []*Member, fn func(context.Context, *Member) error) {
		if len(members) == 0 {
			return
		}
		start := e.Now()
		e.runStep(ctx, step, members, add, fn)
		end := e.Now()
		timeStep(step, start, end)
	}
	// claimed runs a step on claimed members, without a reconciler Lease.
	claimed := func(step Step, members []*Member, fn func(context.Context, *Member) error) {
		if len(members) == 0 {
			return
		}
		start := e.Now()
		e.forEach(members, func(m *Member) {
			err := ctx.Err()
			if err == nil {
				err = fn(ctx, m)
			}
			if errors.Is(err, errClaimChanged) {
				add(MemberAction{Step: step, Member: m.Name, Skipped: "claim changed meanwhile"})
				return
			}
			add(MemberAction{Step: step, Member: m.Name, Err: err})
		})
		end := e.Now()
		timeStep(step, start, end)
	}
	startPod := func(ctx context.Context, m *Member) error {
		_, err := e.Cluster.CreatePod(ctx, BuildPod(ns, snap.Pool, m.Index, spec))
		return e.createExisting(ctx, err, "pod", snap.Pool, m.Name)
	}
	// A claimed member is started for its holder, who may release meanwhile.
	startClaimed := func(ctx context.Context, m *Member) error {
		return e.startClaimed(ctx, ns, snap.Pool, spec, m, m.Claim.Holder)
	}
	timed(StepCreate, p.creates, func(ctx context.Context, m *Member) error {
		return e.createMember(ctx, ns, snap.Pool, m.Index, spec, !p.createStopped[m.Name])
	})
	claimed(StepCreate, p.claimedCreates, startClaimed)
	timed(StepStart, p.starts, startPod)
	timed(StepStart, p.oldStarts, func(ctx context.Context, m *Member) error {
		_, err := e.Cluster.CreatePod(ctx, BuildPod(ns, snap.Pool, m.Index, claimedSpec(spec, m.PVC)))
		return e.createExisting(ctx, err, "pod", snap.Pool, m.Name)
	})
	claimed(StepStart, p.claimedStarts, startClaimed)
	timed(StepUnlock, p.unlocks, func(context.Context, *Member) error { return nil })
	timed(StepReplace, p.replaces, func(ctx context.Context, m *Member) error {
		if err := e.destroyMember(ctx, m); err != nil {
			return err
		}
		return e.createMember(ctx, ns, snap.Pool, m.Index, spec, true)
	})
	timed(StepDelete, p.deletes, func(ctx context.Context, m *Member) error {
		return e.destroyMember(ctx, m)
	})
	timed(StepStop, p.stops, e.stopMember)
}

// work is what a reconcile does with one member.
type work int

const (
	workNone work = iota
	// Under the reconciler's Lease (skipped when another holds it):
	workCreate
	workStart
	workReplace
	workDelete
	workUnlock // take a stale reconciler Lease over and remove it
	// Without a Lease: a claimed member belongs to its user; nothing of it is
	// destroyed, but one that lost its Pod is started with the user's data
	// PVC, and one that lost both is built again.
	workClaimedCreate
	workClaimedStart
	// Nothing while the member's node is down (Member.NodeDown): a
	// replace waits for the node, and the reconcile says so.
	workWaitNode
	// Nothing while a failing member's backoff runs (planBackoff): it is
	// kept for its logs, and the reconcile says so.
	workBackoff
)

// memberWork decides what a reconcile does with m (the steps of the
// contract, in their order of precedence).
func memberWork(m *Member) work {
	if m.Index == 0 || m.State == StateTerminating || m.Blocked != "" {
		return workNone
	}
	switch {
	case m.Claimed && !m.AboveSize && m.State == StateMissing:
		return workClaimedCreate
	case m.Claimed && m.State == StateStopped && m.PVC.Annotations[AnnotationReleased] == "":
		// Above the size too: a claimed member stays its user's until
		// released, whatever the size, and a Pod it lost (an eviction, a
		// deleted Pod, a node gone) comes back on the user's data. (A
		// claimed member above the size that lost its data as well is not
		// built again: the pool was made smaller, and its release ends it.)
		return workClaimedStart
	case m.AboveSize:
		if m.Exists() || m.Hold != nil {
			return workDelete
		}
	case m.State == StateMissing:
		return workCreate
	case (m.Drift || m.State == StateFailed) && m.NodeDown != "":
		// Never replaced because of its node: the Pod's readings are
		// stale while the node is down and the desktop is probably fine
		// (a delete could not even finish without the node's kubelet).
		// It is replaced, if it still needs it, once the node is back.
		// (A member above the size still goes: that is the pool's size,
		// not the node.)
		return workWaitNode
	case m.backoffWait:
		return workBackoff
	case m.Drift || m.State == StateFailed:
		return workReplace
	case m.State == StateStopped:
		return workStart
	case m.HoldStale():
		// A reconciler stopped after its step and left its Lease on a
		// member that needs nothing else, or a Lease with no holder is
		// stale: take the Lease over and remove it, or the member would
		// never be free again.
		return workUnlock
	}
	return workNone
}

// NeedsWork reports whether a reconcile of the pool would change a member
// (and not only skip claimed members or members another reconciler holds).
// The status step is not considered.
func NeedsWork(v PoolView) bool {
	work, keepStopped := elasticWork(&v)
	if work {
		return true
	}
	halted := v.RolloutHalted()
	for i := range v.Members {
		m := &v.Members[i]
		if markNeeded(m) {
			return true
		}
		if _, ok := recordWork(v.Spec, m); ok {
			return true
		}
		switch w := memberWork(m); {
		case w == workNone, w == workWaitNode, w == workBackoff:
		case w == workReplace && halted && m.OldSource && m.State != StateStopped:
			// a halted rollout keeps it (a resume is a change the
			// reconcile reads wherever it reads)
		case w == workStart && keepStopped[m.Name]:
		case w == workClaimedCreate || w == workClaimedStart:
			return true
		case m.Claimed || (m.Lease != nil && !m.HoldStale()):
			// the reconciler's Lease cannot be taken: skipped
		default:
			return true
		}
	}
	return false
}

// withSize returns the snapshot with its ConfigMap's spec replaced by spec
// (for Delete, which reconciles to size 0 before the definition changes).
func withSize(snap Snapshot, spec Spec) Snapshot {
	if snap.ConfigMap == nil {
		return snap
	}
	cur := snap.ConfigMap.Data[KeySpec]
	enc := spec.Encode()
	if cur == enc {
		return snap
	}
	if parsed, err := ParseSpec(cur); err == nil && parsed.Size == spec.Size && parsed.Elastic() == spec.Elastic() {
		return snap
	}
	cm := snap.ConfigMap.DeepCopy()
	if cm.Data == nil { // a hand-made ConfigMap may have no data at all
		cm.Data = map[string]string{}
	}
	cm.Data[KeySpec] = enc
	snap.ConfigMap = cm
	return snap
}
