//go:build integration

package systest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// TestChaosStuckJudgement is the randomized run's rule of "stuck" without a
// plane: a member that is not settled fails only after deadline with no
// change of its objects and no change of its state; one the engine keeps
// working on (the member, released and rebuilt four times in eight
// seconds, its Pod Ready half a second before the read) never fails, and
// one nothing happens to still does.
func TestChaosStuckJudgement(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	const deadline = stuckDeadline
	cases := []struct {
		name       string
		prev       *stuckNote
		settled    bool
		state      engine.State
		lastChange time.Time
		now        time.Time
		deadline   time.Duration
		wantIdle   time.Duration
		wantStuck  bool
		wantNote   bool
	}{
		{name: "settled", settled: true, state: engine.StateReady, lastChange: at(0), now: at(600), deadline: deadline},
		{name: "first found unsettled, its last change long before", state: engine.StateStarting, lastChange: at(0), now: at(300),
			deadline: deadline, wantNote: true},
		{name: "the issue: Starting at three batch ends in eight seconds, changed half a second ago",
			prev: &stuckNote{state: engine.StateStarting, since: at(0)}, state: engine.StateStarting, lastChange: at(7.5), now: at(8),
			deadline: deadline, wantIdle: 500 * time.Millisecond, wantNote: true},
		{name: "worked on for minutes: changes keep coming", prev: &stuckNote{state: engine.StateStarting, since: at(0)},
			state: engine.StateStarting, lastChange: at(290), now: at(300), deadline: deadline, wantIdle: 10 * time.Second, wantNote: true},
		{name: "no change for the deadline: stuck", prev: &stuckNote{state: engine.StateStarting, since: at(0)},
			state: engine.StateStarting, lastChange: at(1), now: at(61), deadline: deadline, wantIdle: 60 * time.Second, wantStuck: true, wantNote: true},
		{name: "no change and no event ever: stuck from the first batch end that found it", prev: &stuckNote{state: engine.StateMissing, since: at(10)},
			state: engine.StateMissing, now: at(75), deadline: deadline, wantIdle: 65 * time.Second, wantStuck: true, wantNote: true},
		{name: "a new state starts a new wait", prev: &stuckNote{state: engine.StateStarting, since: at(0)},
			state: engine.StateUnschedulable, lastChange: at(1), now: at(100), deadline: deadline, wantNote: true},
		{name: "after an outage the deadline is longer", prev: &stuckNote{state: engine.StateStarting, since: at(0)},
			state: engine.StateStarting, lastChange: at(0), now: at(100), deadline: stuckDeadlineAfterOutage, wantIdle: 100 * time.Second, wantNote: true},
		{name: "and still ends", prev: &stuckNote{state: engine.StateStarting, since: at(0)},
			state: engine.StateStarting, lastChange: at(0), now: at(200), deadline: stuckDeadlineAfterOutage, wantIdle: 200 * time.Second, wantStuck: true, wantNote: true},
		{name: "still stuck, and the note says it was reported", prev: &stuckNote{state: engine.StateStarting, since: at(0), reported: true},
			state: engine.StateStarting, lastChange: at(0), now: at(200), deadline: deadline, wantIdle: 200 * time.Second, wantStuck: true, wantNote: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			note, idle, stuck := judgeStuck(c.prev, c.settled, c.state, c.lastChange, c.now, c.deadline)
			if idle != c.wantIdle || stuck != c.wantStuck || (note != nil) != c.wantNote {
				t.Errorf("judgeStuck = note %+v, idle %s, stuck %v; want note %v, idle %s, stuck %v", note, idle, stuck, c.wantNote, c.wantIdle, c.wantStuck)
			}
			if note != nil && note.state != c.state {
				t.Errorf("note state %s, want %s", note.state, c.state)
			}
			if keep := c.prev != nil && c.prev.state == c.state && c.prev.reported; note != nil && note.reported != keep {
				t.Errorf("note reported %v, want %v (a stuck member is reported once)", note.reported, keep)
			}
		})
	}
}

// TestChaosShrinkJudgement is the rule the elastic pool's shrinks are held
// to: the settle time, on the run's clock, since the pool first had more
// free members than its spare after its size last changed.
func TestChaosShrinkJudgement(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	const settle, tol = 6 * time.Second, 2 * time.Second
	cases := []struct {
		name              string
		aboveFrom, shrunk time.Time
		early             bool
	}{
		{"after the settle time", t0, t0.Add(7 * time.Second), false},
		{"within the reads' tolerance of it", t0, t0.Add(4500 * time.Millisecond), false},
		{"at once (aboveSince stamped an hour early by a slow clock)", t0, t0.Add(900 * time.Millisecond), true},
		{"never above since the size changed", time.Time{}, t0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if early, why := shrinkTooEarly(c.aboveFrom, c.shrunk, settle, tol); early != c.early {
				t.Errorf("shrinkTooEarly = %v (%s), want %v", early, why, c.early)
			}
		})
	}
}

// TestChaosElasticTrack feeds the elastic pool's history crafted events (no
// plane): five free members of spare 2, then a shrink. A shrink at once after
// a record whose aboveSince an hour-slow clock stamped is a violation, and so
// is turning elasticity off below the effective size; a shrink after the
// settle time, an older decision written late, and an off-switch at the
// effective size are not.
func TestChaosElasticTrack(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	spec := elasticSpec()
	spec.Default()
	rv := int64(0)
	cm := func(s engine.Spec, el *engine.ElasticStatus, seen time.Time) objEvent {
		rv++
		c := engine.BuildConfigMap("ns", elasticPool, s)
		c.UID = "cm"
		c.Data[engine.KeyStatus] = engine.Status{Elastic: el}.Encode()
		return objEvent{rv: rv, kind: "ConfigMap", pool: elasticPool, uid: c.UID, seenAt: seen, obj: c}
	}
	ptime := func(x time.Time) *time.Time { return &x }
	members := func(seen time.Time) []objEvent {
		var out []objEvent
		for n := 1; n <= 5; n++ {
			c := engine.BuildPVC("ns", elasticPool, n, spec)
			c.UID = types.UID(fmt.Sprintf("pvc-%d", n))
			p := engine.BuildPod("ns", elasticPool, n, spec)
			p.UID = types.UID(fmt.Sprintf("pod-%d", n))
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			rv++
			out = append(out, objEvent{rv: rv, kind: "PVC", pool: elasticPool, uid: c.UID, seenAt: seen, obj: c})
			rv++
			out = append(out, objEvent{rv: rv, kind: "Pod", pool: elasticPool, uid: p.UID, seenAt: seen, obj: p})
		}
		return out
	}
	// first is the record before the pool grew: a reconcile that read it
	// may write it again after the growth (status writes do not compare).
	first := &engine.ElasticStatus{Size: 3, From: spec.Size, ChangedAt: ptime(at(-10))}
	grown := &engine.ElasticStatus{Size: 5, From: spec.Size, ChangedAt: ptime(at(0))}
	slow := *grown
	slow.AboveSince = ptime(at(1.2).Add(elasticSkew))
	fixed := func(n int) engine.Spec { return spec.Fixed(n) }
	cases := []struct {
		name string
		tail func() []objEvent
		want string // a part of the one violation; "" for none
	}{
		{"shrink at once after a slow clock's aboveSince", func() []objEvent {
			return []objEvent{cm(spec, &slow, at(1.3)), cm(spec, &engine.ElasticStatus{Size: 3, From: spec.Size, ChangedAt: ptime(at(2))}, at(2.1))}
		}, "shrank from 5 to 3"},
		{"shrink after the settle time", func() []objEvent {
			return []objEvent{cm(spec, &engine.ElasticStatus{Size: 5, From: spec.Size, ChangedAt: ptime(at(0)), AboveSince: ptime(at(1.2))}, at(1.3)),
				cm(spec, &engine.ElasticStatus{Size: 3, From: spec.Size, ChangedAt: ptime(at(7.5))}, at(7.6))}
		}, ""},
		{"an older decision written late is no shrink", func() []objEvent { return []objEvent{cm(spec, first, at(2))} }, ""},
		{"elasticity off below the effective size", func() []objEvent { return []objEvent{cm(fixed(spec.Size), nil, at(2))} }, "turned off (maxSize 0) at the definition's size 2, below its effective size 5"},
		{"elasticity off at the effective size", func() []objEvent { return []objEvent{cm(fixed(5), nil, at(2))} }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rv = 0
			tr := newElasticTrack("ns")
			var got []string
			bad := func(format string, a ...any) { got = append(got, fmt.Sprintf(format, a...)) }
			events := append([]objEvent{cm(spec, first, at(-10)), cm(spec, grown, at(0))}, members(at(1))...)
			for _, e := range events {
				tr.apply(e, bad)
			}
			if tr.aboveFrom != at(1) {
				t.Fatalf("five free members of spare 2 counted as above the spare from %v, want %v", tr.aboveFrom, at(1))
			}
			for _, e := range c.tail() {
				tr.apply(e, bad)
			}
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("violations %q, want none", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("violations %q, want one that says %q", got, c.want)
			}
		})
	}
}

// TestChaosReplayReconcilerTakeover: a reconciler Lease taken over (updated
// by another reconciler, a new stamp on the same Lease) seconds after it was
// written is a violation, whatever its stamp says; one taken over after the
// staleness on the run's clock is not.
func TestChaosReplayReconcilerTakeover(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	const m = "elastic-3"
	lease := func(rv int64, stamp, written time.Time) objEvent {
		return objEvent{rv: rv, kind: "Lease", pool: elasticPool, member: m, uid: "lease-1", holder: engine.ReconcilerIdentity, stamp: stamp, written: written}
	}
	for _, c := range []struct {
		name  string
		after time.Duration
		want  bool
	}{
		{"taken over two seconds after a slow clock stamped it an hour back", 2 * time.Second, true},
		{"taken over once stale", engine.ReconcilerLeaseTTL + time.Minute, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newReplay()
			var got []string
			bad := func(format string, a ...any) { got = append(got, fmt.Sprintf(format, a...)) }
			p.apply(lease(1, t0.Add(elasticSkew), t0), bad)
			p.apply(lease(2, t0.Add(c.after), t0.Add(c.after)), bad)
			if fired := len(got) == 1 && strings.Contains(got[0], "taken over"); fired != c.want || len(got) > 1 {
				t.Errorf("violations %q, want a takeover reported: %v", got, c.want)
			}
		})
	}
}
