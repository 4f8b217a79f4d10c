package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Step is one of the five reconcile steps.
type Step int

// The reconcile steps, in their order.
const (
	StepCreate Step = iota + 1
	StepStart
	StepReplace
	StepDelete
	StepStatus
	// StepRead is the first read of the pool; it has no member actions and
	// appears only in ReconcileResult.Timings.
	StepRead
)

func (s Step) String() string {
	switch s {
	case StepCreate:
		return "create"
	case StepStart:
		return "start"
	case StepReplace:
		return "replace"
	case StepDelete:
		return "delete"
	case StepStatus:
		return "status"
	case StepRead:
		return "read"
	}
	return fmt.Sprintf("step(%d)", int(s))
}

// MemberAction is one member action a reconcile took or skipped.
type MemberAction struct {
	Step   Step
	Member string
	// Skipped says why nothing was done (claimed, maintenance, lease lost).
	Skipped string
	Err     error
}

// ReconcileResult reports what a reconcile did.
type ReconcileResult struct {
	Actions []MemberAction
	// Status is the status computed at the end (written when it changed).
	Status        Status
	StatusWritten bool
	Errors        []string
	// Timings are how long each step that ran took, in the order they ran
	// (read, create, start, replace, delete, status), measured with the
	// engine's clock. A step with no member to work on does not appear.
	Timings []StepTiming
}

// StepTiming is the time one reconcile step took.
type StepTiming struct {
	Step Step
	Took time.Duration
}

// timeStep adds the time since start to the step's timing.
func (r *ReconcileResult) timeStep(step Step, start, end time.Time) {
	d := max(end.Sub(start), 0)
	for i := range r.Timings {
		if r.Timings[i].Step == step {
			r.Timings[i].Took += d
			return
		}
	}
	r.Timings = append(r.Timings, StepTiming{Step: step, Took: d})
}

// Counts are the actions that changed something, by step, and the number
// of members skipped (failed actions are in neither).
func (r ReconcileResult) Counts() (done map[Step]int, skipped int) {
	done = map[Step]int{}
	for _, a := range r.Actions {
		switch {
		case a.Err != nil:
		case a.Skipped != "":
			skipped++
		default:
			done[a.Step]++
		}
	}
	return done, skipped
}

// MemberSteps are the steps that act on members, in their order.
var MemberSteps = []Step{StepCreate, StepStart, StepReplace, StepDelete}

// Done counts the actions that changed something.
func (r ReconcileResult) Done() int {
	n := 0
	for _, a := range r.Actions {
		if a.Skipped == "" && a.Err == nil {
			n++
		}
	}
	return n
}

// Reconcile brings a pool in line with its definition: create missing
// members, start stopped ones, replace unclaimed drifted or failed ones, delete
// unclaimed ones above the size, record the status. It takes the member Lease
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
	res, err := e.reconcile(ctx, snap, spec, spec.Size)
	res.Timings = append(read.Timings, res.Timings...)
	return res, err
}

// recordSpecError writes a status that names the broken definition, once.
func (e *Engine) recordSpecError(ctx context.Context, snap Snapshot, specErr error) {
	rec, _ := ParseStatus(snap.ConfigMap.Data[KeyStatus])
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
	spec.Size = size
	now := e.Now()
	view := Observe(withSize(snap, spec), now)
	var res ReconcileResult
	var mu sync.Mutex
	add := func(a MemberAction) {
		mu.Lock()
		res.Actions = append(res.Actions, a)
		if a.Err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("%s %s: %v", a.Step, a.Member, a.Err))
		}
		mu.Unlock()
	}

	var creates, starts, unlocks, replaces, deletes []*Member
	var claimedCreates, claimedStarts []*Member
	for i := range view.Members {
		m := &view.Members[i]
		switch memberWork(m) {
		case workClaimedCreate:
			claimedCreates = append(claimedCreates, m)
		case workClaimedStart:
			claimedStarts = append(claimedStarts, m)
		case workDelete:
			deletes = append(deletes, m)
		case workCreate:
			creates = append(creates, m)
		case workReplace:
			replaces = append(replaces, m)
		case workStart:
			starts = append(starts, m)
		case workUnlock:
			unlocks = append(unlocks, m)
		}
	}

	claimedCreates, claimedStarts = e.stillClaimed(ctx, snap.Pool, claimedCreates, claimedStarts, add)

	ns := snap.Namespace
	// timed runs a step when it has members and records how long it took.
	timed := func(step Step, members []*Member, fn func(context.Context, *Member) error) {
		if len(members) == 0 {
			return
		}
		start := e.Now()
		e.runStep(ctx, step, members, add, fn)
		end := e.Now()
		mu.Lock()
		res.timeStep(step, start, end)
		mu.Unlock()
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
		mu.Lock()
		res.timeStep(step, start, end)
		mu.Unlock()
	}
	startPod := func(ctx context.Context, m *Member) error {
		_, err := e.Cluster.CreatePod(ctx, BuildPod(ns, snap.Pool, m.Index, spec))
		return ignoreExists(err)
	}
	// A claimed member is started for its holder, who may release meanwhile.
	startClaimed := func(ctx context.Context, m *Member) error {
		return e.startClaimed(ctx, ns, snap.Pool, spec, m, m.Claim.Holder)
	}
	timed(StepCreate, creates, func(ctx context.Context, m *Member) error {
		return e.createMember(ctx, ns, snap.Pool, m.Index, spec, true)
	})
	claimed(StepCreate, claimedCreates, startClaimed)
	timed(StepStart, starts, startPod)
	claimed(StepStart, claimedStarts, startClaimed)
	timed(StepStart, unlocks, func(context.Context, *Member) error { return nil })
	timed(StepReplace, replaces, func(ctx context.Context, m *Member) error {
		if err := e.destroyMember(ctx, m); err != nil {
			return err
		}
		return e.createMember(ctx, ns, snap.Pool, m.Index, spec, true)
	})
	timed(StepDelete, deletes, func(ctx context.Context, m *Member) error {
		return e.destroyMember(ctx, m)
	})
	sort.Slice(res.Actions, func(i, j int) bool {
		a, b := res.Actions[i], res.Actions[j]
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		return a.Member < b.Member
	})
	sort.Strings(res.Errors)

	// Step 5: record the status. Re-read only when something was done.
	statusStart := e.Now()
	final := view
	if res.Done() > 0 {
		if s, err := e.Cluster.Snapshot(ctx, snap.Pool); err == nil && s.ConfigMap != nil {
			snap = s
			final = Observe(withSize(s, spec), e.Now())
		} else if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("status: re-read pool: %v", err))
		}
	}
	st := final.Status
	st.Errors = res.Errors
	res.Status = st
	if snap.ConfigMap != nil && (!st.sameContent(final.Recorded) || final.RecordedError != nil) {
		t := e.Now()
		st.UpdatedAt = &t
		if err := e.Cluster.PatchConfigMapData(ctx, snap.ConfigMap.Name, KeyStatus, st.Encode()); err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("status: %v", err))
			res.Actions = append(res.Actions, MemberAction{Step: StepStatus, Err: err})
		} else {
			res.StatusWritten = true
			res.Status = st
		}
	}
	res.timeStep(StepStatus, statusStart, e.Now())
	if len(res.Errors) > 0 {
		return res, &StepError{Errors: res.Errors}
	}
	return res, nil
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
)

// memberWork decides what a reconcile does with m (the steps of the
// contract, in their order of precedence).
func memberWork(m *Member) work {
	if m.Index == 0 || m.State == StateTerminating {
		return workNone
	}
	switch {
	case m.Claimed && !m.AboveSize && m.State == StateMissing:
		return workClaimedCreate
	case m.Claimed && !m.AboveSize && m.State == StateStopped && m.PVC.Annotations[AnnotationReleased] == "":
		return workClaimedStart
	case m.AboveSize:
		if m.Exists() || (m.Lease != nil && m.Maintenance) {
			return workDelete
		}
	case m.State == StateMissing:
		return workCreate
	case m.Drift || m.State == StateFailed:
		return workReplace
	case m.State == StateStopped:
		return workStart
	case m.MaintenanceStale:
		// A reconciler stopped after its step and left its Lease on a
		// member that needs nothing else: take the Lease over and remove
		// it, or the member would never be free again.
		return workUnlock
	}
	return workNone
}

// NeedsWork reports whether a reconcile of the pool would change a member
// (and not only skip claimed members or members another reconciler holds).
// The status step is not considered.
func NeedsWork(v PoolView) bool {
	for i := range v.Members {
		m := &v.Members[i]
		switch w := memberWork(m); {
		case w == workNone:
		case w == workClaimedCreate || w == workClaimedStart:
			return true
		case m.Claimed || (m.Lease != nil && !m.MaintenanceStale):
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
	if parsed, err := ParseSpec(cur); err == nil && parsed.Size == spec.Size {
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
