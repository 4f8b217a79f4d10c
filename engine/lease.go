package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// takeReconcilerLease takes the member's Lease as the reconciler and returns
// it. A claimed member, or one another reconciler works on, is skipped with a
// reason (and a nil Lease); so is a failure to take the Lease, with the error.
//
// The Lease is stamped with the clock read now, as it is taken, never with
// the time the reconcile started: a Lease taken late in a long run must not
// look stale to a second reconciler while this one still works.
func (e *Engine) takeReconcilerLease(ctx context.Context, m *Member) (held *coordinationv1.Lease, skipped string, err error) {
	now := e.Now()
	switch {
	case m.Claimed:
		return nil, "claimed by " + fmt.Sprintf("%q", m.Claim.Holder), nil
	case m.Unheld() && !m.HoldStale():
		return nil, "its Lease has no holder (removed once stale)", nil
	case m.Lease != nil && !m.HoldStale():
		return nil, "under maintenance by another reconciler", nil
	case m.Lease != nil:
		held, err = e.Cluster.UpdateLease(ctx, setLeaseHolder(m.Lease, ReconcilerIdentity, ReconcilerLeaseTTL, now))
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
			return nil, "stale lease changed meanwhile", nil
		}
	default:
		held, err = e.Cluster.CreateLease(ctx, ReconcilerLease(e.Namespace, m.Pool, m.Name, now))
		if errors.Is(err, ErrAlreadyExists) {
			return nil, "lease taken meanwhile", nil
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			// The caller stopped waiting for the answer: the API server may
			// have taken the write all the same, and nobody would remove
			// that Lease before it is stale.
			e.undoTake(ctx, m, now)
		}
		return nil, "", fmt.Errorf("take lease: %w", err)
	}
	return held, "", nil
}

// undoTake removes the member's Lease when it is the one a take stamped at
// stamp (a reconciler Lease with that renew time), with a context of its own.
func (e *Engine) undoTake(ctx context.Context, m *Member, stamp time.Time) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	leases, err := e.Cluster.ListLeases(uctx, m.Pool)
	if err != nil {
		return
	}
	for _, l := range leases {
		if l.Name == LeaseName(m.Name) && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == ReconcilerIdentity &&
			l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.Truncate(time.Microsecond).Equal(stamp.Truncate(time.Microsecond)) {
			_ = e.Cluster.DeleteLease(uctx, l.Name, l.ResourceVersion)
		}
	}
}

// unlock deletes a Lease the engine holds, with its own short deadline so that
// a cancelled operation still unlocks.
func (e *Engine) unlock(ctx context.Context, l *coordinationv1.Lease) error {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	return e.Cluster.DeleteLease(uctx, l.Name, l.ResourceVersion)
}

// SkewTolerance is how far ahead of the reader's clock a Lease time may be
// and still be taken as it is; a time further ahead comes from a writer whose
// clock runs fast.
const SkewTolerance = time.Minute

// LeaseWritten is when the API server last took a write of the Lease, on
// its own clock: the latest time of its managed fields (zero when it carries
// none, as a Lease built in memory).
func LeaseWritten(l *coordinationv1.Lease) time.Time { return Written(l) }

// Written is when the API server last took a write of o, on its own clock:
// the latest time of its managed fields (zero when it carries none, as an
// object built in memory or read from a fake clientset).
func Written(o metav1.Object) time.Time {
	var w time.Time
	for _, f := range o.GetManagedFields() {
		if f.Time != nil && f.Time.After(w) {
			w = f.Time.Time
		}
	}
	return w
}

// firstSeen is when a reader that first saw a Lease version at seen (zero:
// it reads once) counts it from: at most now.
func firstSeen(now, seen time.Time) time.Time {
	if !seen.IsZero() && seen.Before(now) {
		return seen
	}
	return now
}

// interpretLease reads a claim Lease defensively: a missing holder, a missing
// or non-positive duration, and times in the future are reported as problems.
// It is interpretLeaseSeen for a reader that remembers nothing of the Lease.
func interpretLease(l *coordinationv1.Lease, now time.Time) (Claim, []string) {
	return interpretLeaseSeen(l, now, time.Time{})
}

// interpretLeaseSeen is interpretLease for a reader that first saw this
// version of the Lease (its resourceVersion) at seen (zero: now, a reader
// that reads once).
//
// The skew rule: a renew (or acquire) time more than SkewTolerance ahead of
// now was written by a clock that runs fast; the Lease counts as renewed when
// this reader first saw it, min(stamp, seen), never later than now. So a
// watching reader (the controller) finds the Lease expired and stale a
// duration after it first saw it, however far ahead its stamp is, and a
// reader that reads once treats it as renewed now.
func interpretLeaseSeen(l *coordinationv1.Lease, now, seen time.Time) (Claim, []string) {
	var c Claim
	var problems []string
	if l.Spec.HolderIdentity != nil {
		c.Holder = *l.Spec.HolderIdentity
	}
	reconciler := c.Holder == ReconcilerIdentity
	if l.Spec.AcquireTime != nil {
		c.Acquired = l.Spec.AcquireTime.Time
	}
	if l.Spec.RenewTime != nil {
		c.Renewed = l.Spec.RenewTime.Time
	}
	def := ClaimDuration
	if reconciler {
		def = ReconcilerLeaseTTL
	}
	c.Duration = def
	if l.Spec.LeaseDurationSeconds == nil {
		problems = append(problems, fmt.Sprintf("lease has no duration; %s assumed", def))
	} else if d := *l.Spec.LeaseDurationSeconds; d <= 0 {
		problems = append(problems, fmt.Sprintf("lease duration %ds is not positive; %s assumed", d, def))
	} else {
		c.Duration = time.Duration(d) * time.Second
	}
	if c.Holder == "" {
		problems = append(problems, "lease has no holder: no claim; it is removed once stale")
	}
	base := c.Renewed
	if base.IsZero() {
		base = c.Acquired
	}
	if base.IsZero() {
		base = l.CreationTimestamp.Time
		if !base.IsZero() {
			problems = append(problems, "lease has no acquire or renew time; its creation time is used")
		} else {
			problems = append(problems, "lease has no acquire or renew time")
		}
	}
	if !base.IsZero() && base.After(now.Add(SkewTolerance)) {
		problems = append(problems, fmt.Sprintf("lease time %s is in the future (the writer's clock runs fast): it counts from when it was first seen", base.UTC().Format(time.RFC3339)))
		base = firstSeen(now, seen)
	}
	// The writer's stamp never counts from before the API server took the
	// write: a writer whose clock runs slow stamps the past, and its Lease
	// would look expired or stale, and be taken over, the moment it is
	// written (DECISIONS, "Clocks").
	if w := LeaseWritten(l); !w.IsZero() {
		if w.After(now.Add(SkewTolerance)) {
			w = firstSeen(now, seen) // this reader's clock runs slow
		}
		if w.After(base) {
			if !base.IsZero() && w.Sub(base) > SkewTolerance {
				problems = append(problems, fmt.Sprintf("lease time %s is %s before the API server took the write (the writer's clock runs slow): it counts from the write", base.UTC().Format(time.RFC3339), w.Sub(base).Round(time.Second)))
			}
			base = w
		}
	}
	c.Since = base
	if base.IsZero() {
		c.Expired = true
	} else {
		c.Expires = base.Add(c.Duration)
		c.Expired = !now.Before(c.Expires)
	}
	if reconciler || c.Holder == "" {
		ttl := ReconcilerLeaseTTL
		c.Stale = base.IsZero() || !now.Before(base.Add(ttl))
	}
	return c, problems
}
