package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An object that holds a member's name but is not that member blocks it:
// one error names it, a second reconcile writes nothing, claim never hands
// the member out.
func TestReconcileLeavesABlockedMember(t *testing.T) {
	spec := baseSpec(1)
	tests := []struct {
		name string
		obj  any
		want string
	}{
		{"a Pod with no labels", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "desk-1"}},
			"pod desk-1 exists and is not this pool's member (it has no pool labels)"},
		{"a Pod of another pool", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "desk-1", Labels: map[string]string{LabelPool: "other", LabelMember: "other-1"}}},
			"pod desk-1 exists and is not this pool's member (it is labelled corral.dev/vdi-ct-pool=other)"},
		{"a PVC with no labels", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "desk-1-data"}},
			"pvc desk-1-data exists and is not this pool's member (it has no pool labels)"},
		{"a PVC of another pool", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "desk-1-data", Labels: map[string]string{LabelPool: "other"}}},
			"pvc desk-1-data exists and is not this pool's member (it is labelled corral.dev/vdi-ct-pool=other)"},
		{"a labelled Pod of another member", func() any {
			p := readyPod(BuildPod(testNS, "desk", 1, spec))
			p.Labels[LabelMember] = "other-1"
			return p
		}(), "pod desk-1 exists and is not this pool's member (it is labelled corral.dev/vdi-ct-member=other-1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", spec, 0)
			f.add(tt.obj)
			ctx := context.Background()
			res, err := e.Reconcile(ctx, "desk")
			if err == nil || !strings.Contains(err.Error(), "blocked desk-1: "+tt.want) {
				t.Fatalf("first reconcile: %v, want the block %q", err, tt.want)
			}
			if len(res.Errors) != 1 {
				t.Fatalf("errors %q, want one", res.Errors)
			}
			if d, _ := res.Counts(); d[StepCreate]+d[StepStart] != 0 {
				t.Fatalf("counts %v: a blocked member counted as created or started", d)
			}
			st, _ := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
			if len(st.Members) != 1 || st.Members[0].Blocked != tt.want || st.Free != 0 {
				t.Fatalf("recorded status %+v, want desk-1 blocked and not free", st)
			}
			v := Observe(mustSnapshot(t, f), testNow)
			if m := mustMember(t, v, "desk-1"); m.Blocked != tt.want || m.Free || !strings.Contains(strings.Join(m.Problems, ";"), tt.want) {
				t.Fatalf("observed blocked %q free %v problems %q", m.Blocked, m.Free, m.Problems)
			}

			f.reset()
			res, err = e.Reconcile(ctx, "desk")
			if err == nil || res.Done() != 0 || res.StatusWritten || len(res.Errors) != 1 {
				t.Fatalf("second reconcile: err %v done %d written %v errors %q", err, res.Done(), res.StatusWritten, res.Errors)
			}
			if w := f.writes(); len(w) != 0 {
				t.Fatalf("second reconcile wrote %v", w)
			}

			_, err = e.Claim(ctx, "desk", "alice")
			errIs(t, err, ErrNoFreeMembers)
			if w := f.writes(); len(w) != 0 {
				t.Fatalf("claim wrote %v", w)
			}
		})
	}
}

// Once the foreign object is gone, the next reconcile builds the member.
func TestBlockedMemberIsBuiltOnceTheObjectIsGone(t *testing.T) {
	e, f := newEngine()
	spec := baseSpec(1)
	seedPool(f, "desk", spec, 0)
	f.add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "desk-1"}})
	ctx := context.Background()
	if _, err := e.Reconcile(ctx, "desk"); err == nil {
		t.Fatal("first reconcile found no block")
	}
	f.finish(KindPod, "desk-1")
	res, err := e.Reconcile(ctx, "desk")
	if err != nil {
		t.Fatalf("reconcile after the object went: %v", err)
	}
	if d, _ := res.Counts(); d[StepStart] != 1 {
		t.Fatalf("counts %v, want the stopped member started", d)
	}
	if p := f.pod("desk-1"); p == nil || p.Labels[LabelPool] != "desk" {
		t.Fatalf("pod %v, want the member's", p)
	}
	if st, _ := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus]); st.Members[0].Blocked != "" || len(st.Errors) != 0 {
		t.Fatalf("status %+v still blocked", st)
	}
}

func mustSnapshot(t *testing.T, f *fakeCluster) Snapshot {
	t.Helper()
	s, err := f.Snapshot(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A Lease with an empty holder is no claim and no maintenance: the member is
// not free while it exists; reconcile removes it once stale (counted as an
// unlock); release says there is no claim; release --force removes it.
func TestLeaseWithNoHolder(t *testing.T) {
	unheld := func(at time.Time) any {
		l := ClaimLease(testNS, "desk", "desk-1", "x", at)
		l.Spec.HolderIdentity = ptrTo("")
		return l
	}
	ctx := context.Background()
	t.Run("fresh: skipped, not free", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(1), 1)
		f.add(unheld(testNow.Add(-time.Minute)))
		m := mustMember(t, Observe(mustSnapshot(t, f), testNow), "desk-1")
		if m.Free || m.Claimed || m.InMaintenance() || !m.Unheld() {
			t.Fatalf("free %v claimed %v maintenance %v unheld %v", m.Free, m.Claimed, m.InMaintenance(), m.Unheld())
		}
		if _, err := e.Reconcile(ctx, "desk"); err != nil {
			t.Fatal(err)
		}
		if f.lease(LeaseName("desk-1")) == nil {
			t.Fatal("a fresh Lease with no holder was removed")
		}
	})
	t.Run("stale: removed by reconcile as an unlock", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(1), 1)
		f.add(unheld(testNow.Add(-ReconcilerLeaseTTL - time.Second)))
		res, err := e.Reconcile(ctx, "desk")
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := res.Counts(); d[StepUnlock] != 1 || d[StepStart] != 0 {
			t.Fatalf("counts %v, want one unlock", d)
		}
		if f.lease(LeaseName("desk-1")) != nil {
			t.Fatal("the stale Lease with no holder stays")
		}
	})
	t.Run("release says no claim; release --force removes it", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(1), 1)
		f.add(unheld(testNow.Add(-time.Minute)))
		res, err := e.Release(ctx, "desk", "desk-1", "bob")
		if err != nil || !res.NoOp {
			t.Fatalf("Release = %+v, %v; want no claim", res, err)
		}
		if f.lease(LeaseName("desk-1")) == nil {
			t.Fatal("a plain release removed the Lease")
		}
		res, err = e.ForceRelease(ctx, "desk", "desk-1")
		if err != nil || !res.RemovedUnheld {
			t.Fatalf("ForceRelease = %+v, %v", res, err)
		}
		if f.lease(LeaseName("desk-1")) != nil || f.pod("desk-1") == nil {
			t.Fatal("force-release did not remove the Lease alone")
		}
	})
}

// A stale reconciler Lease on a member that needs nothing else is removed
// and counted as an unlock, never as a start.
func TestStaleLeaseRemovalIsAnUnlock(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(1), 1)
	f.add(ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-ReconcilerLeaseTTL-time.Minute)))
	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := res.Counts()
	if d[StepUnlock] != 1 || d[StepStart] != 0 {
		t.Fatalf("counts %v, want 1 unlock and no start", d)
	}
	if f.lease(LeaseName("desk-1")) != nil {
		t.Fatal("the stale Lease stays")
	}
}

// The skew rule: a Lease time more than SkewTolerance ahead counts from when
// the reader first saw it, never later than now.
func TestLeaseInTheFuture(t *testing.T) {
	ahead := testNow.Add(time.Hour)
	l := ReconcilerLease(testNS, "desk", "desk-1", ahead)
	tests := []struct {
		name      string
		now, seen time.Time
		since     time.Time
		stale     bool
	}{
		{"read once: renewed now", testNow, time.Time{}, testNow, false},
		{"seen 9 minutes ago", testNow, testNow.Add(-9 * time.Minute), testNow.Add(-9 * time.Minute), false},
		{"seen 10 minutes ago: stale", testNow, testNow.Add(-ReconcilerLeaseTTL), testNow.Add(-ReconcilerLeaseTTL), true},
		{"seen after now is now", testNow, testNow.Add(time.Minute), testNow, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, problems := interpretLeaseSeen(l, tt.now, tt.seen)
			if !c.Since.Equal(tt.since) || !c.Expires.Equal(tt.since.Add(ReconcilerLeaseTTL)) || c.Stale != tt.stale {
				t.Fatalf("since %s expires %s stale %v, want since %s stale %v", c.Since, c.Expires, c.Stale, tt.since, tt.stale)
			}
			if !strings.Contains(strings.Join(problems, ";"), "is in the future") {
				t.Fatalf("problems %q", problems)
			}
		})
	}
	// Within the tolerance the stamp is taken as it is.
	near := ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(30*time.Second))
	if c, _ := interpretLease(near, testNow); !c.Since.Equal(testNow.Add(30 * time.Second)) {
		t.Fatalf("a stamp 30 s ahead counts from %s", c.Since)
	}
	// A claim stamped a day ahead expires an hour from now, not a day from now.
	claim := ClaimLease(testNS, "desk", "desk-1", "alice", testNow.Add(24*time.Hour))
	if c, _ := interpretLease(claim, testNow); !c.Expires.Equal(testNow.Add(ClaimDuration)) || c.Expired {
		t.Fatalf("claim from the future expires %s (expired %v), want %s", c.Expires, c.Expired, testNow.Add(ClaimDuration))
	}
}

// A reconciler whose clock ran an hour fast left its Lease; a reader that
// first saw it 10 minutes ago (Snapshot.LeaseSeen) takes it over.
func TestReconcileTakesOverASkewedLeaseByFirstSight(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(1), 1)
	f.add(ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(time.Hour)))
	snap := mustSnapshot(t, f)
	snap.LeaseSeen = map[string]time.Time{LeaseName("desk-1"): testNow.Add(-ReconcilerLeaseTTL)}
	e.Cluster = seenCluster{fakeCluster: f, seen: snap.LeaseSeen}
	if m := mustMember(t, Observe(snap, testNow), "desk-1"); !(m.InMaintenance() && m.HoldStale()) {
		t.Fatal("the skewed Lease is not stale 10 minutes after it was first seen")
	}
	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := res.Counts(); d[StepUnlock] != 1 {
		t.Fatalf("counts %v, want the skewed Lease removed", d)
	}
	// Without a first sighting (a reader that reads once) it stays.
	e2, f2 := newEngine()
	seedPool(f2, "desk", baseSpec(1), 1)
	f2.add(ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(time.Hour)))
	if _, err := e2.Reconcile(context.Background(), "desk"); err != nil && !errors.Is(err, ErrMaintenance) {
		t.Fatal(err)
	}
	if f2.lease(LeaseName("desk-1")) == nil {
		t.Fatal("a reader that reads once removed a Lease stamped in the future")
	}
}

// seenCluster is the fake whose snapshots carry first sightings.
type seenCluster struct {
	*fakeCluster
	seen map[string]time.Time
}

func (c seenCluster) Snapshot(ctx context.Context, pool string) (Snapshot, error) {
	s, err := c.fakeCluster.Snapshot(ctx, pool)
	s.LeaseSeen = c.seen
	return s, err
}

// writtenAt is l as the API server keeps it after taking a write at w: its
// managed fields carry the server's time (LeaseWritten).
func writtenAt(l *coordinationv1.Lease, w time.Time) *coordinationv1.Lease {
	t := metav1.NewTime(w)
	l.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "ctpool-tui", Operation: metav1.ManagedFieldsOperationUpdate, Time: &t}}
	return l
}

// A writer whose clock runs slow stamps the past: its Lease counts from
// when the API server took the write, never from its stamp, so it is not
// stale (nor a claim expired) the moment it is written.
func TestLeaseCountsFromTheServersWriteWhenTheStampIsBehind(t *testing.T) {
	hourSlow := testNow.Add(-time.Hour)
	tests := []struct {
		name      string
		lease     *coordinationv1.Lease
		now, seen time.Time
		since     time.Time
		stale     bool
		expired   bool
		problem   string
	}{
		{"reconciler an hour slow, written now", writtenAt(ReconcilerLease(testNS, "desk", "desk-1", hourSlow), testNow), testNow, time.Time{}, testNow, false, false, "writer's clock runs slow"},
		{"reconciler an hour slow, written 10 minutes ago: stale", writtenAt(ReconcilerLease(testNS, "desk", "desk-1", hourSlow), testNow.Add(-ReconcilerLeaseTTL)), testNow, time.Time{}, testNow.Add(-ReconcilerLeaseTTL), true, true, "writer's clock runs slow"},
		{"claim stamped by a broker an hour slow", writtenAt(ClaimLease(testNS, "desk", "desk-1", "alice", hourSlow), testNow.Add(-time.Minute)), testNow, time.Time{}, testNow.Add(-time.Minute), false, false, "writer's clock runs slow"},
		{"stamp and write agree: old and stale", writtenAt(ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-11*time.Minute)), testNow.Add(-11*time.Minute)), testNow, time.Time{}, testNow.Add(-11 * time.Minute), true, true, ""},
		{"stamp 30 s behind the write: the write, no problem", writtenAt(ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-30*time.Second)), testNow), testNow, time.Time{}, testNow, false, false, ""},
		{"stamp later than the write: the stamp", writtenAt(ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-time.Minute)), testNow.Add(-2*time.Minute)), testNow, time.Time{}, testNow.Add(-time.Minute), false, false, ""},
		{"write an hour ahead of this reader: counts from its first sight", writtenAt(ReconcilerLease(testNS, "desk", "desk-1", hourSlow), testNow.Add(time.Hour)), testNow, testNow.Add(-3 * time.Minute), testNow.Add(-3 * time.Minute), false, false, "writer's clock runs slow"},
		{"no managed fields: the stamp", ReconcilerLease(testNS, "desk", "desk-1", hourSlow), testNow, time.Time{}, hourSlow, true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, problems := interpretLeaseSeen(tt.lease, tt.now, tt.seen)
			if !c.Since.Equal(tt.since) || c.Stale != tt.stale || c.Expired != tt.expired {
				t.Fatalf("since %s stale %v expired %v, want since %s stale %v expired %v", c.Since, c.Stale, c.Expired, tt.since, tt.stale, tt.expired)
			}
			got := strings.Join(problems, ";")
			if (tt.problem == "") != !strings.Contains(got, "runs slow") || (tt.problem != "" && !strings.Contains(got, tt.problem)) {
				t.Fatalf("problems %q, want one containing %q", got, tt.problem)
			}
		})
	}
}

// A reconcile on a correct clock leaves alone the Lease a reconciler an
// hour slow has just taken; ten minutes after the API server took it, the
// Lease is stale and the reconcile takes it over.
func TestReconcileLeavesASlowReconcilersFreshLease(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(1), 1)
	f.add(writtenAt(ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-time.Hour)), testNow.Add(-time.Second)))
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil && !errors.Is(err, ErrMaintenance) {
		t.Fatal(err)
	}
	if l := f.lease(LeaseName("desk-1")); l == nil || l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.Equal(testNow.Add(-time.Hour)) {
		t.Fatalf("a reconcile took over a reconciler Lease written a second ago: %+v", l)
	}
	e.Now = func() time.Time { return testNow.Add(ReconcilerLeaseTTL) }
	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := res.Counts(); d[StepUnlock] != 1 {
		t.Fatalf("counts %v, want the stale Lease removed once the TTL has passed since its write", d)
	}
}
