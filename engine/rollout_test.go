package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRolloutBudget(t *testing.T) {
	for _, tc := range []struct {
		max  string
		size int
		want int
	}{
		{"", 100, 25}, {"", 8, 2}, {"", 3, 1}, {"", 0, 1},
		{"3", 100, 3}, {"3", 2, 3}, {"10%", 100, 10}, {"10%", 9, 1}, {"100%", 7, 7}, {"50%", 5, 2},
	} {
		s := baseSpec(tc.size)
		s.MaxUnavailable = tc.max
		if got := s.RolloutBudget(tc.size); got != tc.want {
			t.Errorf("maxUnavailable %q at size %d: budget %d, want %d", tc.max, tc.size, got, tc.want)
		}
	}
}

func TestRolloutFieldsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		field, value, reason string
	}{
		{"maxUnavailable", "0", "at least 1"},
		{"maxUnavailable", "0%", "from 1% to 100%"},
		{"maxUnavailable", "101%", "from 1% to 100%"},
		{"maxUnavailable", "-2", "at least 1"},
		{"maxUnavailable", "+2", "a count (3) or a percentage"},
		{"maxUnavailable", "two", "a count (3) or a percentage"},
		{"maxUnavailable", "%", "a count (3) or a percentage"},
		{"maxUnavailable", " 2", "a count (3) or a percentage"},
		{"rolloutDeadline", "5", "not a duration"},
		{"rolloutDeadline", "1s", "from 10s to 24h"},
		{"rolloutDeadline", "25h", "from 10s to 24h"},
	} {
		s := baseSpec(4)
		if tc.field == "maxUnavailable" {
			s.MaxUnavailable = tc.value
		} else {
			s.RolloutDeadline = tc.value
		}
		var inv *InvalidError
		err := s.Validate()
		if !errors.As(err, &inv) || inv.Field != tc.field || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s %q: %v, want an error on %s saying %q", tc.field, tc.value, err, tc.field, tc.reason)
		}
	}
	s := baseSpec(4)
	s.MaxUnavailable, s.RolloutDeadline = "30%", "90s"
	if err := s.Validate(); err != nil {
		t.Fatalf("valid rollout fields refused: %v", err)
	}
	if got, err := ParseSpec(s.Encode()); err != nil || got.RolloutDeadlineTime() != 90*time.Second || got.RolloutBudget(10) != 3 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if enc := baseSpec(4).Encode(); strings.Contains(enc, "maxUnavailable") || strings.Contains(enc, "rolloutDeadline") {
		t.Fatalf("a pool that gives neither field writes it (a release that knows neither could not read the pool):\n%s", enc)
	}
	if s.SourceHash() != baseSpec(4).SourceHash() {
		t.Fatal("the rollout fields changed the source: every member would drift")
	}
}

// rolloutPool is a snapshot of a pool of size on spec: members built from
// old (or from spec, when old is false), in the states given by index (1-
// based; a missing entry: Ready), created at created, with recorded rec.
type rolloutMember struct {
	state   State
	old     bool
	claimed bool
	age     time.Duration // before testNow
	message string
}

func rolloutView(spec Spec, members []rolloutMember, rec *RolloutStatus) PoolView {
	oldSpec := spec
	oldSpec.Image = "ghcr.io/example/desktop:0"
	snap := Snapshot{Namespace: testNS, Pool: "desk", ConfigMap: BuildConfigMap(testNS, "desk", spec)}
	if rec != nil {
		snap.ConfigMap.Data[KeyStatus] = Status{Desired: spec.Size, Rollout: rec}.Encode()
	}
	for i, rm := range members {
		n := i + 1
		from := spec
		if rm.old {
			from = oldSpec
		}
		p, c := readyMember("desk", n, from)
		p.CreationTimestamp = metav1.NewTime(testNow.Add(-rm.age))
		switch rm.state {
		case StateReady, "":
		case StateStarting:
			p.Status.Conditions = nil
		case StateFailed:
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "desktop", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: rm.message}}}}
			p.Status.Conditions = nil
		case StateMissing:
			continue
		}
		snap.Pods, snap.PVCs = append(snap.Pods, p), append(snap.PVCs, c)
		if rm.claimed {
			snap.Leases = append(snap.Leases, claimAt("desk", p.Name, "user-"+p.Name, testNow))
		}
	}
	return Observe(snap, testNow)
}

func held(p rolloutPlan, v *PoolView) (replace, hold []string) {
	for i := range v.Members {
		m := &v.Members[i]
		if !rollable(m) {
			continue
		}
		if p.hold[m.Name] == "" {
			replace = append(replace, m.Name)
		} else {
			hold = append(hold, m.Name)
		}
	}
	return replace, hold
}

func TestPlanRollout(t *testing.T) {
	at := func(d time.Duration) *time.Time { t := testNow.Add(d); return &t }
	running := func(replaced, first int) *RolloutStatus {
		return &RolloutStatus{Source: baseSpec(1).SourceHash(), Image: baseSpec(1).Image, Started: testNow.Add(-10 * time.Minute), Waves: 1, FirstWave: first, Replaced: replaced, WaveAt: at(-3 * time.Minute)}
	}
	old := func(n int, state State) []rolloutMember {
		out := make([]rolloutMember, n)
		for i := range out {
			out[i] = rolloutMember{state: state, old: true, age: time.Hour}
		}
		return out
	}
	newM := func(state State, age time.Duration) rolloutMember {
		return rolloutMember{state: state, age: age, message: "Back-off pulling image \"registry.invalid/desk:2\""}
	}
	cat := func(parts ...[]rolloutMember) []rolloutMember {
		var out []rolloutMember
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name      string
		size      int
		max       string
		elastic   *int // spare of an elastic pool
		members   []rolloutMember
		rec       *RolloutStatus
		resume    string
		replace   int    // old members the reconcile may replace
		halted    string // part of the halt's reason ("" not halted)
		done      bool
		started   bool // a new record, started now
		noRollout bool
	}{
		{name: "a new source: the first wave is the budget, 25% of 8", size: 8, members: old(8, StateReady), replace: 2, started: true},
		{name: "members out of service count against the budget", size: 8,
			members: cat(old(6, StateReady), []rolloutMember{newM(StateStarting, time.Minute), newM(StateStarting, time.Minute)}), rec: running(2, 2), replace: 0},
		{name: "one back in service: one more", size: 8,
			members: cat(old(6, StateReady), []rolloutMember{newM(StateReady, time.Minute), newM(StateStarting, time.Minute)}), rec: running(2, 2), replace: 1},
		{name: "the free Ready members stay at the floor: 1 of a fixed pool", size: 4, max: "100%",
			members: []rolloutMember{{old: true, claimed: true}, {old: true}, {old: true}, {old: true}}, replace: 2, started: true},
		{name: "the floor of an elastic pool is its spare", size: 6, max: "100%", elastic: new(3),
			members: old(6, StateReady), replace: 3, started: true},
		{name: "a pool at its floor still rolls one at a time", size: 1, members: old(1, StateReady), replace: 1, started: true},
		{name: "old members that serve no claim go whatever the budget", size: 8,
			members: cat(old(2, StateFailed), old(2, StateStarting), old(4, StateReady)), replace: 4, started: true},
		{name: "claimed old members are the user's: no rollout for them alone", size: 2,
			members: []rolloutMember{{old: true, claimed: true}, {}}, noRollout: true},
		{name: "two new members failed: halted, nothing more replaced", size: 8,
			members: cat(old(6, StateReady), []rolloutMember{newM(StateFailed, time.Minute), newM(StateFailed, time.Minute)}), rec: running(2, 2),
			replace: 0, halted: "rollout of " + baseSpec(1).Image + " halted: 2 of 2 new members failed or not Ready within 5m0s: desk-7: ImagePullBackOff: Back-off pulling image"},
		{name: "a first wave of one halts on its one failure", size: 4,
			members: cat(old(3, StateReady), []rolloutMember{newM(StateFailed, time.Minute)}), rec: running(1, 1), replace: 0, halted: "1 of 1 new members failed"},
		{name: "one failure of a first wave of four does not halt", size: 8,
			members: cat(old(4, StateReady), []rolloutMember{newM(StateFailed, time.Minute), newM(StateReady, time.Minute), newM(StateReady, time.Minute), newM(StateReady, time.Minute)}), rec: running(4, 4), replace: 1},
		{name: "not Ready within the deadline counts as failed", size: 8,
			members: cat(old(6, StateReady), []rolloutMember{newM(StateStarting, 6*time.Minute), newM(StateStarting, 6*time.Minute)}), rec: running(2, 2), halted: "not Ready after 6m0s"},
		{name: "Starting within the deadline is not a failure", size: 8,
			members: cat(old(6, StateReady), []rolloutMember{newM(StateStarting, 4*time.Minute), newM(StateStarting, 4*time.Minute)}), rec: running(2, 2), replace: 0},
		{name: "a member that failed before the rollout is not its failure", size: 8,
			members: cat(old(6, StateReady), []rolloutMember{newM(StateFailed, time.Hour), newM(StateFailed, time.Hour)}), rec: running(2, 2), replace: 0},
		{name: "halted stays halted", size: 8,
			members: cat(old(6, StateReady), []rolloutMember{newM(StateReady, time.Minute), newM(StateReady, time.Minute)}),
			rec: func() *RolloutStatus {
				r := running(2, 2)
				r.Halted, r.HaltedAt = "rollout of x halted: ...", at(-time.Minute)
				return r
			}(), halted: "rollout of x halted"},
		{name: "a resume of another halt resumes nothing", size: 8,
			members: cat(old(6, StateReady), []rolloutMember{newM(StateReady, time.Minute), newM(StateReady, time.Minute)}), resume: "2025-06-01T11:00:00Z",
			rec: func() *RolloutStatus {
				r := running(2, 2)
				r.Halted, r.HaltedAt = "rollout of x halted: ...", at(-time.Minute)
				return r
			}(), halted: "rollout of x halted"},
		{name: "a resume of this halt: failures before it no longer count", size: 8,
			members: cat(old(6, StateReady), []rolloutMember{newM(StateFailed, 2*time.Minute), newM(StateFailed, 2*time.Minute)}), resume: testNow.Add(-time.Minute).Format(time.RFC3339Nano),
			rec: func() *RolloutStatus {
				r := running(2, 2)
				r.Halted, r.HaltedAt = "rollout of x halted: ...", at(-time.Minute)
				return r
			}(), replace: 0},
		{name: "nothing old left and every new member Ready: done", size: 2,
			members: []rolloutMember{newM(StateReady, time.Minute), newM(StateReady, time.Minute)}, rec: running(2, 2), done: true},
		{name: "done stays done when a new member fails later", size: 2,
			members: []rolloutMember{newM(StateFailed, time.Minute), newM(StateFailed, time.Minute)},
			rec:     func() *RolloutStatus { r := running(2, 2); r.Done = at(-time.Minute); return r }(), done: true},
		{name: "the record of another source: a new rollout", size: 4, members: old(4, StateReady),
			rec: func() *RolloutStatus { r := running(2, 2); r.Source = "other"; r.Halted = "old halt"; return r }(), replace: 1, started: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec(tc.size)
			spec.MaxUnavailable = tc.max
			if tc.elastic != nil {
				spec.MaxSize, spec.Spare = tc.size*2, tc.elastic
			}
			v := rolloutView(spec, tc.members, tc.rec)
			p := planRollout(spec, &v, tc.resume, testNow, time.Time{})
			if tc.noRollout {
				if p.rec != nil {
					t.Fatalf("a rollout recorded: %+v", p.rec)
				}
				return
			}
			if p.rec == nil {
				t.Fatal("no rollout recorded")
			}
			replace, hold := held(p, &v)
			if len(replace) != tc.replace {
				t.Errorf("replace %v (held %v), want %d replaced", replace, hold, tc.replace)
			}
			switch {
			case tc.halted == "" && p.rec.Halted != "":
				t.Errorf("halted: %s", p.rec.Halted)
			case tc.halted != "" && !strings.Contains(p.rec.Halted, tc.halted):
				t.Errorf("halted %q, want it to say %q", p.rec.Halted, tc.halted)
			}
			if (p.rec.Done != nil) != tc.done {
				t.Errorf("done %v, want %v", p.rec.Done, tc.done)
			}
			if tc.started != p.rec.Started.Equal(testNow) {
				t.Errorf("started %v, want a new rollout: %v", p.rec.Started, tc.started)
			}
			if p.rec.Halted != "" && tc.rec != nil && tc.rec.Halted == "" && p.rec.HaltStamp() == "" {
				t.Error("a halt without its stamp cannot be resumed")
			}
		})
	}
}

// setPods changes the fake's Pods of the pool's members.
func setPods(f *fakeCluster, change func(p *corev1.Pod)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pods {
		change(p)
	}
}

func replacedBy(res ReconcileResult) (replaced, waiting int) {
	for _, a := range res.Actions {
		switch {
		case a.Step != StepReplace:
		case a.Skipped == "" && a.Err == nil:
			replaced++
		case strings.HasPrefix(a.Skipped, "rollout"):
			waiting++
		}
	}
	return replaced, waiting
}

// A new image applied to a pool of 8 free members is rolled 2 at a time (25%),
// each wave once the last is Ready, with the old members serving claims
// meanwhile; a claim never finds the pool without a free desktop. Before
// rollouts, one reconcile replaced all 8 and a claim made meanwhile was
// refused.
func TestReconcileRollsANewImageInWaves(t *testing.T) {
	e, f := newEngine()
	spec := baseSpec(8)
	seedPool(f, "desk", spec, 8)
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	spec.Image = "ghcr.io/example/desktop:2"
	f.add(BuildConfigMap(testNS, "desk", spec))

	ready := func() {
		setPods(f, func(p *corev1.Pod) {
			if p.CreationTimestamp.IsZero() {
				p.CreationTimestamp = metav1.NewTime(testNow)
				readyPod(p)
			}
		})
	}
	setPods(f, func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Hour)) })
	// Every member is of the old image now, and none is free: the old
	// ones serve (before rollouts: "pool has no free members").
	c, err := e.Claim(context.Background(), "desk", "alice")
	if err != nil || c.Member == "" {
		t.Fatalf("a claim before the rollout's first wave: %+v, %v", c, err)
	}
	var waves []int
	for round := 0; round < 10; round++ {
		res, err := e.Reconcile(context.Background(), "desk")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := replacedBy(res)
		if n > 2 {
			t.Fatalf("round %d replaced %d members at once, budget 2", round, n)
		}
		if n > 0 {
			waves = append(waves, n)
			// A claim between the waves gets a desktop.
			if round == 0 {
				c, err := e.Claim(context.Background(), "desk", "bob")
				if err != nil {
					t.Fatalf("a claim during the rollout: %v", err)
				}
				if !strings.HasPrefix(c.Member, "desk-") {
					t.Fatalf("claim: %+v", c)
				}
			}
			// A second reconcile before the wave is Ready replaces nothing.
			res, err := e.Reconcile(context.Background(), "desk")
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := replacedBy(res); n != 0 {
				t.Fatalf("round %d: a reconcile while the wave starts replaced %d", round, n)
			}
		}
		ready()
		if res.Rollout != nil && res.Rollout.Done != nil {
			break
		}
	}
	if fmt.Sprint(waves) != "[2 2 2 1]" {
		// alice holds an old member: it stays until she releases it (bob
		// got a new member of the first wave)
		t.Fatalf("waves %v, want [2 2 2 1]", waves)
	}
	st, err := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
	if err != nil || st.Rollout == nil || st.Rollout.Done == nil || st.Rollout.Waves != 4 || st.Rollout.Replaced != 7 || st.Rollout.FirstWave != 2 {
		t.Fatalf("recorded rollout %+v, %v", st.Rollout, err)
	}
}

// A bad image halts after its first wave: the members still on the old
// source are not replaced; a resume lets the rollout go on; an apply of
// the old image rolls the failed members back.
func TestReconcileHaltsABadImageAndResumes(t *testing.T) {
	e, f := newEngine()
	spec := baseSpec(8)
	seedPool(f, "desk", spec, 8)
	setPods(f, func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Hour)) })
	good := spec
	spec.Image = "registry.invalid/desktop:2"
	f.add(BuildConfigMap(testNS, "desk", spec))
	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := replacedBy(res); n != 2 {
		t.Fatalf("first wave %d, want 2", n)
	}
	fail := func() {
		setPods(f, func(p *corev1.Pod) {
			if p.CreationTimestamp.IsZero() {
				p.CreationTimestamp = metav1.NewTime(testNow)
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "desktop", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "no such image"}}}}
			}
		})
	}
	fail()
	for range 3 {
		res, err = e.Reconcile(context.Background(), "desk")
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := replacedBy(res); n != 0 {
			t.Fatalf("a halted rollout replaced %d more", n)
		}
	}
	rec := res.Rollout
	if rec == nil || !strings.Contains(rec.Halted, "2 of 2 new members") || !strings.Contains(rec.Halted, "ImagePullBackOff: no such image") {
		t.Fatalf("rollout %+v, want it halted with the members' reason", rec)
	}
	if st, _ := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus]); st.Rollout == nil || st.Rollout.Halted != rec.Halted {
		t.Fatalf("the halt is not recorded: %+v", st.Rollout)
	}

	// Resume: the next wave goes (the failing new members are the
	// backoff's, not counted again until members built since fail).
	if _, err := e.ResumeRollout(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	st, _ := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
	if st.Rollout == nil || st.Rollout.Halted != "" || st.Rollout.Resumed == nil {
		t.Fatalf("after resume: %+v", st.Rollout)
	}
	if _, err := e.ResumeRollout(context.Background(), "desk"); !errors.Is(err, ErrNoHaltedRollout) {
		t.Fatalf("a second resume: %v, want ErrNoHaltedRollout", err)
	}

	// Rolling back is an apply of the old image: the failed new members
	// drift, serve no claim and are replaced at once.
	f.add(BuildConfigMap(testNS, "desk", good))
	res, err = e.Reconcile(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	setPods(f, func(p *corev1.Pod) {
		if p.Labels[LabelSource] == good.SourceHash() {
			ready++
		}
	})
	if ready != 8 || res.Rollout == nil || res.Rollout.Source != good.SourceHash() {
		t.Fatalf("after the roll back: %d members on the old image, rollout %+v", ready, res.Rollout)
	}
}

// NeedsWork says no for the old members a halted rollout keeps (the
// controller then reads its cache), and yes while the rollout runs.
func TestNeedsWorkOfARollout(t *testing.T) {
	spec := baseSpec(4)
	members := []rolloutMember{{old: true}, {old: true}, {old: true}, {old: true}}
	rec := &RolloutStatus{Source: spec.SourceHash(), Started: testNow.Add(-time.Hour), Waves: 1, FirstWave: 1, Replaced: 1}
	if v := rolloutView(spec, members, rec); !NeedsWork(v) {
		t.Error("a running rollout with old members: no work")
	}
	halted := *rec
	halted.Halted, halted.HaltedAt = "rollout of x halted", &testNow
	if v := rolloutView(spec, members, &halted); NeedsWork(v) {
		t.Error("a halted rollout: work")
	}
}

// An old member whose Pod an eviction or a drain took during a halt is
// started again on the source its PVC records, its data kept: the old image
// works, and it serves again. Before, the halt held it Stopped.
func TestHaltedRolloutStartsAnEvictedOldMember(t *testing.T) {
	e, f := newEngine()
	old := baseSpec(4)
	seedPool(f, "desk", old, 4)
	spec := old
	spec.Image = "registry.invalid/desktop:2"
	cm := BuildConfigMap(testNS, "desk", spec)
	cm.Data[KeyStatus] = Status{Desired: 4, Rollout: &RolloutStatus{Source: spec.SourceHash(), Image: spec.Image,
		Started: testNow.Add(-time.Hour), Waves: 1, FirstWave: 1, Replaced: 1, Halted: "rollout of registry.invalid/desktop:2 halted: ...", HaltedAt: &testNow}}.Encode()
	f.add(cm)
	pvc := f.pvc(PVCName("desk-3"))
	f.mu.Lock()
	delete(f.pods, "desk-3") // evicted
	f.mu.Unlock()
	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	p := f.pod("desk-3")
	if p == nil || p.Spec.Containers[0].Image != old.Image {
		t.Fatalf("desk-3 after the reconcile: %+v; want its Pod started again on %s", p, old.Image)
	}
	if c := f.pvc(PVCName("desk-3")); c == nil || c.UID != pvc.UID {
		t.Fatal("desk-3's data PVC was replaced")
	}
	if n, _ := replacedBy(res); n != 0 {
		t.Fatalf("a halted rollout replaced %d members", n)
	}
	for _, name := range []string{"desk-1", "desk-2", "desk-4"} {
		if p := f.pod(name); p == nil || p.Spec.Containers[0].Image != old.Image {
			t.Errorf("%s: %v", name, p)
		}
	}
}

// A reconciler whose clock runs ahead of the API server's, with no reading
// of the server's clock to correct it, starts the rollout at the time the
// ConfigMap was written (the server's clock, as the Pods' creation times
// are): the new members it builds count, and a bad image halts the rollout.
// On its own clock the rollout would start 20 minutes after those members
// were created, and never halt.
func TestRolloutStartsOnTheServersClock(t *testing.T) {
	spec := baseSpec(4)
	ahead := testNow.Add(20 * time.Minute) // the reconciler's clock
	applied := testNow.Add(-time.Minute)   // the apply, on the server's clock
	for _, tc := range []struct {
		name    string
		written time.Time
		halted  bool
	}{
		{"the ConfigMap's write time known", applied, true},
		{"unknown (a fake clientset keeps no managed fields): the reconciler's clock", time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldReady := rolloutMember{state: StateReady, old: true, age: time.Hour}
			first := planRollout(spec, ptrTo(rolloutView(spec, []rolloutMember{oldReady, oldReady, oldReady, oldReady}, nil)), "", ahead, tc.written)
			want := ahead
			if !tc.written.IsZero() {
				want = tc.written
			}
			if first.rec == nil || !first.rec.Started.Equal(want) {
				t.Fatalf("a new rollout started at %v, want %v", first.rec, want)
			}
			rec := *first.rec
			rec.Replaced, rec.FirstWave = 2, 2
			// The first wave's two members, built 30 s after the apply on
			// the server's clock, cannot pull their image.
			bad := rolloutMember{state: StateFailed, age: 30 * time.Second, message: "Back-off pulling image"}
			members := []rolloutMember{oldReady, oldReady, bad, bad}
			v := rolloutView(spec, members, &rec)
			p := planRollout(spec, &v, "", ahead, tc.written)
			if got := p.rec.Halted != ""; got != tc.halted {
				t.Fatalf("halted %v (%q), want %v", got, p.rec.Halted, tc.halted)
			}
		})
	}
}
