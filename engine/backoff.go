// The backoff of a failing member's replacement: a member whose own Pod
// fails on the pool's current source is not rebuilt by every reconcile, for
// ever, destroying the logs an administrator needs; each failure in a row
// waits twice as long as the one before (docs/guarantees.md, "Failing
// members").

package engine

import (
	"fmt"
	"time"
)

// The replacement backoff: the first failure of a member waits
// BackoffBase before the member is replaced, each further failure in a row
// twice as long as the one before, at most BackoffMax.
const (
	BackoffBase = 30 * time.Second
	BackoffMax  = 30 * time.Minute
)

// BackoffDelay is how long the failures-th failure in a row of a member
// waits before it is replaced: 30 s, 1 m, 2 m, 4 m, ... at most 30 m.
func BackoffDelay(failures int) time.Duration {
	d := BackoffBase
	for i := 1; i < failures && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}

// Backoff is a failing member's replacement backoff, as the pool's recorded
// status holds it (one entry per member, under the status's key "backoff"),
// so that every reconciler, one that started since included, sees it.
type Backoff struct {
	// Failures counts the member's builds in a row that failed on the
	// pool's current source. A replacement counts the build it makes at once
	// (until it is Ready it is presumed to fail as its predecessors did),
	// so that the backoff of its failure is known before it fails.
	Failures int `json:"n"`
	// RetryAt is the earliest time the member may be replaced again, on the
	// clock named By.
	RetryAt time.Time `json:"retryAt"`
	// By names the clock that stamped RetryAt (Engine.ClockID). A
	// reconciler counts the wait only on its own clock: a stamp of another
	// clock starts it again (DECISIONS, "Clocks").
	By string `json:"by,omitempty"`
}

// keepsBackoff reports whether m keeps the backoff its recorded row holds: a
// Ready member has recovered (its count starts again), and a drifted member
// or one above the size is replaced or deleted whatever its failures (a
// backoff belongs to the pool's current source).
func keepsBackoff(m *Member) bool {
	return m.State != StateReady && !m.Drift && !m.AboveSize
}

// backedOff reports whether m's failure is one the backoff holds back: an
// unclaimed member of the pool's current source whose own Pod failed (the
// Pod failed, or a container will not start), on a node that is up. A Pod
// without its data PVC is not its Pod's failure: it is replaced at once, as
// is a drifted member, and a claimed member is never replaced.
func backedOff(m *Member) bool {
	return m.Index > 0 && m.State == StateFailed && m.Pod != nil && m.PVC != nil &&
		!m.Claimed && !m.Drift && !m.AboveSize && m.NodeDown == "" && m.Blocked == ""
}

// planBackoff decides, at now, the backoff of each failing member of v
// (backedOff), sets it as the member's Backoff and marks those still
// waiting (Member.backoffWait) so that memberWork leaves them; the others
// are replaced. It returns the backoff
// each member of v is to be recorded with (nil: none).
//
// A member failing with no backoff recorded starts one: failure 1, replaced
// after BackoffDelay(1). A recorded backoff stamped by another clock (or
// by none, when this engine names its clock), or further ahead than its own
// delay could make it (the writer's clock runs fast), starts its wait again
// now on this clock, keeping its count: the wait delays a delete, so the
// conservative reading of a clock this reader cannot trust is to wait
// longer, never shorter. A recorded status that cut the member's row holds
// no backoff it could keep: the member is replaced at once, as before
// backoffs were recorded.
func (e *Engine) planBackoff(v *PoolView, now time.Time) map[string]*Backoff {
	out := map[string]*Backoff{}
	for i := range v.Members {
		m := &v.Members[i]
		// Every member gets an entry, nil for none: a member whose
		// backoff Observe dropped (Ready, drifted) is recorded without one
		// even when the status is read again after its replacement.
		out[m.Name] = m.Backoff
		if !backedOff(m) {
			continue
		}
		b := m.Backoff
		switch {
		case b == nil && v.Recorded.RowsCut > 0 && !v.Recorded.hasRow(m.Name):
			continue
		case b == nil:
			b = &Backoff{Failures: 1, RetryAt: now.Add(BackoffDelay(1)), By: e.ClockID}
		case b.By != e.ClockID || b.RetryAt.After(now.Add(BackoffDelay(b.Failures)+SkewTolerance)):
			b = &Backoff{Failures: max(b.Failures, 1), RetryAt: now.Add(BackoffDelay(b.Failures)), By: e.ClockID}
		}
		out[m.Name] = b
		m.Backoff, m.backoffWait = b, now.Before(b.RetryAt)
	}
	return out
}

// afterReplace is the backoff a member failing under b is recorded with
// once a reconcile replaced it at now: its new build counts as the next
// failure until it is Ready.
func (e *Engine) afterReplace(b *Backoff, now time.Time) *Backoff {
	n := b.Failures + 1
	return &Backoff{Failures: n, RetryAt: now.Add(BackoffDelay(n)), By: e.ClockID}
}

// backoffSkip is the reason a reconcile gives for a member its backoff
// holds back at now.
func backoffSkip(b *Backoff, now time.Time) string {
	return fmt.Sprintf("failure %d in a row: kept for its logs, replaced in %s", b.Failures, b.RetryAt.Sub(now).Round(time.Second))
}

// hasRow reports whether the status holds a row of the named member.
func (s *Status) hasRow(name string) bool {
	for i := range s.Members {
		if s.Members[i].Name == name {
			return true
		}
	}
	return false
}

// recordedBackoffs are the backoffs a recorded status holds, by member (nil
// when none).
func recordedBackoffs(st *Status) map[string]*Backoff {
	var out map[string]*Backoff
	for i := range st.Members {
		if r := &st.Members[i]; r.Backoff != nil {
			if out == nil {
				out = map[string]*Backoff{}
			}
			out[r.Name] = r.Backoff
		}
	}
	return out
}

// recordBackoffs sets the backoff of each row of st that decided holds
// (planBackoff, then the replacements), unless the member of v (the pool
// as the status records it, st's rows in its order) no longer keeps one:
// it became Ready meanwhile. A row of a member decided nothing of (one
// that appeared since the reconcile started) keeps what v read.
func recordBackoffs(st *Status, v *PoolView, decided map[string]*Backoff) {
	copied := false
	for i := range st.Members {
		r := &st.Members[i]
		b, ok := decided[r.Name]
		if !ok {
			continue
		}
		if i < len(v.Members) && v.Members[i].Name == r.Name && !keepsBackoff(&v.Members[i]) {
			b = nil
		}
		if b == r.Backoff {
			continue
		}
		if !copied {
			st.Members = append([]MemberRow(nil), st.Members...)
			r, copied = &st.Members[i], true
		}
		r.Backoff = b
	}
}
