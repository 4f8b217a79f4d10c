package engine

import (
	"context"
	"fmt"
	"sort"
)

// The status a reconcile records: counts, rows, errors, the elastic
// decision and the history.

// recordStatus is step 5: it computes the pool's status into res (with the
// members in blocked marked) and writes it when it changed. It re-reads the
// pool only when something was done (or a create found a member blocked: it
// may have made the member's PVC); view is the pool as the steps started.
func (e *Engine) recordStatus(ctx context.Context, snap Snapshot, spec Spec, view PoolView, blocked map[string]string, res *ReconcileResult, el func(*Status)) {
	statusStart := e.Now()
	final := view
	newlyBlocked := false
	for name := range blocked {
		if m := view.Member(name); m == nil || m.Blocked == "" {
			newlyBlocked = true
		}
	}
	if res.Done() > 0 || newlyBlocked {
		if s, err := e.Cluster.Snapshot(ctx, snap.Pool); err == nil && s.ConfigMap != nil {
			snap = s
			final = Observe(withSize(s, spec), e.Now())
		} else if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("status: re-read pool: %v", err))
		}
	}
	st := final.Status
	if len(blocked) > 0 {
		st = blockStatus(st, &final, blocked)
		for name, why := range blocked {
			res.Errors = append(res.Errors, "blocked "+name+": "+why)
		}
		sort.Strings(res.Errors)
	}
	st.Errors = res.Errors
	if el != nil {
		el(&st)
	}
	st.History = recordHistory(final.Recorded.History, Sample{At: e.serverNow(), Free: st.Free, Claimed: st.Claimed, Size: st.Desired})
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
}

// blockStatus marks the rows of the blocked members (Member.Blocked) and
// takes them out of the free count, as the next Observe will.
func blockStatus(st Status, v *PoolView, blocked map[string]string) Status {
	st.Members = append([]MemberRow(nil), st.Members...)
	for i := range st.Members {
		r := &st.Members[i]
		if why, ok := blocked[r.Name]; ok {
			r.Blocked = why
			if m := v.Member(r.Name); m != nil && m.Free {
				st.Free--
			}
		}
	}
	st.Exhausted = st.Desired > 0 && st.Free == 0
	return st
}
