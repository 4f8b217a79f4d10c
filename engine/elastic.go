package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// An elastic pool (Spec.MaxSize > 0) keeps Spare free members ready: the
// reconciler moves its effective size within [MinSize, MaxSize] so that
// free >= spare. It grows at once when claims eat the spare, and shrinks
// only unclaimed members from the highest index down, only after the pool
// has had more free members than the spare for the settle time, and never
// below MinSize or below a member that is claimed or held. The effective
// size is recorded in the status (ElasticStatus); every reader (Observe,
// claim, release, the dashboard) takes the pool's size from there.

// Power policies of an elastic pool's free members beyond the spare ones.
const (
	// PowerRunning: every member runs (the behaviour of a fixed pool).
	PowerRunning = "running"
	// PowerStopped: only Spare free members run; the Pod of every other
	// free member is deleted and its PVC kept, so it holds no node
	// resources. A claim of a stopped member starts it.
	PowerStopped = "stopped"
)

// DefaultSettle is how long an elastic pool stays above its spare before it
// shrinks, when the definition names no settle time.
const DefaultSettle = 10 * time.Minute

// DefaultSpare is the spare of an elastic pool whose definition names none.
const DefaultSpare = 1

// maxSettle bounds Spec.Settle.
const maxSettle = 24 * time.Hour

// Elastic reports whether the pool is elastic (it names a maxSize).
func (s Spec) Elastic() bool { return s.MaxSize > 0 }

// SpareTarget is the free members an elastic pool keeps ready (0 for a
// fixed pool).
func (s Spec) SpareTarget() int {
	switch {
	case !s.Elastic():
		return 0
	case s.Spare == nil:
		return DefaultSpare
	}
	return *s.Spare
}

// SettleTime is how long an elastic pool stays above its spare before it
// shrinks.
func (s Spec) SettleTime() time.Duration {
	if d, err := time.ParseDuration(s.Settle); err == nil && s.Settle != "" {
		return d
	}
	return DefaultSettle
}

// PowerPolicy is the pool's power policy (PowerRunning unless stopped).
func (s Spec) PowerPolicy() string {
	if s.Power == "" {
		return PowerRunning
	}
	return s.Power
}

// Fixed returns the spec as a fixed pool of size n: the elastic fields
// cleared (what Delete writes, and what a reconcile works on once it has
// decided the effective size).
func (s Spec) Fixed(n int) Spec {
	s.Size, s.MinSize, s.MaxSize, s.Spare, s.Power, s.Settle = n, 0, 0, nil, "", ""
	return s
}

// clamp keeps n within the pool's [MinSize, MaxSize].
func (s Spec) clamp(n int) int {
	return min(max(n, s.MinSize), s.MaxSize)
}

// validateElastic checks the elastic fields together and against size.
func (s *Spec) validateElastic() error {
	if !s.Elastic() {
		if s.MaxSize < 0 {
			return &InvalidError{Field: "maxSize", Value: fmt.Sprint(s.MaxSize), Reason: "must not be negative"}
		}
		for _, f := range []struct {
			field string
			set   bool
		}{{"minSize", s.MinSize != 0}, {"spare", s.Spare != nil}, {"power", s.Power != ""}, {"settle", s.Settle != ""}} {
			if f.set {
				return &InvalidError{Field: f.field, Reason: "applies only to an elastic pool: give maxSize too"}
			}
		}
		return nil
	}
	if s.MaxSize > MaxPoolSize {
		return &InvalidError{Field: "maxSize", Value: fmt.Sprint(s.MaxSize), Reason: fmt.Sprintf("must be at most %d", MaxPoolSize)}
	}
	if s.MinSize < 0 {
		return &InvalidError{Field: "minSize", Value: fmt.Sprint(s.MinSize), Reason: "must not be negative"}
	}
	if s.MinSize > s.MaxSize {
		return &InvalidError{Field: "minSize", Value: fmt.Sprint(s.MinSize), Reason: fmt.Sprintf("must not be above maxSize %d", s.MaxSize)}
	}
	if sp := s.SpareTarget(); sp < 0 {
		return &InvalidError{Field: "spare", Value: fmt.Sprint(sp), Reason: "must not be negative"}
	} else if sp > s.MaxSize {
		return &InvalidError{Field: "spare", Value: fmt.Sprint(sp), Reason: fmt.Sprintf("must not be above maxSize %d", s.MaxSize)}
	}
	if s.Size < s.MinSize || s.Size > s.MaxSize {
		return &InvalidError{Field: "size", Value: fmt.Sprint(s.Size), Reason: fmt.Sprintf("must be within minSize %d and maxSize %d (the size an elastic pool starts from)", s.MinSize, s.MaxSize)}
	}
	if !oneOf(s.PowerPolicy(), []string{PowerRunning, PowerStopped}) {
		return &InvalidError{Field: "power", Value: s.Power, Reason: "must be running or stopped"}
	}
	if s.Settle != "" {
		d, err := time.ParseDuration(s.Settle)
		if err != nil {
			return &InvalidError{Field: "settle", Value: s.Settle, Reason: "is not a duration (examples: 10m, 90s, 1h)"}
		}
		if d < 0 || d > maxSettle {
			return &InvalidError{Field: "settle", Value: s.Settle, Reason: "must be from 0 to 24h"}
		}
	}
	return nil
}

// ElasticStatus is what the reconciler records of an elastic pool: its
// effective size and why it last changed.
type ElasticStatus struct {
	// Size is the effective size: members <pool>-1 .. <pool>-Size.
	Size int `json:"size"`
	// From is the definition's size when Size was decided. A definition
	// whose size differs (an apply or a resize since) starts again from its
	// own size.
	From int `json:"from"`
	// Reason says why Size last changed, in words.
	Reason string `json:"reason,omitempty"`
	// ChangedAt is when Size last changed.
	ChangedAt *time.Time `json:"changedAt,omitempty"`
	// AboveSince is when the pool began to have more free members than its
	// spare (a shrink waits for the settle time from then); nil while it
	// has not.
	AboveSince *time.Time `json:"aboveSince,omitempty"`
	// AboveSinceBy names the clock that stamped AboveSince (Engine.ClockID):
	// a reconciler counts the settle time only on its own clock, and starts
	// it again on a stamp of another (DECISIONS, "Clocks").
	AboveSinceBy string `json:"aboveSinceBy,omitempty"`
	// AtCeiling: the pool is at its maxSize and no member is free
	// (exhausted at its ceiling).
	AtCeiling bool `json:"atCeiling,omitempty"`
}

// EffectiveSize is the pool's size: the definition's for a fixed pool; for
// an elastic one the size its status records (when it was decided from the
// definition's current size), else the definition's, within [min, max].
func EffectiveSize(spec Spec, rec *ElasticStatus) int {
	if !spec.Elastic() {
		return spec.Size
	}
	if rec != nil && rec.From == spec.Size {
		return spec.clamp(rec.Size)
	}
	return spec.clamp(spec.Size)
}

// RecordedElastic reads the elastic line of a recorded status text without
// decoding its rows (a release reads it on a pool of any size): nil when
// there is none or it does not parse.
func RecordedElastic(status string) *ElasticStatus {
	for rest := status; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if v, ok := strings.CutPrefix(line, keyElastic+": "); ok {
			var el ElasticStatus
			if json.Unmarshal([]byte(v), &el) != nil {
				return nil
			}
			return &el
		}
		if strings.HasPrefix(line, "members:") {
			return nil // the counts and the elastic line come before the rows
		}
	}
	return nil
}

const keyElastic = "elastic"

// ElasticDecision is what a reconcile decided of an elastic pool's size.
type ElasticDecision struct {
	Status ElasticStatus
	// Changed: the effective size changed (Status.Reason says why).
	Changed bool
	// Supply is what counted against the spare: free members plus
	// unclaimed members that become free without a new member (missing,
	// unschedulable, failed or drifted ones the reconcile builds or
	// replaces, so a pool that cannot place or start members does not grow
	// to its ceiling for nothing).
	Supply int
	// Floor is the lowest size a shrink could reach now: MinSize, or the
	// highest member that is claimed, held or blocked.
	Floor int
}

// PlanElastic decides an elastic pool's effective size at now, from v (the
// pool observed at its current effective size) and the status recorded
// before (prev, nil when none):
//   - the definition's size changed since (an apply, a resize): start
//     again from it;
//   - supply (free members, and unclaimed members a reconcile makes free)
//     below the spare: grow at once by the shortfall, up to maxSize;
//   - more free members than the spare: remember since when; once that has
//     lasted the settle time, shrink by the excess, down to the floor (min,
//     and the highest member that is claimed, held by a Lease or blocked:
//     only unclaimed members from the highest index down are removed);
//   - otherwise keep the size.
//
// It is PlanElasticOn for an engine whose clock has no name.
func PlanElastic(spec Spec, v *PoolView, prev *ElasticStatus, now time.Time) ElasticDecision {
	return PlanElasticOn(spec, v, prev, now, "")
}

// PlanElasticOn is PlanElastic by a reconciler whose clock is named clock
// (Engine.ClockID): the settle time before a shrink counts only from a
// stamp of this clock. A stamp of another clock (or of none, or one ahead
// of now: this clock went back) starts it again now, so that a reconciler
// whose clock is an hour slow cannot make the next one shrink at once.
func PlanElasticOn(spec Spec, v *PoolView, prev *ElasticStatus, now time.Time, clock string) ElasticDecision {
	cur := EffectiveSize(spec, prev)
	st := ElasticStatus{Size: cur, From: spec.Size}
	if prev != nil {
		st.Reason, st.ChangedAt, st.AboveSince, st.AboveSinceBy = prev.Reason, prev.ChangedAt, prev.AboveSince, prev.AboveSinceBy
	}
	d := ElasticDecision{}
	set := func(n int, why string) {
		if n == st.Size {
			return
		}
		at := now
		st.Size, st.Reason, st.ChangedAt, st.AboveSince, st.AboveSinceBy = n, why, &at, nil, ""
		d.Changed = true
	}
	switch {
	case prev == nil:
		st.Reason = fmt.Sprintf("started from the definition's size %d", cur)
	case prev.From != spec.Size:
		at := now
		st.Reason, st.ChangedAt, st.AboveSince, st.AboveSinceBy = fmt.Sprintf("the definition's size changed to %d", spec.Size), &at, nil, ""
		d.Changed = prev.Size != cur
	case prev.Size != cur:
		at := now
		st.Reason, st.ChangedAt, st.AboveSince, st.AboveSinceBy = fmt.Sprintf("kept within minSize %d and maxSize %d", spec.MinSize, spec.MaxSize), &at, nil, ""
		d.Changed = true
	}

	// A claim that found no free member took a member above the size
	// (Claim): the size comes up to the highest such claim at once.
	if claimedTop := claimedTop(v, spec.MaxSize); claimedTop > st.Size {
		set(claimedTop, fmt.Sprintf("grew from %d to %d: claims took members above the size", st.Size, claimedTop))
	}

	spare := spec.SpareTarget()
	free, supply, floor, within := 0, 0, spec.MinSize, 0
	for i := range v.Members {
		m := &v.Members[i]
		if m.Index == 0 {
			continue
		}
		if m.Claimed || m.Lease != nil || m.Blocked != "" {
			floor = max(floor, m.Index)
		}
		if m.Index > st.Size {
			continue
		}
		within++
		switch {
		case m.NodeDown != "":
			// Free or not, a member on a down node is no spare: a user
			// given it waits for the node. It counts again once the node
			// is back (then, above the spare, after the settle time).
		case m.Free || (m.AboveSize && m.Lease == nil && m.Blocked == "" && !m.Drift && (m.State == StateReady || m.State == StateStarting || m.State == StateStopped)):
			// (a member above the size observed is free once the size
			// takes it in)
			free++
			supply++
		case m.Blocked == "" && m.Hold != nil:
			supply++ // a release or a replacement under way: it comes back free
		case m.Lease == nil && m.Blocked == "" && m.State != StateTerminating:
			supply++ // missing, unschedulable, failed or drifted: a reconcile makes it free
		}
	}
	supply += st.Size - within // members not there at all: a reconcile creates them
	d.Supply, d.Floor = supply, min(floor, spec.MaxSize)

	switch {
	case supply < spare && st.Size < spec.MaxSize:
		n := min(spec.MaxSize, st.Size+spare-supply)
		set(n, fmt.Sprintf("grew from %d to %d: %d free of spare %d", st.Size, n, free, spare))
	case free > spare && st.Size > d.Floor:
		if st.AboveSince == nil || st.AboveSinceBy != clock || st.AboveSince.After(now.Add(SkewTolerance)) {
			// The settle time starts (again) on this reconciler's clock.
			at := now
			st.AboveSince, st.AboveSinceBy = &at, clock
			break
		}
		if now.Sub(*st.AboveSince) < spec.SettleTime() {
			break
		}
		n := max(d.Floor, st.Size-(free-spare))
		set(n, fmt.Sprintf("shrank from %d to %d: %d free of spare %d for %s", st.Size, n, free, spare, spec.SettleTime()))
	default:
		st.AboveSince, st.AboveSinceBy = nil, ""
	}
	d.Status = st
	return d
}

// claimedTop is the highest index of a claimed member of v, at most limit
// (0 when none is claimed).
func claimedTop(v *PoolView, limit int) int {
	top := 0
	for i := range v.Members {
		if m := &v.Members[i]; m.Claimed && m.Index <= limit {
			top = max(top, m.Index)
		}
	}
	return top
}

// withElasticLine returns the status text with its elastic line set to el
// (RecordedElastic reads it back), added before the member rows when there
// is none; the rest of the text is kept as it is.
func withElasticLine(status string, el ElasticStatus) string {
	enc, _ := json.Marshal(el) // ints, strings and times: cannot fail
	line := keyElastic + ": " + string(enc)
	var b strings.Builder
	done := false
	for rest := status; rest != ""; {
		var l string
		l, rest, _ = strings.Cut(rest, "\n")
		switch {
		case done:
		case strings.HasPrefix(l, keyElastic+":"):
			l, done = line, true
		case strings.HasPrefix(l, "members:"):
			b.WriteString(line + "\n")
			done = true
		}
		b.WriteString(l + "\n")
	}
	if !done {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// stopPlan is the members of an elastic pool with the power policy stopped
// whose Pod goes (free and running beyond the spare, the highest index
// first) and the stopped free members that stay stopped (beyond the spare,
// so the start step leaves them). size is the effective size the reconcile
// works at; v is the pool observed at it.
func stopPlan(spare int, v *PoolView) (stop []*Member, keepStopped map[string]bool) {
	var running, stopped []*Member
	for i := range v.Members {
		m := &v.Members[i]
		if !m.Free || m.NodeDown != "" {
			continue
		}
		switch m.State {
		case StateReady, StateStarting:
			running = append(running, m)
		case StateStopped:
			stopped = append(stopped, m)
		}
	}
	byIndex := func(ms []*Member) {
		sort.Slice(ms, func(i, j int) bool { return ms[i].Index < ms[j].Index })
	}
	byIndex(running)
	byIndex(stopped)
	// Ready members are kept before starting ones: a claim takes a Ready
	// member first, so they are the spare that answers at once.
	sort.SliceStable(running, func(i, j int) bool {
		return running[i].State == StateReady && running[j].State != StateReady
	})
	if len(running) > spare {
		stop = running[spare:]
		sort.Slice(stop, func(i, j int) bool { return stop[i].Index > stop[j].Index })
		return stop, stoppedSet(stopped)
	}
	// Short of the spare: the lowest stopped members start (the start
	// step), the rest stay stopped.
	need := spare - len(running)
	if need < len(stopped) {
		return nil, stoppedSet(stopped[need:])
	}
	return nil, nil
}

func stoppedSet(ms []*Member) map[string]bool {
	if len(ms) == 0 {
		return nil
	}
	set := make(map[string]bool, len(ms))
	for _, m := range ms {
		set[m.Name] = true
	}
	return set
}

// elasticRecord returns what a reconcile adds to the status it records of
// an elastic pool (nil for a fixed pool): the decision, with AtCeiling read
// from the final counts.
func elasticRecord(spec Spec, el *ElasticDecision) func(*Status) {
	if el == nil {
		return nil
	}
	return func(st *Status) {
		es := el.Status
		es.AtCeiling = es.Size > 0 && es.Size == spec.MaxSize && st.Free == 0
		st.Elastic = &es
	}
}

// stopMember deletes a free member's Pod and waits until it is gone; its
// PVC stays, so the member is Stopped and a claim starts it again. The
// delete carries the Pod's UID: a Pod made since is not touched.
func (e *Engine) stopMember(ctx context.Context, m *Member) error {
	if m.Pod == nil {
		return nil
	}
	if err := e.Cluster.DeletePod(ctx, m.Pod.Name, m.Pod.UID); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil // another Pod by now: not the one decided on
		}
		return fmt.Errorf("delete Pod: %w", err)
	}
	return e.wait(ctx, KindPod, m.Pod.Name, m.Pod.UID)
}

// elasticWork reports whether an elastic pool's size decision or its power
// policy would change something (NeedsWork), and which stopped members stay
// stopped (the start step leaves them).
func elasticWork(v *PoolView) (work bool, keepStopped map[string]bool) {
	if !v.Spec.Elastic() || v.SpecError != nil {
		return false, nil
	}
	if d := PlanElastic(v.Spec, v, v.Recorded.Elastic, v.ObservedAt); d.Changed || d.Status.Size != v.Size {
		return true, nil
	}
	if v.Spec.PowerPolicy() != PowerStopped {
		return false, nil
	}
	stops, keep := stopPlan(v.Spec.SpareTarget(), v)
	return len(stops) > 0, keep
}
