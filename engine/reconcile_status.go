package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// The status a reconcile records: counts, rows, errors, the elastic
// decision and the history.

// recordStatus is step 5: it computes the pool's status into res (with the
// members in blocked marked, and the failing members' backoffs) and writes
// it when it changed. It re-reads the
// pool only when something was done (or a create found a member blocked: it
// may have made the member's PVC); view is the pool as the steps started.
func (e *Engine) recordStatus(ctx context.Context, snap Snapshot, spec Spec, view PoolView, blocked map[string]string, backoffs map[string]*Backoff, res *ReconcileResult, el func(*Status)) {
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
	recordBackoffs(&st, &final, backoffs)
	if len(blocked) > 0 {
		st = blockStatus(st, &final, blocked)
		for name, why := range blocked {
			res.Errors = append(res.Errors, "blocked "+name+": "+why)
		}
		sort.Strings(res.Errors)
	}
	st.Errors = res.Errors
	st.Rollout = res.Rollout
	st.Future = final.Recorded.Future
	st.Unprotected = res.Unprotected
	if el != nil {
		el(&st)
		if !sameElastic(final.Recorded.Elastic, view.Recorded.Elastic) {
			// Another reconciler decided the size while this one worked: its
			// decision stands (the next reconcile decides again).
			st.Elastic = final.Recorded.Elastic
		}
	}
	sample := Sample{At: e.serverNow(), Free: st.Free, Claimed: st.Claimed, Size: st.Desired}
	st.History = recordHistory(final.Recorded.History, sample)
	res.Status = st
	if final.RecordedError != nil {
		// Written meanwhile by a reconciler this one cannot read (a newer
		// release): it stands.
		err := &UnreadableStatusError{Pool: snap.Pool, ConfigMap: ConfigMapName(snap.Pool), Err: final.RecordedError}
		res.Errors = append(res.Errors, err.Error())
		res.Actions = append(res.Actions, MemberAction{Step: StepStatus, Err: err})
	} else if snap.ConfigMap != nil && !st.sameContent(final.Recorded) {
		t := e.Now()
		st.UpdatedAt = &t
		var err error
		if el != nil {
			err = e.writeElasticStatus(ctx, snap.ConfigMap, view.Recorded.Elastic, &st, sample)
		} else {
			err = e.Cluster.PatchConfigMapData(ctx, snap.ConfigMap.Name, KeyStatus, st.Encode())
		}
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("status: %v", err))
			res.Actions = append(res.Actions, MemberAction{Step: StepStatus, Err: err})
		} else {
			res.StatusWritten = true
			res.Status = st
		}
	}
	res.timeStep(StepStatus, statusStart, e.Now())
}

// writeElasticStatus writes an elastic pool's status as a compare-and-swap
// on the ConfigMap read last: a size decided on a pool another reconciler
// has since resized must not overwrite that size (two reconcilers that both
// started at 5 and decided 7 and 6: the later write would shrink the pool
// with no settle time). On a conflict it reads the ConfigMap again; when its
// recorded elastic decision is no longer the one this decision started from
// (base), the recorded one stands. It tries three times.
func (e *Engine) writeElasticStatus(ctx context.Context, cm *corev1.ConfigMap, base *ElasticStatus, st *Status, sample Sample) error {
	name, rv := cm.Name, cm.ResourceVersion
	var err error
	for range 3 {
		if err = e.Cluster.PatchConfigMap(ctx, name, rv, nil, map[string]string{KeyStatus: st.Encode()}); !errors.Is(err, ErrConflict) {
			return err
		}
		cur, gerr := e.Cluster.GetConfigMap(ctx, name)
		if gerr != nil {
			return fmt.Errorf("%w; re-read: %v", err, gerr)
		}
		rv = cur.ResourceVersion
		rec, perr := ParseStatus(cur.Data[KeyStatus])
		if perr != nil {
			// Written meanwhile by a reconciler this one cannot read.
			pool, _ := PoolFromConfigMapName(name)
			return &UnreadableStatusError{Pool: pool, ConfigMap: name, Err: perr}
		}
		if !sameElastic(rec.Elastic, base) {
			st.Elastic = rec.Elastic
		}
		st.Future = rec.Future
		st.History = recordHistory(rec.History, sample)
	}
	return err
}

// sameElastic reports whether two recorded elastic decisions are the same.
func sameElastic(a, b *ElasticStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return reflect.DeepEqual(*a, *b)
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
	st.Exhausted = st.Desired > 0 && st.Free == 0 && st.Serving == 0
	return st
}
