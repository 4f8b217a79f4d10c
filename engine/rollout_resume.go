package engine

import (
	"context"
	"errors"
	"fmt"
)

// Resuming a halted rollout from the CLI or the dashboard.

// ErrNoHaltedRollout is returned by ResumeRollout for a pool whose rollout
// is not halted.
var ErrNoHaltedRollout = errors.New("no halted rollout")

// ResumeRollout resumes a pool's halted rollout and reconciles it: the
// rollout goes on as if new (its new members count as failures again only
// when built after the resume). It writes the halt's stamp under the
// ConfigMap's KeyRolloutResume (a compare-and-swap on the ConfigMap read),
// which the reconcile reads; the audit records it as a reconcile. A pool
// whose rollout is not halted is ErrNoHaltedRollout, and nothing is written.
func (e *Engine) ResumeRollout(ctx context.Context, pool string) (res ReconcileResult, err error) {
	defer func() {
		e.audit(ctx, AuditEntry{Pool: pool, Action: ActionReconcile, Detail: "resume the halted rollout", Err: err})
	}()
	for try := 0; ; try++ {
		snap, spec, err := e.readPool(ctx, pool)
		if err != nil {
			return res, err
		}
		st, _ := ParseStatus(snap.ConfigMap.Data[KeyStatus])
		ro := st.Rollout
		if ro == nil || ro.Halted == "" || ro.Source != spec.SourceHash() {
			return res, fmt.Errorf("%w in pool %s: %s", ErrNoHaltedRollout, pool, rolloutState(ro, spec))
		}
		err = e.Cluster.PatchConfigMap(ctx, snap.ConfigMap.Name, snap.ConfigMap.ResourceVersion, nil, map[string]string{KeyRolloutResume: ro.HaltStamp()})
		if errors.Is(err, ErrConflict) && try < 2 {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("resume the rollout of %s: %w", pool, err)
		}
		return e.Reconcile(ctx, pool)
	}
}

// rolloutState says what a recorded rollout is, for an error.
func rolloutState(ro *RolloutStatus, spec Spec) string {
	switch {
	case ro == nil:
		return "it records no rollout"
	case ro.Source != spec.SourceHash():
		return "its definition changed since the last reconcile recorded its rollout"
	case ro.Done != nil:
		return "its rollout is done"
	}
	return "its rollout is running"
}
