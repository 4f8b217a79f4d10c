package engine

// What a reconcile reports: its steps, its actions on members, its timings.

import (
	"fmt"
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
	// StepUnlock removes a stale Lease left on a member that needs nothing
	// else (a reconciler's that stopped, or one with no holder).
	StepUnlock
	// StepStop deletes the Pod of a free member of an elastic pool beyond
	// its spare (the power policy stopped); its PVC stays.
	StepStop
	// StepMark gives a claimed member's Pod its claim marks, or takes them
	// from a free member's (repairClaimMarks).
	StepMark
	// StepRecord writes on a claimed member's data PVC the source its Pod
	// runs, when an earlier release built it without a record
	// (recordClaimedSources).
	StepRecord
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
	case StepUnlock:
		return "unlock"
	case StepStop:
		return "stop"
	case StepMark:
		return "mark"
	case StepRecord:
		return "record"
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
	// Isolation is what the reconcile found and did of an isolated pool's
	// NetworkPolicy (nil for a pool that is not isolated).
	Isolation *IsolationView
	// Rollout is the pool's rollout as this reconcile recorded it (nil:
	// none).
	Rollout *RolloutStatus
	// Protection is what the reconcile found and did of the pool's
	// PodDisruptionBudget (nil for a delete's reconcile).
	Protection *ProtectionView
	// Unprotected is Protection's detail when the claimed desktops stay
	// unprotected (a foreign budget, no permission, a failed write),
	// recorded in the status (Status.Unprotected).
	Unprotected string
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
var MemberSteps = []Step{StepCreate, StepStart, StepReplace, StepDelete, StepUnlock, StepStop, StepMark, StepRecord}

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
