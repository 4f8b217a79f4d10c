// Rollouts: when a pool's source changes (a new image, say), its unclaimed
// members still on an earlier source are replaced in waves, within a
// budget of members out of service, while they keep serving claims; a
// rollout whose new members fail or do not become Ready halts itself
// (docs/guarantees.md, "Rollouts").

package engine

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The rollout defaults: at most DefaultMaxUnavailable of the size out of
// service at once (at least 1); a new member not Ready after
// DefaultRolloutDeadline counts as failed; RolloutHaltAfter failed new
// members halt the rollout (or every member of its first wave, when that
// wave was smaller).
const (
	DefaultMaxUnavailable  = "25%"
	DefaultRolloutDeadline = 5 * time.Minute
	RolloutHaltAfter       = 2
)

// The bounds of Spec.RolloutDeadline.
const (
	minRolloutDeadline = 10 * time.Second
	maxRolloutDeadline = 24 * time.Hour
)

// KeyRolloutResume is the pool ConfigMap's data key that resumes a halted
// rollout: it holds the stamp of the halt it resumes (RolloutStatus.HaltedAt,
// RFC 3339). A reconcile never writes it, so a resume is never lost to a
// reconcile's status write that read the pool before it; a stamp of an
// earlier halt resumes nothing.
const KeyRolloutResume = "rolloutResume"

// validateRollout checks maxUnavailable and rolloutDeadline.
func (s *Spec) validateRollout() error {
	if s.MaxUnavailable != "" {
		if _, _, err := parseMaxUnavailable(s.MaxUnavailable); err != nil {
			return &InvalidError{Field: "maxUnavailable", Value: s.MaxUnavailable, Reason: err.Error()}
		}
	}
	if s.RolloutDeadline != "" {
		d, err := time.ParseDuration(s.RolloutDeadline)
		if err != nil {
			return &InvalidError{Field: "rolloutDeadline", Value: s.RolloutDeadline, Reason: "is not a duration (examples: 5m, 90s, 1h)"}
		}
		if d < minRolloutDeadline || d > maxRolloutDeadline {
			return &InvalidError{Field: "rolloutDeadline", Value: s.RolloutDeadline, Reason: "must be from 10s to 24h"}
		}
	}
	return nil
}

// parseMaxUnavailable reads a count ("3") or a percentage ("25%").
func parseMaxUnavailable(v string) (n int, percent bool, err error) {
	num, percent := strings.CutSuffix(v, "%")
	n, err = strconv.Atoi(num)
	switch {
	case err != nil || num == "" || num[0] == '+':
		return 0, false, errors.New("must be a count (3) or a percentage of the size (25%)")
	case percent && (n < 1 || n > 100):
		return 0, false, errors.New("must be a percentage from 1% to 100%")
	case !percent && n < 1:
		return 0, false, errors.New("must be at least 1: a rollout with no member out of service could never replace one")
	case !percent && n > MaxPoolSize:
		return 0, false, fmt.Errorf("must be at most %d", MaxPoolSize)
	}
	return n, percent, nil
}

// RolloutBudget is how many members of a pool of size a rollout may have out
// of service at once: MaxUnavailable's count, or its percentage of the size
// rounded down, and at least 1.
func (s Spec) RolloutBudget(size int) int {
	v := s.MaxUnavailable
	if v == "" {
		v = DefaultMaxUnavailable
	}
	n, percent, err := parseMaxUnavailable(v)
	if err != nil { // a validated spec cannot get here
		n, percent = 25, true
	}
	if percent {
		n = size * n / 100
	}
	return max(n, 1)
}

// RolloutDeadlineTime is how long a new member may take to become Ready
// before it counts as a failure of the rollout.
func (s Spec) RolloutDeadlineTime() time.Duration {
	if d, err := time.ParseDuration(s.RolloutDeadline); err == nil && s.RolloutDeadline != "" {
		return d
	}
	return DefaultRolloutDeadline
}

// RolloutStatus is a pool's rollout as its recorded status holds it (the
// status's key "rollout", one line of JSON that a reader of an earlier
// release ignores). It is kept once the rollout is done, until the source
// changes again, so that the dashboard can say how long it took. Its times
// are on the API server's clock as the reconciler reads it (the Pods'
// creation times, which the halt compares with, are on that clock too).
type RolloutStatus struct {
	// Source is the source hash rolled to; Image that source's image.
	Source string `json:"source"`
	Image  string `json:"image,omitempty"`
	// Started is when the first reconcile after the change saw members on
	// an earlier source.
	Started time.Time `json:"started"`
	// Waves counts the reconciles that replaced members of an earlier
	// source; FirstWave is how many the first of them replaced, Replaced
	// how many all of them did, WaveAt when the last one began.
	Waves     int        `json:"waves,omitempty"`
	FirstWave int        `json:"firstWave,omitempty"`
	Replaced  int        `json:"replaced,omitempty"`
	WaveAt    *time.Time `json:"waveAt,omitempty"`
	// Halted is why the rollout halted ("" while it runs), with the failing
	// members' own reasons; HaltedAt when. No member of an earlier source
	// is replaced while it is halted.
	Halted   string     `json:"halted,omitempty"`
	HaltedAt *time.Time `json:"haltedAt,omitempty"`
	// Resumed is when an administrator last resumed a halt: new members
	// count as failures again only when built after it.
	Resumed *time.Time `json:"resumed,omitempty"`
	// Done is when no unclaimed member of an earlier source was left and
	// every new one was Ready.
	Done *time.Time `json:"done,omitempty"`
}

// HaltStamp is the stamp a resume of this halt writes (KeyRolloutResume).
func (r *RolloutStatus) HaltStamp() string {
	if r == nil || r.HaltedAt == nil {
		return ""
	}
	return r.HaltedAt.UTC().Format(time.RFC3339Nano)
}

// Took is how long the rollout ran until at (or until it was done).
func (r *RolloutStatus) Took(at time.Time) time.Duration {
	if r.Done != nil {
		at = *r.Done
	}
	return max(at.Sub(r.Started), 0).Round(time.Second)
}

// RolloutView is a pool's rollout as the dashboard and `--once` show it:
// the record and the members as they are now.
type RolloutView struct {
	*RolloutStatus
	// Updated counts the members within the size on the current source,
	// Old the unclaimed ones still on an earlier source (the rollout's
	// remaining work), OldClaimed the claimed ones (rebuilt at release).
	Updated, Old, OldClaimed int
	// InFlight counts new members of the rollout not Ready yet.
	InFlight int
	// Budget is the pool's rollout budget (RolloutBudget at its size).
	Budget int
}

// RecordedRollout is the rollout the pool's recorded status holds for its
// current definition, nil when none (a record of an earlier definition is
// the rollout before: the next reconcile starts a new one). It reads the
// record alone; Rollout also counts the members.
func (v *PoolView) RecordedRollout() *RolloutStatus {
	rec := v.Recorded.Rollout
	if rec == nil || v.SpecError != nil || rec.Source != v.Source {
		return nil
	}
	return rec
}

// RolloutHalted reports whether the pool's rollout is halted (the record
// alone).
func (v *PoolView) RolloutHalted() bool {
	rec := v.RecordedRollout()
	return rec != nil && rec.Halted != ""
}

// Rollout is the pool's rollout with its members counted, nil when its
// recorded status holds none for the current definition.
func (v *PoolView) Rollout() *RolloutView {
	rec := v.RecordedRollout()
	if rec == nil {
		return nil
	}
	out := RolloutView{RolloutStatus: rec, Budget: v.Spec.RolloutBudget(v.Size)}
	since := rec.Started
	for i := range v.Members {
		m := &v.Members[i]
		if m.Index == 0 || m.AboveSize {
			continue
		}
		switch {
		case m.OldSource && m.Claimed:
			out.OldClaimed++
		case m.OldSource:
			out.Old++
		case !m.Drift && m.Exists():
			out.Updated++
			if m.State != StateReady && m.Pod != nil && !m.Created.Before(since.Add(-SkewTolerance)) {
				out.InFlight++
			}
		}
	}
	return &out
}

// rolloutPlan is what a reconcile decided of the pool's rollout: the record
// to write (nil: none) and which members of an earlier source it may replace.
type rolloutPlan struct {
	rec *RolloutStatus
	// hold reports why a member of an earlier source waits ("" when the
	// reconcile may replace it).
	hold map[string]string
	// restart: the old members a halted rollout starts again from the
	// source their PVC records (their Pod was evicted or deleted): the
	// old image works, and they serve again.
	restart map[string]bool
}

// rollable reports whether m is a rollout's work: an unclaimed member
// within the size on an earlier source.
func rollable(m *Member) bool {
	return m.Index > 0 && m.OldSource && !m.Claimed && !m.AboveSize && m.Blocked == "" && m.State != StateTerminating
}

// outOfService reports whether m, a member within the size, serves no
// claim for now: being built or rebuilt, failing, or waiting for room.
// (A stopped member is out of service by the pool's power policy, not by
// the rollout, and a claimed one serves its user.)
func outOfService(m *Member) bool {
	switch m.State {
	case StateMissing, StateStarting, StateFailed, StateUnschedulable, StateTerminating:
		return m.Index > 0 && !m.AboveSize && m.Blocked == ""
	}
	return false
}

// planRollout decides, at now (the API server's clock), the rollout of the
// pool v at its size: it starts one when members of an earlier source are
// left and none is recorded for the current source; it resumes a halt that
// resume (the ConfigMap's KeyRolloutResume) names; it halts one whose new
// members failed (RolloutHaltAfter of them, or the whole first wave); it
// marks one done. Then, unless halted, it lets the reconcile replace the
// members of an earlier source that serve no claim now, and of those that
// serve, as many as keep both the members out of service within the
// budget and the free Ready members at the floor (the spare of an elastic
// pool, 1 of a fixed one) or above. When no member is out of service, one
// member is always let go, so that a pool whose every free member the
// floor needs still rolls.
//
// written is when the API server last took a write of the pool's ConfigMap
// (Written; zero when unknown): a rollout starts, and a resume takes
// effect, at that time when it is known. It is on the API server's clock,
// as the creation times of the Pods the halt compares with it are, so that
// a reconciler whose clock runs ahead of the server's (by more than the
// skew it tolerates, with no reading of the server's clock to correct it)
// still counts the new members it builds; and it is no later than the
// start on the server's clock, since the apply that changed the source (or
// the resume) wrote the ConfigMap before this reconcile read it.
func planRollout(orig Spec, v *PoolView, resume string, now, written time.Time) rolloutPlan {
	start := now
	if !written.IsZero() {
		start = written
	}
	var old []*Member
	for i := range v.Members {
		if m := &v.Members[i]; rollable(m) {
			old = append(old, m)
		}
	}
	rec := v.Recorded.Rollout
	if rec != nil && rec.Source != v.Source {
		rec = nil
	}
	if rec == nil && len(old) == 0 {
		return rolloutPlan{}
	}
	if rec == nil {
		rec = &RolloutStatus{Source: v.Source, Image: orig.Image, Started: start}
	} else {
		c := *rec
		rec = &c
	}
	if rec.Halted != "" && resume != "" && resume == rec.HaltStamp() {
		t := start
		rec.Halted, rec.HaltedAt, rec.Resumed = "", nil, &t
	}
	if rec.Done != nil && len(old) == 0 {
		// Done stays done: a member of the current source that fails
		// since is the backoff's business, not the rollout's.
		return rolloutPlan{rec: rec}
	}
	bad := failedNew(v, rec, orig.RolloutDeadlineTime(), now)
	rec.Done = nil
	if len(old) == 0 && len(bad) == 0 {
		if rolloutSettled(v) {
			t := now
			rec.Done = &t
		}
		return rolloutPlan{rec: rec}
	}
	threshold := RolloutHaltAfter
	if rec.FirstWave > 0 {
		threshold = min(threshold, rec.FirstWave)
	}
	if rec.Halted == "" && rec.Replaced > 0 && len(bad) >= threshold {
		t := now
		rec.Halted, rec.HaltedAt = haltReason(rec, bad, orig.RolloutDeadlineTime(), now), &t
	}
	p := rolloutPlan{rec: rec, hold: map[string]string{}}
	if rec.Halted != "" {
		for _, m := range old {
			p.hold[m.Name] = "rollout halted: " + rec.Halted
			// A Pod a drain or an eviction took is started again on its
			// own source, unless the pool's power policy keeps its free
			// members stopped.
			if m.State == StateStopped && m.PVC != nil && m.PVC.Annotations[AnnotationSource] != "" &&
				!(orig.Elastic() && orig.PowerPolicy() == PowerStopped) {
				if p.restart == nil {
					p.restart = map[string]bool{}
				}
				p.restart[m.Name] = true
			}
		}
		return p
	}
	unavailable, serving := 0, 0
	for i := range v.Members {
		m := &v.Members[i]
		if outOfService(m) {
			unavailable++
		}
		if (m.Free && m.State == StateReady) || m.Serving {
			serving++
		}
	}
	floor := 1
	if orig.Elastic() {
		floor = orig.SpareTarget()
	}
	budget := orig.RolloutBudget(v.Size)
	n := min(budget-unavailable, serving-floor)
	if n < 1 && unavailable == 0 {
		n = 1
	}
	sort.SliceStable(old, func(i, j int) bool { return old[i].Index < old[j].Index })
	for _, m := range old {
		switch {
		case !m.Serving:
			// Serves no claim now: replacing it takes nothing from the
			// pool's service.
		case n > 0:
			n--
		default:
			p.hold[m.Name] = fmt.Sprintf("rollout waits: %d of %d members out of service, %d free Ready (at least %d kept)", unavailable, budget, serving, floor)
		}
	}
	return p
}

// failedNew is the rollout's new members that failed: built since it
// started (or was resumed), on the current source, unclaimed, failed or
// not Ready within the deadline, on a node that is up.
func failedNew(v *PoolView, rec *RolloutStatus, deadline time.Duration, now time.Time) []*Member {
	// Built since the start, give or take the skew of the clocks that
	// stamped it; since a resume, strictly after it: the members that
	// failed up to the resume are the halt's, forgiven by it (the backoff
	// rebuilds them, and their rebuilds count).
	built := func(m *Member) bool { return !m.Created.Before(rec.Started.Add(-SkewTolerance)) }
	if rec.Resumed != nil {
		built = func(m *Member) bool { return m.Created.After(*rec.Resumed) }
	}
	var bad []*Member
	for i := range v.Members {
		m := &v.Members[i]
		if m.Index == 0 || m.Drift || m.Claimed || m.AboveSize || m.Pod == nil || m.NodeDown != "" || m.Blocked != "" || !built(m) {
			continue
		}
		switch m.State {
		case StateFailed:
			bad = append(bad, m)
		case StateStarting, StateUnschedulable:
			if now.Sub(m.Created) > deadline {
				bad = append(bad, m)
			}
		}
	}
	return bad
}

// rolloutSettled reports whether every member of the current source within
// the size is Ready or stopped (a rollout with nothing left to replace is
// done once its last wave is Ready).
func rolloutSettled(v *PoolView) bool {
	for i := range v.Members {
		m := &v.Members[i]
		if m.Index > 0 && !m.AboveSize && !m.Drift && m.Exists() && m.State != StateReady && m.State != StateStopped {
			return false
		}
	}
	return true
}

// haltReason says why a rollout halted, with the first failing members'
// own reasons: "rollout of img:2 halted: 2 of 2 new members failed or not
// Ready within 5m0s: desk-3: ImagePullBackOff: ...".
func haltReason(rec *RolloutStatus, bad []*Member, deadline time.Duration, now time.Time) string {
	sort.Slice(bad, func(i, j int) bool { return bad[i].Index < bad[j].Index })
	var why []string
	for _, m := range bad[:min(len(bad), 2)] {
		r := m.Message
		if m.State != StateFailed || r == "" {
			r = fmt.Sprintf("%s, not Ready after %s", m.State, now.Sub(m.Created).Round(time.Second))
			if m.Message != "" {
				r += ": " + m.Message
			}
		}
		why = append(why, m.Name+": "+cutText(r, 200))
	}
	image := rec.Image
	if image == "" {
		image = "source " + rec.Source
	}
	return fmt.Sprintf("rollout of %s halted: %d of %d new members failed or not Ready within %s: %s", image, len(bad), max(rec.Replaced, len(bad)), deadline, strings.Join(why, "; "))
}

// countWave records the members of an earlier source a reconcile replaced
// (the actions' successful replaces of rollable members) as a wave.
func (p *rolloutPlan) countWave(v *PoolView, actions []MemberAction, now time.Time) {
	if p.rec == nil {
		return
	}
	k := 0
	for _, a := range actions {
		if a.Step != StepReplace || a.Skipped != "" || a.Err != nil {
			continue
		}
		if m := v.Member(a.Member); m != nil && m.OldSource {
			k++
		}
	}
	if k == 0 {
		return
	}
	t := now
	p.rec.Waves++
	p.rec.Replaced += k
	if p.rec.FirstWave == 0 {
		p.rec.FirstWave = k
	}
	p.rec.WaveAt = &t
	p.rec.Done = nil
}
