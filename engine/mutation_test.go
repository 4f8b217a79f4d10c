package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Tests that pin what the rest of the suite took as given: the contract's
// literal numbers and names, read from what the engine wrote rather than
// from the engine's own constants or builders.

// deadlineCluster records, for each WaitGone, how long the engine gave it.
type deadlineCluster struct {
	*fakeCluster
	mu    sync.Mutex
	given []time.Duration
}

func (d *deadlineCluster) WaitGone(ctx context.Context, kind Kind, name string, uid types.UID) error {
	dl, ok := ctx.Deadline()
	d.mu.Lock()
	if ok {
		d.given = append(d.given, time.Until(dl))
	} else {
		d.given = append(d.given, -1)
	}
	d.mu.Unlock()
	return d.fakeCluster.WaitGone(ctx, kind, name, uid)
}

// An engine whose WaitTimeout is unset waits up to 2 minutes for each delete,
// as the contract says ("Corral waits up to 2 minutes for each delete").
func TestDefaultWaitPerDeleteIsTwoMinutes(t *testing.T) {
	e, f := releaseFixture(t)
	e.WaitTimeout = 0
	d := &deadlineCluster{fakeCluster: f}
	e.Cluster = d
	if _, err := e.Release(context.Background(), "desk", "desk-1", "alice"); err != nil {
		t.Fatal(err)
	}
	if len(d.given) != 3 {
		t.Fatalf("%d waits, want 3 (the Pod, the PVC and the console Service)", len(d.given))
	}
	const contract = 2 * time.Minute
	for i, g := range d.given {
		// The deadline is read a moment after it was set.
		if g > contract || g < contract-10*time.Second {
			t.Errorf("wait %d was given %v, want the contract's %v", i+1, g, contract)
		}
	}
}

// lostLeaseAnswer applies a Lease update, then answers as if the connection
// had dropped: the API server took the write, the engine does not know it.
type lostLeaseAnswer struct {
	*fakeCluster
}

var errConnectionLost = errors.New("connection reset by peer")

func (c lostLeaseAnswer) UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	_, _ = c.fakeCluster.UpdateLease(ctx, l)
	return nil, errConnectionLost
}

// The Lease a release takes carries the releasing mark, written in the same
// compare-and-swap: when its answer is lost, the Lease the API server holds
// is the release's own, and it alone makes the member count as released, so
// the data is rebuilt, never handed to someone else.
func TestReleaseWritesTheReleasingMark(t *testing.T) {
	e, f := releaseFixture(t)
	e.Cluster = lostLeaseAnswer{f}
	if _, err := e.Release(context.Background(), "desk", "desk-1", "alice"); !errors.Is(err, errConnectionLost) {
		t.Fatalf("Release = %v, want the lost answer", err)
	}
	l := f.lease("corral-vdi-ct-desk-1")
	if l == nil {
		t.Fatal("no Lease after the release's take")
	}
	if got := l.Annotations["ctpool.dev/releasing"]; got != "alice" {
		t.Fatalf("the release wrote releasing mark %q, want \"alice\" (annotations %v)", got, l.Annotations)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "corral-vdi/reconciler" {
		t.Fatalf("the release's Lease is held by %s, want the reconciler", deref(l.Spec.HolderIdentity))
	}
	e.Cluster = f
	before := f.pvc("desk-1-data").UID
	snap, _ := f.Snapshot(context.Background(), "desk")
	v := Observe(snap, testNow)
	if m := v.Member("desk-1"); !m.Drift || m.Free {
		t.Fatalf("after a release whose answer was lost: drift=%v free=%v, want drift and not free", m.Drift, m.Free)
	}
	e.Now = fixedClock(testNow.Add(11 * time.Minute))
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	if c := f.pvc("desk-1-data"); c == nil || c.UID == before {
		t.Fatal("the data of the released member was not rebuilt once the Lease was stale")
	}
}

// A data PVC marked released is drift, whatever its source label says: the
// member is never free, a claim passes it by, and a reconcile rebuilds it.
func TestPVCMarkedReleasedIsDrift(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(2), 2)
	mark := "true"
	if err := f.AnnotatePVC(context.Background(), "desk-1-data", "ctpool.dev/released", &mark); err != nil {
		t.Fatal(err)
	}
	snap, _ := f.Snapshot(context.Background(), "desk")
	v := Observe(snap, testNow)
	m := v.Member("desk-1")
	if !m.Drift || m.Free {
		t.Fatalf("a member whose PVC is marked released: drift=%v free=%v, want drift and not free", m.Drift, m.Free)
	}
	if v.Status.Drifted != 1 {
		t.Fatalf("status counts %d drifted, want 1", v.Status.Drifted)
	}
	res, err := e.Claim(context.Background(), "desk", "bob")
	if err != nil || res.Member != "desk-2" {
		t.Fatalf("Claim = %+v, %v; want desk-2, never the released data", res, err)
	}
	before := f.pvc("desk-1-data").UID
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	c := f.pvc("desk-1-data")
	if c == nil || c.UID == before || c.Annotations["ctpool.dev/released"] != "" {
		t.Fatal("reconcile did not rebuild the member whose data is marked released")
	}
}

// leaseRecorder keeps a copy of every Lease the engine sends.
type leaseRecorder struct {
	*fakeCluster
	mu      sync.Mutex
	created []*coordinationv1.Lease
	updated []*coordinationv1.Lease
}

func (r *leaseRecorder) CreateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	r.mu.Lock()
	r.created = append(r.created, l.DeepCopy())
	r.mu.Unlock()
	return r.fakeCluster.CreateLease(ctx, l)
}

func (r *leaseRecorder) UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	r.mu.Lock()
	r.updated = append(r.updated, l.DeepCopy())
	r.mu.Unlock()
	return r.fakeCluster.UpdateLease(ctx, l)
}

// wantLease checks a Lease the engine sent against the contract, in its own
// words: the name corral-vdi-ct-<member>, the namespace, the pool label, the
// holder, leaseDurationSeconds, and the acquire and renew times.
func wantLease(t *testing.T, what string, l *coordinationv1.Lease, name, holder string, secs int32, acquired, renewed time.Time) {
	t.Helper()
	switch {
	case l.Name != name:
		t.Errorf("%s: name %q, want %q", what, l.Name, name)
	case l.Namespace != "vdi":
		t.Errorf("%s: namespace %q, want vdi", what, l.Namespace)
	case l.Labels["corral.dev/vdi-ct-pool"] != "desk":
		t.Errorf("%s: labels %v, want corral.dev/vdi-ct-pool=desk", what, l.Labels)
	case l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != holder:
		t.Errorf("%s: holder %s, want %q", what, deref(l.Spec.HolderIdentity), holder)
	case l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != secs:
		t.Errorf("%s: leaseDurationSeconds %s, want %d", what, deref(l.Spec.LeaseDurationSeconds), secs)
	case l.Spec.AcquireTime == nil || !l.Spec.AcquireTime.Time.Equal(acquired):
		t.Errorf("%s: acquireTime %v, want %v", what, l.Spec.AcquireTime, acquired)
	case l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.Equal(renewed):
		t.Errorf("%s: renewTime %v, want %v", what, l.Spec.RenewTime, renewed)
	}
}

func deref[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// The Leases the engine writes are the contract's: a claim Lease of 3600 s
// held by the caller, the reconciler's of 600 s held by corral-vdi/reconciler,
// each named corral-vdi-ct-<member>, labelled with its pool and stamped with
// the clock as it was written; a renewal moves the renew time only, and a
// release hands the claim to the reconciler for 600 s.
func TestLeasesTheEngineWrites(t *testing.T) {
	e, f := newEngine()
	r := &leaseRecorder{fakeCluster: f}
	e.Cluster = r
	// desk-2 is missing; desk-3 too, under a reconciler Lease gone stale.
	seedPool(f, "desk", baseSpec(3), 1)
	f.add(ReconcilerLease(testNS, "desk", "desk-3", testNow.Add(-11*time.Minute)))
	ctx := context.Background()

	// The reconciler's Leases, taken to create desk-2 and desk-3.
	at := testNow.Add(3 * time.Second)
	e.Now = fixedClock(at)
	if _, err := e.Reconcile(ctx, "desk"); err != nil {
		t.Fatal(err)
	}
	if len(r.created) != 1 || len(r.updated) != 1 {
		t.Fatalf("reconcile created %d Leases and updated %d, want 1 and 1", len(r.created), len(r.updated))
	}
	wantLease(t, "reconciler Lease", r.created[0], "corral-vdi-ct-desk-2", "corral-vdi/reconciler", 600, at, at)
	wantLease(t, "stale reconciler Lease taken over", r.updated[0], "corral-vdi-ct-desk-3", "corral-vdi/reconciler", 600, at, at)

	// A claim Lease.
	r.created, r.updated = nil, nil
	claimed := testNow.Add(time.Minute)
	e.Now = fixedClock(claimed)
	res, err := e.Claim(ctx, "desk", "bob@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.created) != 1 {
		t.Fatalf("claim created %d Leases, want 1", len(r.created))
	}
	name := "corral-vdi-ct-" + res.Member
	wantLease(t, "claim Lease", r.created[0], name, "bob@example.com", 3600, claimed, claimed)
	// What the API server holds is what was sent.
	wantLease(t, "claim Lease stored", f.lease(name), name, "bob@example.com", 3600, claimed, claimed)

	// Its renewal once expired: the renew time moves, the acquire time stays.
	renewed := claimed.Add(time.Hour + time.Minute)
	e.Now = fixedClock(renewed)
	if res, err := e.Claim(ctx, "desk", "bob@example.com"); err != nil || !res.Renewed {
		t.Fatalf("Claim = %+v, %v; want a renewal", res, err)
	}
	if len(r.updated) != 1 {
		t.Fatalf("renewal sent %d Lease updates, want 1", len(r.updated))
	}
	wantLease(t, "renewed claim Lease", r.updated[0], name, "bob@example.com", 3600, claimed, renewed)

	// The release's take: the reconciler's for 600 s, marked releasing.
	r.updated = nil
	released := renewed.Add(time.Minute)
	e.Now = fixedClock(released)
	if _, err := e.Release(ctx, "desk", res.Member, "bob@example.com"); err != nil {
		t.Fatal(err)
	}
	if len(r.updated) != 1 {
		t.Fatalf("release sent %d Lease updates, want 1", len(r.updated))
	}
	take := r.updated[0]
	wantLease(t, "release's Lease", take, name, "corral-vdi/reconciler", 600, released, released)
	if take.Annotations["ctpool.dev/releasing"] != "bob@example.com" {
		t.Errorf("release's Lease annotations %v, want ctpool.dev/releasing=bob@example.com", take.Annotations)
	}
	if take.Spec.LeaseTransitions == nil || *take.Spec.LeaseTransitions != 1 {
		t.Errorf("release's Lease transitions %s, want 1", deref(take.Spec.LeaseTransitions))
	}
	if f.lease(name) != nil {
		t.Error("the release left its Lease behind")
	}
}
