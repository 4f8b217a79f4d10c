package engine

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPoolFromLeaseName(t *testing.T) {
	tests := []struct {
		name         string
		pool, member string
		ok           bool
	}{
		{name: "corral-vdi-ct-desk-1", pool: "desk", member: "desk-1", ok: true},
		{name: "corral-vdi-ct-desk-10000", pool: "desk", member: "desk-10000", ok: true},
		// Only one parse has a numeric tail: pool desk-2, member 3 (desk's
		// members are desk-<n>, and "2-3" is no index).
		{name: "corral-vdi-ct-desk-2-3", pool: "desk-2", member: "desk-2-3", ok: true},
		{name: "corral-vdi-ct-a-b-c-12", pool: "a-b-c", member: "a-b-c-12", ok: true},
		{name: "corral-vdi-ct-desk-0"},           // no index 0
		{name: "corral-vdi-ct-desk-01"},          // no leading zero
		{name: "corral-vdi-ct-desk-x"},           // no digits
		{name: "corral-vdi-ct-desk-"},            // nothing after the dash
		{name: "corral-vdi-ct-desk"},             // no index at all
		{name: "corral-vdi-ct--1"},               // no pool
		{name: "corral-vdi-ct-1-1"},              // pool names start with a letter
		{name: "corral-vdi-ct-Desk-1"},           // not a DNS label
		{name: "corral-vdi-ct-desk--1"},          // pool "desk-" ends with a dash
		{name: "corral-vdi-ctpool-desk"},         // a pool ConfigMap's name
		{name: "desk-1"},                         // no prefix
		{name: "kube-controller-manager"},        // a leader election Lease
		{name: "corral-vdi-ct-" + long41 + "-1"}, // pool name too long
		{name: "corral-vdi-ct-" + long41[:40] + "-1", pool: long41[:40], member: long41[:40] + "-1", ok: true},
	}
	for _, tt := range tests {
		pool, member, ok := PoolFromLeaseName(tt.name)
		if pool != tt.pool || member != tt.member || ok != tt.ok {
			t.Errorf("PoolFromLeaseName(%q) = %q, %q, %v; want %q, %q, %v", tt.name, pool, member, ok, tt.pool, tt.member, tt.ok)
		}
		if tt.ok && LeaseName(member) != tt.name {
			t.Errorf("LeaseName(%q) = %q, not %q", member, LeaseName(member), tt.name)
		}
	}
}

const long41 = "abcdefghijabcdefghijabcdefghijabcdefghijk"

// unlabelledLease is a claim Lease as a broker writes it: by the contract's
// name, with no label.
func unlabelledLease(member, holder string, renewed time.Time, d time.Duration) *coordinationv1.Lease {
	secs := int32(d / time.Second)
	t := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseName(member), Namespace: testNS},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &t, RenewTime: &t},
	}
}

func TestLeasePool(t *testing.T) {
	labelled := func(name, pool string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelPool: pool}}}
	}
	tests := []struct {
		lease  *coordinationv1.Lease
		pool   string
		byName bool
	}{
		{unlabelledLease("desk-1", "bob", testNow, time.Hour), "desk", true},
		{labelled("corral-vdi-ct-desk-1", "desk"), "desk", true},
		// The name decides over a label that disagrees with it.
		{labelled("corral-vdi-ct-desk-2-3", "desk"), "desk-2", true},
		// A labelled Lease whose name names no member keeps its label.
		{labelled("corral-vdi-ct-odd", "desk"), "desk", false},
		{&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler"}}, "", false},
	}
	for _, tt := range tests {
		pool, byName := LeasePool(tt.lease)
		if pool != tt.pool || byName != tt.byName {
			t.Errorf("LeasePool(%s, %v) = %q, %v; want %q, %v", tt.lease.Name, tt.lease.Labels, pool, byName, tt.pool, tt.byName)
		}
		if tt.pool != "" && !LeaseInPool(tt.lease, tt.pool) {
			t.Errorf("LeaseInPool(%s, %q) = false", tt.lease.Name, tt.pool)
		}
	}
}

// GroupByPool groups a Lease by its name, labelled or not, but only into a
// pool known otherwise: an unlabelled Lease that looks like a claim of a pool
// with no definition and no labelled object makes no pool appear.
func TestGroupByPoolLeasesByName(t *testing.T) {
	spec := baseSpec(2)
	pod, _ := readyMember("orphan", 1, spec)
	leases := []*coordinationv1.Lease{
		unlabelledLease("desk-1", "bob", testNow, time.Hour),     // desk: defined
		unlabelledLease("desk-2-3", "carol", testNow, time.Hour), // desk-2: defined
		unlabelledLease("orphan-1", "dan", testNow, time.Hour),   // orphan: a labelled Pod
		unlabelledLease("ghost-1", "eve", testNow, time.Hour),    // ghost: nothing
		claimAt("gone", "gone-1", "fay", testNow),                // labelled: a pool of its own
		{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: testNS}},
	}
	snaps := GroupByPool(testNS,
		[]*corev1.ConfigMap{BuildConfigMap(testNS, "desk", spec), BuildConfigMap(testNS, "desk-2", spec)},
		[]*corev1.Pod{pod}, nil, leases)
	got := map[string][]string{}
	for _, s := range snaps {
		names := []string{}
		for _, l := range s.Leases {
			names = append(names, l.Name)
		}
		got[s.Pool] = names
	}
	want := map[string][]string{
		"desk":   {"corral-vdi-ct-desk-1"},
		"desk-2": {"corral-vdi-ct-desk-2-3"},
		"orphan": {"corral-vdi-ct-orphan-1"},
		"gone":   {"corral-vdi-ct-gone-1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GroupByPool leases = %v\nwant %v", got, want)
	}
	v := ObserveAll(snaps, testNow)
	for _, pv := range v {
		if pv.Name == "desk" {
			if m := pv.Member("desk-1"); m == nil || !m.Claimed || m.Claim.Holder != "bob" {
				t.Fatalf("desk-1 = %+v, want claimed by bob", m)
			}
		}
	}
}

// A broker's Lease, named for desk-1 with no label, is desk-1's claim for
// status, claim, release and reconcile, and every write the engine makes on
// it labels it.
func TestUnlabelledClaimLease(t *testing.T) {
	ctx := context.Background()

	t.Run("status shows the claim", func(t *testing.T) {
		_, f := newEngine()
		seedPool(f, "desk", baseSpec(2), 2)
		f.add(unlabelledLease("desk-1", "bob", testNow, time.Hour))
		v := Observe(mustSnap(t, f), testNow)
		if m := v.Member("desk-1"); !m.Claimed || m.Claim.Holder != "bob" || m.Free {
			t.Fatalf("desk-1 = %+v; want claimed by bob", m)
		}
		if v.Status.Claimed != 1 || v.Status.Free != 1 {
			t.Fatalf("counts claimed %d free %d, want 1 and 1", v.Status.Claimed, v.Status.Free)
		}
	})

	t.Run("another identity gets another member", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(2), 2)
		f.add(unlabelledLease("desk-1", "bob", testNow, time.Hour))
		res, err := e.Claim(ctx, "desk", "carol")
		if err != nil || res.Member != "desk-2" {
			t.Fatalf("Claim = %+v, %v; want desk-2", res, err)
		}
		if hasAct(f.actions(), "create", kLease, LeaseName("desk-1")) {
			t.Fatal("the claim tried desk-1, which bob holds")
		}
	})

	t.Run("no free member when the only one is held", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(1), 1)
		f.add(unlabelledLease("desk-1", "bob", testNow, time.Hour))
		_, err := e.Claim(ctx, "desk", "carol")
		var nf *NoFreeMembersError
		if !errors.As(err, &nf) || nf.Claimed != 1 {
			t.Fatalf("Claim = %v; want no free members with 1 claimed", err)
		}
	})

	t.Run("the holder's second claim gets it back", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(2), 2)
		f.add(unlabelledLease("desk-1", "bob", testNow.Add(-2*time.Hour), time.Hour))
		res, err := e.Claim(ctx, "desk", "bob")
		if err != nil || res.Member != "desk-1" || !res.Existing || !res.Renewed {
			t.Fatalf("Claim = %+v, %v; want desk-1 renewed", res, err)
		}
		if l := f.lease(LeaseName("desk-1")); l.Labels[LabelPool] != "desk" || l.Labels[LabelMember] != "desk-1" {
			t.Fatalf("the renewed Lease has labels %v, want the pool's", l.Labels)
		}
	})

	t.Run("release by its holder", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(2), 2)
		f.add(unlabelledLease("desk-1", "bob", testNow, time.Hour))
		var labels map[string]string
		f.hook = func(a act) {
			if a == (act{"delete", kPod, "desk-1"}) {
				labels = f.lease(LeaseName("desk-1")).Labels
			}
		}
		res, err := e.Release(ctx, "desk", "desk-1", "bob")
		if err != nil || res.NoOp || res.PreviousHolder != "bob" || !res.Recreated {
			t.Fatalf("Release = %+v, %v; want desk-1 released from bob and rebuilt", res, err)
		}
		if labels[LabelPool] != "desk" {
			t.Fatalf("the Lease the release took has labels %v, want the pool's", labels)
		}
		if f.lease(LeaseName("desk-1")) != nil {
			t.Fatal("the Lease is still there")
		}
	})

	t.Run("release by another identity is refused", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(2), 2)
		f.add(unlabelledLease("desk-1", "bob", testNow, time.Hour))
		_, err := e.Release(ctx, "desk", "desk-1", "carol")
		errIs(t, err, ErrNotHolder)
	})

	t.Run("reconcile never touches the claimed member", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(2), 2)
		p, c := readyMember("desk", 1, driftedSpec(2))
		f.add(p, c, unlabelledLease("desk-1", "bob", testNow, time.Hour))
		if _, err := e.Reconcile(ctx, "desk"); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if w := withoutMarks(memberWrites(f.writes(), "desk-1"), "desk-1"); len(w) != 0 {
			t.Fatalf("reconcile wrote %v on bob's member", w)
		}
		if !ClaimMarked(f.pod("desk-1")) {
			t.Fatalf("bob's member is not marked claimed: %v %v", f.pod("desk-1").Labels, f.pod("desk-1").Annotations)
		}
	})

	t.Run("reconcile takes over a stale reconciler Lease", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(1), 1)
		f.add(unlabelledLease("desk-1", ReconcilerIdentity, testNow.Add(-11*time.Minute), ReconcilerLeaseTTL))
		var labels map[string]string
		f.hook = func(a act) {
			if a == (act{"delete", kLease, LeaseName("desk-1")}) {
				labels = f.lease(LeaseName("desk-1")).Labels
			}
		}
		if _, err := e.Reconcile(ctx, "desk"); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		assertActs(t, memberWrites(f.writes(), "desk-1"), wantActs(
			"update Lease corral-vdi-ct-desk-1",
			"delete Lease corral-vdi-ct-desk-1",
		))
		if labels[LabelPool] != "desk" {
			t.Fatalf("the Lease taken over has labels %v, want the pool's", labels)
		}
		if v := Observe(mustSnap(t, f), testNow); !v.Member("desk-1").Free {
			m := v.Member("desk-1")
			t.Fatalf("desk-1 is not free after the reconcile: %+v", m)
		}
	})
}
