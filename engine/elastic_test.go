package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func intp(n int) *int { return &n }

// elasticSpec is a valid elastic spec: size, min, max, spare.
func elasticSpec(size, minSize, maxSize, spare int) Spec {
	s := baseSpec(size)
	s.MinSize, s.MaxSize, s.Spare = minSize, maxSize, intp(spare)
	return s
}

func TestElasticSpecValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		field string // "" when valid
	}{
		{"fixed pool", "image: a\nsize: 3\n", ""},
		{"elastic", "image: a\nsize: 2\nminSize: 2\nmaxSize: 40\nspare: 3\n", ""},
		{"elastic defaults", "image: a\nsize: 0\nmaxSize: 5\n", ""},
		{"stopped power", "image: a\nsize: 2\nmaxSize: 5\npower: stopped\nsettle: 90s\n", ""},
		{"min above max", "image: a\nsize: 3\nminSize: 6\nmaxSize: 5\n", "minSize"},
		{"spare above max", "image: a\nsize: 3\nmaxSize: 5\nspare: 6\n", "spare"},
		{"negative spare", "image: a\nsize: 3\nmaxSize: 5\nspare: -1\n", "spare"},
		{"size below min", "image: a\nsize: 1\nminSize: 2\nmaxSize: 5\n", "size"},
		{"size above max", "image: a\nsize: 6\nmaxSize: 5\n", "size"},
		{"max too large", "image: a\nsize: 1\nmaxSize: 100000\n", "maxSize"},
		{"negative max", "image: a\nsize: 1\nmaxSize: -2\n", "maxSize"},
		{"spare without max", "image: a\nsize: 1\nspare: 2\n", "spare"},
		{"min without max", "image: a\nsize: 1\nminSize: 1\n", "minSize"},
		{"power without max", "image: a\nsize: 1\npower: stopped\n", "power"},
		{"unknown power", "image: a\nsize: 1\nmaxSize: 2\npower: off\n", "power"},
		{"bad settle", "image: a\nsize: 1\nmaxSize: 2\nsettle: soon\n", "settle"},
		{"settle too long", "image: a\nsize: 1\nmaxSize: 2\nsettle: 25h\n", "settle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpec(tc.yaml)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("ParseSpec: %v", err)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Field != tc.field {
				t.Fatalf("err = %v, want an InvalidError naming %s", err, tc.field)
			}
		})
	}
}

func TestElasticFieldsAreNoSourceFields(t *testing.T) {
	fixed := baseSpec(3)
	el := elasticSpec(3, 2, 40, 3)
	el.Power, el.Settle = PowerStopped, "5m"
	if fixed.SourceHash() != el.SourceHash() {
		t.Fatalf("elastic fields changed the source hash: %s vs %s", fixed.SourceHash(), el.SourceHash())
	}
	back, err := ParseSpec(el.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if back.MinSize != 2 || back.MaxSize != 40 || back.SpareTarget() != 3 || back.PowerPolicy() != PowerStopped || back.SettleTime() != 5*time.Minute {
		t.Fatalf("round trip lost a field: %+v", back)
	}
	if d := baseSpec(1); d.SpareTarget() != 0 || d.Elastic() {
		t.Fatalf("a fixed pool has a spare or is elastic")
	}
	if d := elasticSpec(1, 0, 3, 0); d.SpareTarget() != 0 {
		t.Fatalf("spare 0 given reads %d", d.SpareTarget())
	}
	d := baseSpec(1)
	d.MaxSize = 3
	if d.SpareTarget() != DefaultSpare || d.SettleTime() != DefaultSettle || d.PowerPolicy() != PowerRunning {
		t.Fatalf("defaults: spare %d settle %s power %s", d.SpareTarget(), d.SettleTime(), d.PowerPolicy())
	}
}

func TestEffectiveSize(t *testing.T) {
	el := elasticSpec(3, 2, 10, 2)
	for _, tc := range []struct {
		name string
		spec Spec
		rec  *ElasticStatus
		want int
	}{
		{"fixed ignores a record", baseSpec(4), &ElasticStatus{Size: 9, From: 4}, 4},
		{"no record: the definition's size", el, nil, 3},
		{"the record", el, &ElasticStatus{Size: 7, From: 3}, 7},
		{"a record of another size: the definition changed", el, &ElasticStatus{Size: 7, From: 5}, 3},
		{"a record above max is clamped", el, &ElasticStatus{Size: 12, From: 3}, 10},
		{"a record below min is clamped", el, &ElasticStatus{Size: 1, From: 3}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EffectiveSize(tc.spec, tc.rec); got != tc.want {
				t.Fatalf("EffectiveSize = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestElasticStatusRoundTrip(t *testing.T) {
	at := testNow.Add(-time.Hour)
	st := Status{Desired: 5, Free: 2, Elastic: &ElasticStatus{Size: 5, From: 3, Reason: `grew from 3 to 5: 0 free of spare 2 "x"`, ChangedAt: &at, AtCeiling: true},
		Members: []MemberRow{{Name: "p-1", State: StateReady}}}
	enc := st.Encode()
	back, err := ParseStatus(enc)
	if err != nil {
		t.Fatalf("ParseStatus: %v\n%s", err, enc)
	}
	if back.Elastic == nil || back.Elastic.Size != 5 || back.Elastic.From != 3 || back.Elastic.Reason != st.Elastic.Reason || !back.Elastic.ChangedAt.Equal(at) || !back.Elastic.AtCeiling {
		t.Fatalf("elastic status did not round-trip: %+v\n%s", back.Elastic, enc)
	}
	quick := RecordedElastic(enc)
	if quick == nil || *quick.ChangedAt != *back.Elastic.ChangedAt || quick.Size != 5 {
		t.Fatalf("RecordedElastic = %+v", quick)
	}
	if RecordedElastic(Status{Desired: 1}.Encode()) != nil || RecordedElastic("elastic: {broken\n") != nil {
		t.Fatal("RecordedElastic read an elastic status where there is none")
	}
}

// elasticView observes a pool of n members at size (1..n Ready, the first
// claimed ones claimed by u<i>).
func elasticView(t *testing.T, spec Spec, rec *ElasticStatus, members, claimed int, mutate func(*Snapshot)) PoolView {
	t.Helper()
	f := newFake(testNS)
	cm := BuildConfigMap(testNS, "el", spec)
	if rec != nil {
		cm.Data[KeyStatus] = Status{Elastic: rec}.Encode()
	}
	f.add(cm)
	for n := 1; n <= members; n++ {
		p, c := readyMember("el", n, spec)
		f.add(p, c)
		if n <= claimed {
			f.add(claimAt("el", MemberName("el", n), fmt.Sprintf("u%d", n), testNow))
		}
	}
	snap, err := f.Snapshot(context.Background(), "el")
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(&snap)
	}
	return Observe(snap, testNow)
}

func TestPlanElastic(t *testing.T) {
	spec := elasticSpec(3, 2, 10, 3)
	since := func(d time.Duration) *time.Time { t := testNow.Add(-d); return &t }
	for _, tc := range []struct {
		name             string
		rec              *ElasticStatus
		members, claimed int
		mutate           func(*Snapshot)
		want             int
		changed          bool
		aboveSince       bool
		reason           string
	}{
		{name: "first decision keeps the definition's size", members: 3, want: 3, reason: "started from"},
		{name: "claims ate the spare: grow at once", rec: &ElasticStatus{Size: 5, From: 3}, members: 5, claimed: 4, want: 7, changed: true, reason: "grew from 5 to 7: 1 free of spare 3"},
		{name: "growth stops at max", rec: &ElasticStatus{Size: 9, From: 3}, members: 9, claimed: 9, want: 10, changed: true},
		{name: "at max nothing to grow", rec: &ElasticStatus{Size: 10, From: 3}, members: 10, claimed: 10, want: 10},
		{name: "unschedulable members count as coming supply: no runaway growth", rec: &ElasticStatus{Size: 6, From: 3}, members: 6, claimed: 3,
			mutate: func(s *Snapshot) {
				for _, p := range s.Pods[3:] {
					p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available"}}}
				}
			}, want: 6},
		{name: "a member under a reconciler's Lease counts as coming supply: no growth for a replacement", rec: &ElasticStatus{Size: 6, From: 3}, members: 6, claimed: 3,
			mutate: func(s *Snapshot) {
				s.Pods[5].Labels[LabelSource] = "old"
				s.Leases = append(s.Leases, ReconcilerLease(testNS, "el", "el-6", testNow))
			}, want: 6},
		{name: "above the spare: the settle time starts", rec: &ElasticStatus{Size: 8, From: 3}, members: 8, claimed: 2, want: 8, aboveSince: true},
		{name: "above the spare within the settle time: keep", rec: &ElasticStatus{Size: 8, From: 3, AboveSince: since(9 * time.Minute)}, members: 8, claimed: 2, want: 8, aboveSince: true},
		{name: "above the spare for the settle time: shrink by the excess", rec: &ElasticStatus{Size: 8, From: 3, AboveSince: since(10 * time.Minute)}, members: 8, claimed: 2, want: 5, changed: true, reason: "shrank from 8 to 5"},
		{name: "shrink never below min", rec: &ElasticStatus{Size: 4, From: 3, AboveSince: since(time.Hour)}, members: 4, want: 3, changed: true},
		{name: "shrink never below a claimed member", rec: &ElasticStatus{Size: 8, From: 3, AboveSince: since(time.Hour)}, members: 8,
			mutate: func(s *Snapshot) {
				s.Leases = append(s.Leases, claimAt("el", "el-7", "late", testNow))
			}, want: 7, changed: true},
		{name: "back at the spare: the settle time is forgotten", rec: &ElasticStatus{Size: 6, From: 3, AboveSince: since(time.Minute)}, members: 6, claimed: 3, want: 6},
		{name: "the definition's size changed: start from it", rec: &ElasticStatus{Size: 8, From: 4}, members: 8, claimed: 0, want: 3, changed: true, reason: "the definition's size changed to 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := elasticView(t, spec, tc.rec, tc.members, tc.claimed, tc.mutate)
			d := PlanElastic(spec, &v, v.Recorded.Elastic, testNow)
			if d.Status.Size != tc.want || d.Changed != tc.changed {
				t.Fatalf("size %d changed %v, want %d %v (%s)", d.Status.Size, d.Changed, tc.want, tc.changed, d.Status.Reason)
			}
			if (d.Status.AboveSince != nil) != tc.aboveSince {
				t.Fatalf("aboveSince %v, want set %v", d.Status.AboveSince, tc.aboveSince)
			}
			if !strings.Contains(d.Status.Reason, tc.reason) {
				t.Fatalf("reason %q does not say %q", d.Status.Reason, tc.reason)
			}
			if tc.rec != nil && tc.rec.AboveSince != nil && d.Status.AboveSince != nil && !d.Status.AboveSince.Equal(*tc.rec.AboveSince) {
				t.Fatalf("aboveSince moved from %v to %v", tc.rec.AboveSince, d.Status.AboveSince)
			}
		})
	}
}

// dayPool runs a simulated day on an elastic pool on a fake clock: a
// reconcile a minute (the controller reacts to every change within a
// second), a kubelet that makes every new Pod Ready by the next minute, and
// users who claim in a morning ramp, release part at lunch and claim again,
// and leave in an evening drain. It checks the promises at every
// step and returns the figures.
type dayFigures struct {
	claims, firstTryRefused, refusedBelowMax, maxSize, minSize, changes int
	runningMismatch, final                                              int
	sizes                                                               []int
}

func runDay(t *testing.T, power string) dayFigures {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	f := newFake(testNS)
	eng := &Engine{Cluster: f, Namespace: testNS, Now: func() time.Time { return now }, Concurrency: 4, WaitTimeout: 5 * time.Second}
	const pool = "day"
	spec := elasticSpec(2, 2, 40, 3)
	spec.Power = power
	if _, err := eng.Apply(ctx, pool, spec); err != nil {
		t.Fatalf("apply: %v", err)
	}
	kubelet := func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, p := range f.pods {
			if p.Status.Phase == "" {
				readyPod(p)
			}
		}
	}
	var fig dayFigures
	fig.minSize = 1 << 30
	type held struct {
		member string
		pod    types.UID
		pvc    types.UID
	}
	holders := map[string]held{} // user -> what they hold
	var waiting []string
	var lastChange time.Time
	lastSize := -1
	status := func() Status {
		st, err := ParseStatus(f.cm(ConfigMapName(pool)).Data[KeyStatus])
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	reconcile := func() {
		if _, err := eng.Reconcile(ctx, pool); err != nil {
			t.Fatalf("%s reconcile: %v", now.Format("15:04"), err)
		}
		kubelet()
		st := status()
		if st.Elastic == nil {
			t.Fatalf("%s: no elastic status", now.Format("15:04"))
		}
		size := st.Elastic.Size
		if size != lastSize {
			if lastSize >= 0 && size < lastSize && now.Sub(lastChange) < spec.SettleTime() {
				t.Errorf("%s: shrank %d -> %d only %s after the last change", now.Format("15:04"), lastSize, size, now.Sub(lastChange))
			}
			if lastSize >= 0 {
				fig.changes++
			}
			lastSize, lastChange = size, now
		}
		fig.maxSize, fig.minSize = max(fig.maxSize, size), min(fig.minSize, size)
		// No claimed member was stopped or rebuilt: its Pod and PVC are the ones it was given.
		for user, h := range holders {
			p, c := f.pod(h.member), f.pvc(h.member+"-data")
			if p == nil || c == nil || p.UID != h.pod || c.UID != h.pvc {
				t.Fatalf("%s: %s's member %s lost its Pod or PVC", now.Format("15:04"), user, h.member)
			}
		}
		if power == PowerStopped {
			snap, _ := f.Snapshot(ctx, pool)
			v := Observe(snap, now)
			running, free := 0, 0
			for i := range v.Members {
				if m := &v.Members[i]; m.Free {
					free++
					if m.State != StateStopped {
						running++
					}
				}
			}
			if running != min(spec.SpareTarget(), free) {
				fig.runningMismatch++
				t.Errorf("%s: %d free members run, want %d (%d free)", now.Format("15:04"), running, min(spec.SpareTarget(), free), free)
			}
		}
	}
	claim := func(user string) bool {
		fig.claims++
		res, err := eng.Claim(ctx, pool, user)
		var nf *NoFreeMembersError
		if errors.As(err, &nf) {
			return false
		}
		if err != nil {
			t.Fatalf("claim %s: %v", user, err)
		}
		kubelet()
		p, c := f.pod(res.Member), f.pvc(res.Member+"-data")
		if p == nil || c == nil {
			t.Fatalf("claim %s: member %s has no Pod or PVC", user, res.Member)
		}
		holders[user] = held{res.Member, p.UID, c.UID}
		return true
	}
	release := func(user string) {
		h := holders[user]
		delete(holders, user)
		if _, err := eng.Release(ctx, pool, h.member, user); err != nil {
			t.Fatalf("release %s: %v", user, err)
		}
		kubelet()
	}
	// The day: claims (+) and releases (-) per minute.
	arrivals := func(hm int) (claims, releases int) {
		switch {
		case hm == 9*60+30: // a burst of 8 at once, more than the spare
			claims = 8
		case hm >= 8*60 && hm < 10*60: // morning ramp: 24 users in 2 hours, faster towards 10
			if hm%10 == 0 {
				claims = 1 + (hm-8*60)/40
			}
		case hm >= 12*60 && hm < 12*60+30: // lunch: 12 leave
			if hm%5 < 2 {
				releases = 1
			}
		case hm >= 13*60 && hm < 13*60+20: // and come back in a burst
			if hm%5 < 3 {
				claims = 1
			}
		case hm >= 17*60 && hm < 19*60: // evening drain
			if hm%3 == 0 {
				releases = 1
			}
		case hm >= 19*60:
			releases = len(holders)
		}
		return claims, releases
	}
	next := 0
	for hm := 6 * 60; hm < 21*60; hm++ {
		now = time.Date(2026, 12, 1, hm/60, hm%60, 0, 0, time.UTC)
		claims, releases := arrivals(hm)
		for range releases {
			for user := range holders {
				release(user)
				break
			}
		}
		for range claims {
			user := fmt.Sprintf("user%02d@example.com", next)
			next++
			if !claim(user) {
				fig.firstTryRefused++
				waiting = append(waiting, user)
			}
		}
		now = now.Add(time.Second) // the controller's settle time after the change
		reconcile()
		// A user who found no free member tries again once the reconciler grew the pool.
		still := waiting[:0]
		for _, user := range waiting {
			if !claim(user) {
				if st := status(); st.Elastic.Size < spec.MaxSize {
					fig.refusedBelowMax++
					t.Errorf("%s: %s refused while the pool is at %d of max %d", now.Format("15:04"), user, st.Elastic.Size, spec.MaxSize)
				}
				still = append(still, user)
			}
		}
		waiting = still
		now = now.Add(30 * time.Second)
		reconcile()
	}
	if len(holders) != 0 {
		t.Fatalf("the evening drain left %d claims", len(holders))
	}
	fig.final = lastSize
	return fig
}

func TestElasticSimulatedDay(t *testing.T) {
	for _, power := range []string{PowerRunning, PowerStopped} {
		t.Run(power, func(t *testing.T) {
			fig := runDay(t, power)
			t.Logf("power %s: %d claims, %d found no free member at once (all served after one reconcile), size %d..%d, %d size changes",
				power, fig.claims, fig.firstTryRefused, fig.minSize, fig.maxSize, fig.changes)
			if fig.maxSize < 30 {
				t.Fatalf("the pool never grew past %d: the day did not test growth", fig.maxSize)
			}
			if want := max(2, 3); fig.final != want {
				t.Fatalf("at night the pool is at %d, want max(min, spare) = %d", fig.final, want)
			}
		})
	}
}

func TestReconcileRecordsHistory(t *testing.T) {
	ctx := context.Background()
	now := testNow
	eng, f := newEngine()
	eng.Now = func() time.Time { return now }
	seedPool(f, "h", baseSpec(3), 3)
	history := func() []Sample {
		st, err := ParseStatus(f.cm(ConfigMapName("h")).Data[KeyStatus])
		if err != nil || st.History == nil {
			t.Fatalf("status %v: history %v", err, st.History)
		}
		return st.History.Samples
	}
	writes := func() int {
		n := 0
		for _, a := range f.writes() {
			if a.Kind == kCM {
				n++
			}
		}
		return n
	}
	if _, err := eng.Reconcile(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	if h := history(); len(h) != 1 || h[0].Free != 3 || h[0].Size != 3 || h[0].Claimed != 0 {
		t.Fatalf("first sample %+v", h)
	}
	before := writes()
	now = now.Add(20 * time.Minute) // at rest: nothing to write
	if _, err := eng.Reconcile(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	if writes() != before || len(history()) != 1 {
		t.Fatalf("a pool at rest wrote its status (%d writes, %d samples)", writes()-before, len(history()))
	}
	f.add(claimAt("h", "h-1", "alice", now))
	now = now.Add(5 * time.Minute)
	if _, err := eng.Reconcile(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	if h := history(); len(h) != 2 || h[1].Claimed != 1 || h[1].Free != 2 {
		t.Fatalf("a claim was not sampled: %+v", h)
	}
	now = now.Add(HistoryHeartbeat)
	if _, err := eng.Reconcile(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	h := History{Samples: history()}
	if len(h.Samples) != 3 {
		t.Fatalf("no heartbeat sample after %s: %+v", HistoryHeartbeat, h.Samples)
	}
	filled := h.Filled(now)
	// Every 5-minute slot from the first sample to now is there (the pool ran throughout).
	if want := int(now.Sub(h.Samples[0].At)/HistoryInterval) + 1; len(filled) != want {
		t.Fatalf("Filled gave %d samples, want %d", len(filled), want)
	}
	for i := 1; i < len(filled); i++ {
		if filled[i].At.Sub(filled[i-1].At) != HistoryInterval {
			t.Fatalf("Filled left a gap at %s", filled[i].At)
		}
	}
}
