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

// releaseFixture is pool desk of size 2, both members Ready, desk-1 claimed by alice.
func releaseFixture(t *testing.T) (*Engine, *fakeCluster) {
	t.Helper()
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(2), 2)
	f.add(claimAt("desk", "desk-1", "alice", testNow.Add(-10*time.Minute)))
	return e, f
}

var releaseWrites = []string{
	"update Lease corral-vdi-ct-desk-1",
	"patch PersistentVolumeClaim desk-1-data",
	"delete PersistentVolumeClaim desk-1-data",
	"delete Pod desk-1",
	"delete Service desk-1-console",
	"wait Pod desk-1",
	"wait PersistentVolumeClaim desk-1-data",
	"wait Service desk-1-console",
	"create PersistentVolumeClaim desk-1-data",
	"create Pod desk-1",
	"delete Lease corral-vdi-ct-desk-1",
}

func TestReleaseByHolder(t *testing.T) {
	e, f := releaseFixture(t)
	oldPod, oldPVC := f.pod("desk-1"), f.pvc("desk-1-data")
	var holderDuringDelete string
	f.hook = func(a act) {
		if a == (act{"delete", kPod, "desk-1"}) {
			holderDuringDelete = *f.lease(LeaseName("desk-1")).Spec.HolderIdentity
		}
	}

	res, err := e.Release(context.Background(), "desk", "desk-1", "alice")
	if err != nil {
		t.Fatalf("Release: %v", err)
	}
	if res != (ReleaseResult{Member: "desk-1", PreviousHolder: "alice", Recreated: true}) {
		t.Fatalf("result %+v", res)
	}
	assertActs(t, f.actions(), wantActs(releaseWrites...))
	if holderDuringDelete != ReconcilerIdentity {
		t.Fatalf("the Lease was held by %q while the member was destroyed", holderDuringDelete)
	}
	if f.lease(LeaseName("desk-1")) != nil {
		t.Fatal("the Lease is still there")
	}
	newPod, newPVC := f.pod("desk-1"), f.pvc("desk-1-data")
	if newPod == nil || newPVC == nil || newPod.UID == oldPod.UID || newPVC.UID == oldPVC.UID {
		t.Fatal("the member was not rebuilt from new objects")
	}
	if newPVC.Annotations[AnnotationAssignedTo] != "" {
		t.Fatal("the new PVC still shows the old holder")
	}
	if len(memberWrites(f.writes(), "desk-2")) != 0 {
		t.Fatal("another member was touched")
	}
}

// The new member is created only after the old Pod, PVC and console Service
// are gone.
func TestReleaseWaitsForTerminatingObjects(t *testing.T) {
	e, f := releaseFixture(t)
	f.add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "desk-1-console", Namespace: testNS}})
	f.terminating = true
	f.waits = make(chan act)
	done := make(chan error, 1)
	go func() {
		_, err := e.Release(context.Background(), "desk", "desk-1", "alice")
		done <- err
	}()
	for _, w := range []struct {
		kind Kind
		name string
	}{{KindPod, "desk-1"}, {KindPVC, "desk-1-data"}, {KindService, "desk-1-console"}} {
		var got act
		select {
		case got = <-f.waits:
		case err := <-done:
			t.Fatalf("Release returned (%v) without waiting for %s %s", err, w.kind, w.name)
		}
		if got != (act{"wait", string(w.kind), w.name}) {
			t.Fatalf("waiting on %v, want %s %s", got, w.kind, w.name)
		}
		if hasAct(f.writes(), "create", kPVC, "desk-1-data") || hasAct(f.writes(), "create", kPod, "desk-1") {
			t.Fatal("created the new member before the old one was gone")
		}
		f.finish(w.kind, w.name)
	}
	if err := <-done; err != nil {
		t.Fatalf("Release: %v", err)
	}
	assertActs(t, f.actions(), wantActs(releaseWrites...))
}

func TestReleaseStuckTerminating(t *testing.T) {
	e, f := releaseFixture(t)
	e.WaitTimeout = 10 * time.Millisecond
	f.terminating = true
	_, err := e.Release(context.Background(), "desk", "desk-1", "alice")
	if err == nil || err.Error() != `release desk-1: Pod desk-1 still exists after 10ms (stuck Terminating? check its finalizers); the release is not undone: desk-1 stays under maintenance and a reconcile finishes it once the reconciler Lease is stale (2025-06-01T12:10:00Z)` {
		t.Fatalf("Release = %v", err)
	}
	if hasAct(f.writes(), "create", kPod, "desk-1") {
		t.Fatal("recreated a member that is still terminating")
	}
	// The user's "I am done" is never undone: the member stays in maintenance.
	assertHeldBy(t, f, "desk-1", ReconcilerIdentity)
}

func TestReleaseWhoMay(t *testing.T) {
	tests := []struct {
		name      string
		identity  string
		force     bool
		wantIs    error
		wantErr   string
		wantWrite bool
	}{
		{name: "holder", identity: "alice", wantWrite: true},
		{name: "another identity", identity: "bob", wantIs: ErrNotHolder, wantErr: `desk-1 is claimed by "alice", not "bob" (an administrator can use --force)`},
		{name: "force", force: true, wantWrite: true},
		{name: "empty identity without force", identity: "", wantErr: "invalid identity: must not be empty"},
		{name: "reserved identity", identity: ReconcilerIdentity, wantIs: ErrReservedIdentity},
		{name: "control character", identity: "alice\n", wantErr: "U+000A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := releaseFixture(t)
			var audit []AuditEntry
			e.Audit = func(_ context.Context, a AuditEntry) { audit = append(audit, a) }
			release := func() (ReleaseResult, error) {
				if tt.force {
					return e.ForceRelease(context.Background(), "desk", "desk-1")
				}
				return e.Release(context.Background(), "desk", "desk-1", tt.identity)
			}
			res, err := release()
			if !tt.wantWrite {
				if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Release = %v, want %v %q", err, tt.wantIs, tt.wantErr)
				}
				if len(f.writes()) != 0 {
					t.Fatalf("writes %v", f.writes())
				}
				return
			}
			if err != nil || res.PreviousHolder != "alice" || !res.Recreated {
				t.Fatalf("Release = %+v, %v", res, err)
			}
			assertActs(t, f.actions(), wantActs(releaseWrites...))
			wantAction := ActionRelease
			if tt.force {
				wantAction = ActionForceRelease
			}
			if len(audit) != 1 || audit[0].Action != wantAction || audit[0].PreviousHolder != "alice" || audit[0].Identity != tt.identity {
				t.Fatalf("audit %+v", audit)
			}
		})
	}
}

func TestReleaseNoOps(t *testing.T) {
	tests := []struct {
		name, member string
		wantIs       error
	}{
		{name: "unclaimed member", member: "desk-2"},
		{name: "member above size without objects", member: "desk-7"},
		{name: "not a member name", member: "other-1", wantIs: ErrMemberNotFound},
		{name: "index zero", member: "desk-0", wantIs: ErrMemberNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := releaseFixture(t)
			audited := false
			e.Audit = func(context.Context, AuditEntry) { audited = true }
			res, err := e.Release(context.Background(), "desk", tt.member, "alice")
			if tt.wantIs != nil {
				errIs(t, err, tt.wantIs)
			} else if err != nil || !res.NoOp || res.Member != tt.member {
				t.Fatalf("Release = %+v, %v; want a no-op", res, err)
			} else if audited {
				t.Fatal("a no-op release was audited")
			}
			if len(f.writes()) != 0 {
				t.Fatalf("writes %v", f.writes())
			}
		})
	}
}

func TestReleaseAboveSizeIsNotRecreated(t *testing.T) {
	e, f := releaseFixture(t)
	seedMember(f, 3, baseSpec(2), StateReady)
	f.add(claimAt("desk", "desk-3", "carol", testNow))
	res, err := e.Release(context.Background(), "desk", "desk-3", "carol")
	if err != nil || res.Recreated || res.PreviousHolder != "carol" {
		t.Fatalf("Release = %+v, %v", res, err)
	}
	assertActs(t, f.actions(), wantActs(
		"update Lease corral-vdi-ct-desk-3",
		"patch PersistentVolumeClaim desk-3-data",
		"delete PersistentVolumeClaim desk-3-data",
		"delete Pod desk-3",
		"delete Service desk-3-console",
		"wait Pod desk-3",
		"wait PersistentVolumeClaim desk-3-data",
		"wait Service desk-3-console",
		"delete Lease corral-vdi-ct-desk-3",
	))
	if pods, pvcs, leases := f.count(); pods != 2 || pvcs != 2 || leases != 1 {
		t.Fatalf("%d pods %d pvcs %d leases", pods, pvcs, leases)
	}
}

func TestReleaseRecreateFails(t *testing.T) {
	e, f := releaseFixture(t)
	f.fail("create", kPod, "desk-1", errBoom, 1)
	res, err := e.Release(context.Background(), "desk", "desk-1", "alice")
	want := "release desk-1: the old desktop is gone but a new one could not be created (the next reconcile creates it): create Pod: boom"
	if err == nil || err.Error() != want || !errors.Is(err, errBoom) || res.Recreated {
		t.Fatalf("Release = %+v, %v; want %q", res, err, want)
	}
	if f.lease(LeaseName("desk-1")) != nil {
		t.Fatal("the Lease was not removed after the failed recreate")
	}
	if f.pod("desk-1") != nil {
		t.Fatal("a Pod exists although its create failed")
	}

	f.reset()
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if !hasAct(f.writes(), "create", kPod, "desk-1") || f.pod("desk-1") == nil {
		t.Fatalf("the next reconcile did not create the member: %v", f.writes())
	}
}

func TestReleaseLosesTheCAS(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fakeCluster)
	}{
		{"conflict injected", func(f *fakeCluster) {
			f.fail("update", kLease, LeaseName("desk-1"), fmt.Errorf("leases: %w", ErrConflict), 0)
		}},
		{"renewed meanwhile", func(f *fakeCluster) {
			f.hook = func(a act) {
				if a == (act{"update", kLease, LeaseName("desk-1")}) {
					f.hook = nil
					l := f.lease(LeaseName("desk-1"))
					if _, err := f.UpdateLease(context.Background(), renewLease(l, testNow)); err != nil {
						panic(err)
					}
				}
			}
		}},
		{"released meanwhile", func(f *fakeCluster) {
			f.hook = func(a act) {
				if a == (act{"update", kLease, LeaseName("desk-1")}) {
					f.hook = nil
					f.mu.Lock()
					delete(f.leases, LeaseName("desk-1"))
					f.mu.Unlock()
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := releaseFixture(t)
			tt.setup(f)
			_, err := e.Release(context.Background(), "desk", "desk-1", "alice")
			if err == nil || !strings.HasPrefix(err.Error(), "release desk-1: the claim changed meanwhile (released or renewed by someone else); nothing was done: ") {
				t.Fatalf("Release = %v", err)
			}
			if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
				t.Fatalf("error %v matches neither ErrConflict nor ErrNotFound", err)
			}
			for _, w := range f.writes() {
				if w.Verb == "delete" {
					t.Fatalf("deleted after losing the CAS: %v", f.writes())
				}
			}
			if f.pod("desk-1") == nil || f.pvc("desk-1-data") == nil {
				t.Fatal("the member is gone")
			}
		})
	}
}

func TestReleaseRefusals(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(f *fakeCluster)
		pool   string
		wantIs error
	}{
		{"under maintenance", func(f *fakeCluster) {
			f.mu.Lock()
			delete(f.leases, LeaseName("desk-1"))
			f.mu.Unlock()
			f.add(ReconcilerLease(testNS, "desk", "desk-1", testNow))
		}, "desk", ErrMaintenance},
		{"persistent pool", func(f *fakeCluster) {
			f.mu.Lock()
			f.cms[ConfigMapName("desk")].Data[KeySpec] = "image: img\nsize: 2\nmode: persistent\n"
			f.mu.Unlock()
		}, "desk", ErrPersistentMode},
		{"pool not found", func(*fakeCluster) {}, "nope", ErrPoolNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := releaseFixture(t)
			tt.setup(f)
			_, err := e.ForceRelease(context.Background(), tt.pool, "desk-1")
			errIs(t, err, tt.wantIs)
			if len(f.writes()) != 0 {
				t.Fatalf("writes %v", f.writes())
			}
		})
	}
}

// A release that fails while destroying is never undone: the Lease stays
// with the reconciler (maintenance), nobody is handed the old data, and a
// reconcile finishes the job once the Lease is stale (and not before).
func TestReleaseDestroyFails(t *testing.T) {
	tests := []struct {
		name   string
		inject func(f *fakeCluster)
		want   string
	}{
		{"PVC delete fails", func(f *fakeCluster) { f.fail("delete", kPVC, "desk-1-data", errBoom, 0) }, "release desk-1: delete PVC: boom"},
		{"Pod delete fails", func(f *fakeCluster) { f.fail("delete", kPod, "desk-1", errBoom, 0) }, "release desk-1: delete Pod: boom"},
		{"console Service delete fails", func(f *fakeCluster) { f.fail("delete", kSvc, "desk-1-console", errBoom, 0) }, "release desk-1: delete console Service: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := releaseFixture(t)
			tt.inject(f)
			res, err := e.Release(context.Background(), "desk", "desk-1", "alice")
			if err == nil || !strings.HasPrefix(err.Error(), tt.want+"; the release is not undone: desk-1 stays under maintenance") || res.Recreated {
				t.Fatalf("Release = %+v, %v", res, err)
			}
			if hasAct(f.writes(), "create", kPod, "desk-1") || hasAct(f.writes(), "create", kPVC, "desk-1-data") {
				t.Fatal("recreated a member whose old objects could not be deleted")
			}
			assertHeldBy(t, f, "desk-1", ReconcilerIdentity)
			// The PVC goes first: with a Pod delete failing it is gone
			// already; otherwise it stays, marked released.
			halfReleased := func() bool {
				c := f.pvc("desk-1-data")
				return c == nil || c.Annotations[AnnotationReleased] == "true"
			}
			if !halfReleased() {
				t.Fatal("the half-released PVC is not marked released")
			}
			snap, _ := f.Snapshot(context.Background(), "desk")
			v := Observe(snap, testNow)
			if m := v.Member("desk-1"); !m.InMaintenance() || m.Claimed || m.Free {
				t.Fatalf("half-released member: maintenance=%v claimed=%v free=%v", m.InMaintenance(), m.Claimed, m.Free)
			}
			ctx := context.Background()
			if r, err := e.Claim(ctx, "desk", "bob"); err == nil && r.Member == "desk-1" {
				t.Fatal("a second user was given the half-released member")
			}
			if _, err := e.Release(ctx, "desk", "desk-1", "alice"); !errors.Is(err, ErrMaintenance) {
				t.Fatalf("second release = %v, want ErrMaintenance", err)
			}
			f.clearFailures()

			// Before the Lease is stale a reconcile leaves the member alone.
			e.Now = fixedClock(testNow.Add(ReconcilerLeaseTTL - time.Second))
			if _, err := e.Reconcile(ctx, "desk"); err != nil {
				t.Fatal(err)
			}
			assertHeldBy(t, f, "desk-1", ReconcilerIdentity)
			if !halfReleased() {
				t.Fatal("the member was rebuilt before its maintenance Lease was stale")
			}
			// Once stale, the next reconcile finishes the release: a fresh
			// member, no Lease.
			e.Now = fixedClock(testNow.Add(ReconcilerLeaseTTL + time.Second))
			if _, err := e.Reconcile(ctx, "desk"); err != nil {
				t.Fatal(err)
			}
			if f.lease(LeaseName("desk-1")) != nil {
				t.Fatalf("Lease left: %+v", f.lease(LeaseName("desk-1")))
			}
			if c := f.pvc("desk-1-data"); c == nil || c.Annotations[AnnotationReleased] != "" || c.Annotations[AnnotationAssignedTo] != "" {
				t.Fatalf("member not rebuilt: PVC %+v", c)
			}
			if f.pod("desk-1") == nil {
				t.Fatal("member rebuilt without a Pod")
			}
		})
	}
}

// A failure before anything is destroyed gives the claim back, but only
// when a fresh read shows the data unmarked: a mark whose answer was lost (the
// API server took it) or that cannot be checked keeps the member under
// maintenance, and the release is finished later, never undone.
func TestReleaseFailsBeforeDestroying(t *testing.T) {
	for _, tc := range []struct {
		name      string
		taken     bool // the API server took the mark; its answer was lost
		readFails bool
		holder    string
		wantErr   string
	}{
		{"the mark refused: given back", false, false, "alice", `release desk-1: mark PVC released: boom; nothing was destroyed and the claim was given back to "alice"`},
		{"the mark taken, its answer lost: maintenance", true, false, ReconcilerIdentity, "release desk-1: mark PVC released: boom; the release is not undone"},
		{"the mark unknown, the read fails: maintenance", false, true, ReconcilerIdentity, "release desk-1: mark PVC released: boom; the release is not undone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := releaseFixture(t)
			f.fail("patch", kPVC, "desk-1-data", errBoom, 0)
			if tc.readFails {
				f.fail("get", kPVC, "desk-1-data", errBoom, 0)
			}
			if tc.taken {
				f.hook = func(a act) {
					if a == (act{"patch", kPVC, "desk-1-data"}) {
						f.hook = nil
						f.mu.Lock()
						c := f.pvcs["desk-1-data"]
						if c.Annotations == nil {
							c.Annotations = map[string]string{}
						}
						c.Annotations[AnnotationReleased] = "true"
						f.mu.Unlock()
					}
				}
			}
			_, err := e.Release(context.Background(), "desk", "desk-1", "alice")
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Fatalf("Release = %v, want %q", err, tc.wantErr)
			}
			assertHeldBy(t, f, "desk-1", tc.holder)
			if hasAct(f.writes(), "delete", kPod, "desk-1") {
				t.Fatal("deleted the Pod after the release failed")
			}
		})
	}
}

// Releasing a member under maintenance says when its Lease is stale.
func TestReleaseUnderMaintenanceSaysWhen(t *testing.T) {
	for _, tt := range []struct {
		name string
		age  time.Duration
		want string
	}{
		{"fresh", 2 * time.Minute, "member is under maintenance by the reconciler: desk-1 (its Lease is stale at 2025-06-01T12:08:00Z, in 8m0s; a reconcile then finishes the work, or try again when the reconciler is done)"},
		{"stale", 11 * time.Minute, "member is under maintenance by the reconciler: desk-1 (its Lease is stale since 2025-06-01T11:59:00Z: the next reconcile takes it over and finishes the work)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, f := releaseFixture(t)
			f.mu.Lock()
			delete(f.leases, LeaseName("desk-1"))
			f.mu.Unlock()
			f.add(ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-tt.age)))
			_, err := e.Release(context.Background(), "desk", "desk-1", "alice")
			if !errors.Is(err, ErrMaintenance) || err.Error() != tt.want {
				t.Fatalf("Release = %v\nwant %s", err, tt.want)
			}
		})
	}
}

func assertHeldBy(t *testing.T, f *fakeCluster, member, holder string) {
	t.Helper()
	l := f.lease(LeaseName(member))
	if l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != holder {
		t.Fatalf("Lease of %s = %+v, want it held by %q", member, l, holder)
	}
}

// A claimed member is started without a Lease: a start that checked the claim
// before the release took it may create a Pod after the release read the
// pool. The release destroys the Pod the member has when the Lease is taken,
// not only the one it read, so no Pod stays on the released data.
func TestReleaseDestroysAPodStartedBeforeTheTake(t *testing.T) {
	spec := baseSpec(1)
	for _, tc := range []struct {
		name  string
		start bool // a claimed start lands between the read and the take
	}{
		{"no start meanwhile", false},
		{"a claimed start lands before the take", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			f.add(BuildConfigMap(testNS, "desk", spec))
			seedMember(f, 1, spec, StateStopped)
			f.add(claimAt("desk", "desk-1", "alice", testNow))
			var started *corev1.Pod
			f.hook = func(a act) {
				if tc.start && a == (act{"update", kLease, LeaseName("desk-1")}) {
					f.hook = nil
					p, _ := readyMember("desk", 1, spec)
					f.add(p)
					started = f.pod("desk-1")
				}
			}
			if _, err := e.Release(context.Background(), "desk", "desk-1", "alice"); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if started != nil {
				if !hasAct(f.writes(), "delete", kPod, "desk-1") {
					t.Fatal("the Pod started before the take was not deleted")
				}
				if p := f.pod("desk-1"); p != nil && p.UID == started.UID {
					t.Fatal("the Pod started before the take survived the release")
				}
			}
			if p, c := f.pod("desk-1"), f.pvc("desk-1-data"); p == nil || c == nil || c.Annotations[AnnotationReleased] != "" {
				t.Fatalf("the member was not rebuilt (Pod %v, PVC %v)", p != nil, c != nil)
			}
			if f.lease(LeaseName("desk-1")) != nil {
				t.Fatal("the Lease is still there")
			}
		})
	}
}

// A release whose take of the Lease landed but whose answer was lost (or that
// died before it marked the data) leaves a reconciler Lease and unmarked
// data. The Lease it wrote says "releasing", so the member still counts as
// released: nobody is given it, and a reconcile rebuilds it once the Lease is
// stale. A reconciler Lease without that word (a reconcile step that stopped)
// is only removed.
func TestReleaseWhoseAnswerWasLost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		releasing bool
	}{
		{"a release's Lease: the data is rebuilt", true},
		{"a reconcile's Lease: only removed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := releaseFixture(t)
			if tc.releasing {
				// The API server took the release's write; the answer was lost.
				f.hook = func(a act) {
					if a == (act{"update", kLease, LeaseName("desk-1")}) {
						f.hook = nil
						f.fail("update", kLease, LeaseName("desk-1"), errBoom, 1)
						l := setLeaseHolder(f.lease(LeaseName("desk-1")), ReconcilerIdentity, ReconcilerLeaseTTL, testNow)
						l.Annotations = map[string]string{AnnotationReleasing: "alice"}
						f.add(l)
					}
				}
				if _, err := e.Release(context.Background(), "desk", "desk-1", "alice"); err == nil || !strings.Contains(err.Error(), "a reconcile rebuilds it once the Lease is stale") {
					t.Fatalf("Release = %v, want the lost answer explained", err)
				}
			} else {
				f.mu.Lock()
				delete(f.leases, LeaseName("desk-1"))
				f.mu.Unlock()
				f.add(ReconcilerLease(testNS, "desk", "desk-1", testNow))
			}
			before := f.pvc("desk-1-data").UID
			snap, _ := f.Snapshot(context.Background(), "desk")
			v := Observe(snap, testNow)
			m := v.Member("desk-1")
			if !m.InMaintenance() || m.Free || m.Drift != tc.releasing {
				t.Fatalf("maintenance=%v free=%v drift=%v, want maintenance, not free, drift=%v", m.InMaintenance(), m.Free, m.Drift, tc.releasing)
			}
			ctx := context.Background()
			if r, err := e.Claim(ctx, "desk", "bob"); err == nil && r.Member == "desk-1" {
				t.Fatal("bob was given the member under maintenance")
			}
			e.Now = fixedClock(testNow.Add(ReconcilerLeaseTTL + time.Second))
			if _, err := e.Reconcile(ctx, "desk"); err != nil {
				t.Fatal(err)
			}
			if f.lease(LeaseName("desk-1")) != nil {
				t.Fatal("the stale Lease is still there")
			}
			c := f.pvc("desk-1-data")
			if c == nil {
				t.Fatal("the member has no PVC after the reconcile")
			}
			if rebuilt := c.UID != before; rebuilt != tc.releasing {
				t.Fatalf("data rebuilt = %v, want %v", rebuilt, tc.releasing)
			}
		})
	}
}
