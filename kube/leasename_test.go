package kube

import (
	"context"
	"sort"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// brokerLease is a claim Lease as a broker writes it by the contract: named
// for the member, with no label.
func brokerLease(namespace, member, holder string) *coordinationv1.Lease {
	secs := int32(3600)
	at := metav1.NewMicroTime(t0)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: engine.LeaseName(member), Namespace: namespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &at, RenewTime: &at},
	}
}

// unrelatedLeases are Leases of other components (leader election, a
// heartbeat): no claim's.
func unrelatedLeases(namespace string, n int) []runtime.Object {
	out := make([]runtime.Object, n)
	for i := range out {
		out[i] = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-" + string(rune('a'+i%26)) + "-" + time.Duration(i).String(), Namespace: namespace}}
	}
	return out
}

func leaseNames(ls []*coordinationv1.Lease) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Namespace+"/"+l.Name)
	}
	sort.Strings(out)
	return out
}

func claimOf(t *testing.T, snap engine.Snapshot, member string) string {
	t.Helper()
	v := engine.Observe(snap, t0)
	m := v.Member(member)
	if m == nil || !m.Claimed {
		return ""
	}
	return m.Claim.Holder
}

// Every fresh read sees an unlabelled claim Lease by its name: the
// engine's Snapshot and ListLeases, --once (ListPools) and the fleet view
// (ListFleet), and none keeps an unrelated Lease.
func TestFreshReadsSeeAClaimLeaseByName(t *testing.T) {
	objs := append(poolObjects("desk", 2), brokerLease(ns, "desk-2", "bob@example.com"))
	objs = append(objs, unrelatedLeases(ns, 30)...)
	// A Lease that looks like a claim of a pool that does not exist.
	objs = append(objs, brokerLease(ns, "ghost-1", "eve"))
	client := fake.NewClientset(objs...)
	ctx := context.Background()
	c := NewCluster(client, ns)

	snap, err := c.Snapshot(ctx, "desk")
	if err != nil {
		t.Fatal(err)
	}
	if got := leaseNames(snap.Leases); len(got) != 2 || got[1] != ns+"/corral-vdi-ct-desk-2" {
		t.Fatalf("Snapshot leases = %v, want desk-1's and desk-2's", got)
	}
	if h := claimOf(t, snap, "desk-2"); h != "bob@example.com" {
		t.Fatalf("desk-2 claimed by %q, want bob", h)
	}
	leases, err := c.ListLeases(ctx, "desk")
	if err != nil || len(leases) != 2 {
		t.Fatalf("ListLeases = %v, %v; want desk-1's and desk-2's", leaseNames(leases), err)
	}

	for name, list := range map[string]func() ([]engine.Snapshot, error){
		"ListPools":            func() ([]engine.Snapshot, error) { return ListPools(ctx, client, ns) },
		"ListFleet namespaces": func() ([]engine.Snapshot, error) { return ListFleet(ctx, client, []string{ns}) },
		"ListFleet all":        func() ([]engine.Snapshot, error) { return ListFleet(ctx, client, nil) },
	} {
		snaps, err := list()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(snaps) != 1 || snaps[0].Pool != "desk" {
			t.Fatalf("%s: pools %v, want desk alone (no pool ghost)", name, poolNames(snaps))
		}
		if h := claimOf(t, snaps[0], "desk-2"); h != "bob@example.com" {
			t.Fatalf("%s: desk-2 claimed by %q, want bob", name, h)
		}
		if n := len(snaps[0].Leases); n != 2 {
			t.Fatalf("%s: %d leases in desk, want 2", name, n)
		}
	}
}

// The dashboard's cache (a Watcher) and the controller's (PoolInformers)
// see an unlabelled claim Lease by its name, at the first list and when it
// is created later; unrelated Leases never enter the cache, and their
// changes signal nothing.
func TestWatcherSeesAClaimLeaseByName(t *testing.T) {
	objs := append(poolObjects("desk", 3), brokerLease(ns, "desk-2", "bob@example.com"))
	objs = append(objs, unrelatedLeases(ns, 50)...)
	w, client := startWatcher(t, objs...)
	ctx := context.Background()

	keys := w.informers.Leases.GetStore().ListKeys()
	sort.Strings(keys)
	if want := []string{ns + "/corral-vdi-ct-desk-1", ns + "/corral-vdi-ct-desk-2"}; len(keys) != 2 || keys[0] != want[0] || keys[1] != want[1] {
		t.Fatalf("cached Leases = %v, want %v: an unrelated Lease entered the cache", keys, want)
	}
	snaps := w.Snapshots()
	if len(snaps) != 1 || claimOf(t, snaps[0], "desk-2") != "bob@example.com" {
		t.Fatalf("Snapshots: desk-2 not claimed by bob (%v)", poolNames(snaps))
	}
	one, err := w.Snapshot(ctx, "desk")
	if err != nil || claimOf(t, one, "desk-2") != "bob@example.com" {
		t.Fatalf("Snapshot: desk-2 not claimed by bob (%v)", err)
	}

	// An unrelated Lease's renewals reach nothing; a broker's new claim is
	// signalled and named as a change of its member.
	drain(w)
	_, _ = w.TakeChanges()
	before, _ := w.Stats()
	for i := range 20 {
		l := unrelatedLeases(ns, 1)[0].(*coordinationv1.Lease)
		l.Spec.LeaseTransitions = ptrTo(int32(i))
		if _, err := client.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.CoordinationV1().Leases(ns).Create(ctx, brokerLease(ns, "desk-3", "carol"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("no change signal within 10s of a broker's new Lease")
	}
	poll(t, "desk-3's claim in the cache", func() bool {
		s, err := w.Snapshot(ctx, "desk")
		return err == nil && claimOf(t, s, "desk-3") == "carol"
	})
	if e, _ := w.Stats(); e != before+1 {
		t.Errorf("events = %d, want %d: unrelated Leases were handled", e, before+1)
	}
	all, changes := w.TakeChanges()
	if all || len(changes) != 1 || changes[0].Pool != "desk" || len(changes[0].Members) != 1 || changes[0].Members[0] != "desk-3" {
		t.Fatalf("TakeChanges = %v %+v, want desk-3 of desk", all, changes)
	}
	u := w.ReadChanges(changes[0])
	if o := u.Members["desk-3"]; o.Lease == nil || o.Lease.Name != "corral-vdi-ct-desk-3" {
		t.Fatalf("ReadChanges: desk-3's Lease = %v", o.Lease)
	}
	// The pool kept by difference takes the change (no whole rebuild).
	st := engine.NewPoolState(snaps[0], t0)
	if _, ok := st.Update(u, t0); !ok {
		t.Fatal("PoolState.Update refused the unlabelled Lease")
	}
	if m := st.View().Member("desk-3"); m == nil || !m.Claimed || m.Claim.Holder != "carol" {
		t.Fatalf("desk-3 after the update = %+v, want claimed by carol", m)
	}

	// The controller's informers key the Lease to its pool.
	if k, ok := PoolOf(brokerLease(ns, "desk-3", "carol")); !ok || k != (engine.PoolRef{Namespace: ns, Name: "desk"}) {
		t.Fatalf("PoolOf = %v, %v; want vdi/desk", k, ok)
	}
}

// A fleet cache groups an unlabelled claim Lease into its pool, but makes
// no pool of a Lease that merely looks like a claim; a pool defined later
// takes in the Leases named for it.
func TestFleetWatcherSeesAClaimLeaseByName(t *testing.T) {
	objs := append(poolIn("vdi-eng", "desk", 2), brokerLease("vdi-eng", "desk-2", "bob"), brokerLease("vdi-eng", "lab-1", "dan"))
	objs = append(objs, unrelatedLeases("vdi-eng", 10)...)
	for _, namespaces := range [][]string{nil, {"vdi-eng"}} {
		client := fake.NewClientset(objs...)
		w := NewFleetWatcher(client, namespaces, withClock(func() time.Time { return t0 }))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if !w.WaitForSync(ctx) {
			t.Fatal("caches did not sync")
		}
		snaps := w.Snapshots()
		if len(snaps) != 1 || snaps[0].Pool != "desk" || claimOf(t, snaps[0], "desk-2") != "bob" {
			t.Fatalf("namespaces %v: pools %v, want desk with desk-2 claimed by bob", namespaces, poolNames(snaps))
		}
		one, err := w.In("vdi-eng").Snapshot(ctx, "desk")
		if err != nil || claimOf(t, one, "desk-2") != "bob" {
			t.Fatalf("namespaces %v: In().Snapshot: desk-2 not claimed by bob (%v)", namespaces, err)
		}
		lab := poolIn("vdi-eng", "lab", 1)[0]
		if err := client.Tracker().Add(lab); err != nil {
			t.Fatal(err)
		}
		poll(t, "pool lab", func() bool {
			s := w.Snapshots()
			return len(s) == 2 && s[1].Pool == "lab" && claimOf(t, s[1], "lab-1") == "dan"
		})
		cancel()
	}
}

func ptrTo[T any](v T) *T { return &v }

// Every read of Leases goes without the label selector; in every namespace
// it leaves kube-node-lease out with a field selector, in one namespace it
// has none.
func TestLeaseReadsAskForNoLabelAndNoNodeLeases(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	if _, err := ListFleet(ctx, client, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ListPools(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	w := NewFleetWatcher(client, nil, withProbeInterval(0))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := w.Start(wctx); err != nil {
		t.Fatal(err)
	}
	if !w.WaitForSync(wctx) {
		t.Fatal("no sync")
	}
	seen := 0
	for _, a := range client.Actions() {
		if a.GetResource().Resource != "leases" {
			continue
		}
		var r interface {
			GetListRestrictions() k8stesting.ListRestrictions
		}
		switch a := a.(type) {
		case k8stesting.ListAction:
			r = a
		case k8stesting.WatchAction:
			r = watchRestrictions{a}
		default:
			continue
		}
		seen++
		lr := r.GetListRestrictions()
		if !lr.Labels.Empty() {
			t.Errorf("%s leases in %q with label selector %q", a.GetVerb(), a.GetNamespace(), lr.Labels)
		}
		wantField := ""
		if a.GetNamespace() == "" {
			wantField = "metadata.namespace!=" + NodeLeaseNamespace
		}
		if got := lr.Fields.String(); got != wantField {
			t.Errorf("%s leases in %q with field selector %q, want %q", a.GetVerb(), a.GetNamespace(), got, wantField)
		}
	}
	if seen < 3 {
		t.Fatalf("%d Lease lists and watches recorded, want at least 3", seen)
	}
}

type watchRestrictions struct{ k8stesting.WatchAction }

func (w watchRestrictions) GetListRestrictions() k8stesting.ListRestrictions {
	r := w.GetWatchRestrictions()
	return k8stesting.ListRestrictions{Labels: r.Labels, Fields: r.Fields}
}
