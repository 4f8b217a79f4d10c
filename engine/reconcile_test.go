package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var errBoom = errors.New("boom")

// driftedSpec is baseSpec with another image: members built from it have drifted.
func driftedSpec(size int) Spec {
	s := baseSpec(size)
	s.Image = "ghcr.io/example/desktop:0"
	return s
}

func TestReconcileStepsInOrder(t *testing.T) {
	e, f := newEngine()
	spec := baseSpec(4)
	f.add(BuildConfigMap(testNS, "desk", spec))
	// desk-1 Missing, desk-2 Stopped, desk-3 drifted, desk-4 Ready, desk-5 above size.
	f.add(BuildPVC(testNS, "desk", 2, spec))
	p3, c3 := readyMember("desk", 3, driftedSpec(4))
	p3.Status.Conditions = nil // Starting: it serves no claim, so no rollout budget holds it
	p4, c4 := readyMember("desk", 4, spec)
	p5, c5 := readyMember("desk", 5, spec)
	f.add(p3, c3, p4, c4, p5, c5)

	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	assertActs(t, f.actions(), wantActs(
		// 0. the pool's PodDisruptionBudget
		"get PodDisruptionBudget corral-vdi-ctpool-desk",
		"create PodDisruptionBudget corral-vdi-ctpool-desk",
		// 1. create missing
		"create Lease corral-vdi-ct-desk-1",
		"create PersistentVolumeClaim desk-1-data",
		"create Pod desk-1",
		"delete Lease corral-vdi-ct-desk-1",
		// 2. start stopped
		"create Lease corral-vdi-ct-desk-2",
		"create Pod desk-2",
		"delete Lease corral-vdi-ct-desk-2",
		// 3. replace drifted: delete, wait, create
		"create Lease corral-vdi-ct-desk-3",
		"delete PersistentVolumeClaim desk-3-data",
		"delete Pod desk-3",
		"delete Service desk-3-console",
		"wait Pod desk-3",
		"wait PersistentVolumeClaim desk-3-data",
		"create PersistentVolumeClaim desk-3-data",
		"create Pod desk-3",
		"delete Lease corral-vdi-ct-desk-3",
		// 4. delete above size
		"create Lease corral-vdi-ct-desk-5",
		"delete PersistentVolumeClaim desk-5-data",
		"delete Pod desk-5",
		"delete Service desk-5-console",
		"wait Pod desk-5",
		"wait PersistentVolumeClaim desk-5-data",
		"delete Lease corral-vdi-ct-desk-5",
		// 5. status
		"patch ConfigMap corral-vdi-ctpool-desk",
	))

	var steps []string
	for _, a := range res.Actions {
		steps = append(steps, a.Step.String()+" "+a.Member)
	}
	if got := strings.Join(steps, ", "); got != "create desk-1, start desk-2, replace desk-3, delete desk-5" {
		t.Fatalf("actions %s", got)
	}
	if res.Done() != 4 || !res.StatusWritten || len(res.Errors) != 0 {
		t.Fatalf("done %d statusWritten %v errors %v", res.Done(), res.StatusWritten, res.Errors)
	}
	if pods, pvcs, leases := f.count(); pods != 4 || pvcs != 4 || leases != 0 {
		t.Fatalf("%d pods, %d PVCs, %d leases; want 4, 4, 0", pods, pvcs, leases)
	}
	if src := f.pod("desk-3").Labels[LabelSource]; src != spec.SourceHash() {
		t.Fatalf("desk-3 source %s, want the current %s", src, spec.SourceHash())
	}
	if f.pod("desk-3").UID == p3.UID && p3.UID != "" {
		t.Fatal("desk-3 was not replaced")
	}
	st, err := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
	if err != nil || st.Desired != 4 || st.Observed != 4 || st.UpdatedAt == nil || !st.UpdatedAt.Equal(testNow) || len(st.Errors) != 0 {
		t.Fatalf("recorded status %+v (%v)", st, err)
	}
}

// A claimed member is never destroyed: not for drift, failure, scale-down or an expired claim.
func TestReconcileNeverDestroysClaimedMembers(t *testing.T) {
	spec := baseSpec(2)
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	tests := []struct {
		name   string
		member string
		seed   func(f *fakeCluster)
	}{
		{"drifted", "desk-1", func(f *fakeCluster) {
			p, c := readyMember("desk", 1, driftedSpec(2))
			f.add(p, c)
		}},
		{"failed", "desk-1", func(f *fakeCluster) {
			p, c := readyMember("desk", 1, spec)
			failed(p)
			f.add(p, c)
		}},
		{"failed without PVC", "desk-1", func(f *fakeCluster) {
			p, _ := readyMember("desk", 1, spec)
			f.add(p)
		}},
		{"above size", "desk-3", func(f *fakeCluster) {
			p, c := readyMember("desk", 3, spec)
			f.add(p, c)
		}},
		{"expired claim, drifted and failed", "desk-1", func(f *fakeCluster) {
			p, c := readyMember("desk", 1, driftedSpec(2))
			failed(p)
			f.add(p, c)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			f.add(BuildConfigMap(testNS, "desk", spec))
			tt.seed(f)
			claimed := testNow.Add(-time.Minute)
			if strings.HasPrefix(tt.name, "expired") {
				claimed = testNow.Add(-5 * time.Hour)
			}
			f.add(claimAt("desk", tt.member, "alice", claimed))
			other := "desk-2"
			if tt.member == "desk-3" {
				other = "desk-1"
			}
			op, oc := readyMember("desk", 2, spec)
			if other == "desk-1" {
				op, oc = readyMember("desk", 1, spec)
			}
			f.add(op, oc)

			res, err := e.Reconcile(context.Background(), "desk")
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if w := withoutMarks(memberWrites(f.writes(), tt.member), tt.member); len(w) != 0 {
				t.Fatalf("writes on the claimed member: %v", w)
			}
			var skipped string
			for _, a := range res.Actions {
				if a.Member == tt.member && a.Step != StepMark {
					skipped = a.Skipped
				}
			}
			if skipped != `claimed by "alice"` {
				t.Fatalf("action on %s skipped %q, want claimed by \"alice\"", tt.member, skipped)
			}
			if l := f.lease(LeaseName(tt.member)); l == nil || *l.Spec.HolderIdentity != "alice" {
				t.Fatal("the claim Lease changed")
			}
		})
	}
}

func TestReconcileMaintenanceLeases(t *testing.T) {
	spec := baseSpec(1)
	tests := []struct {
		name      string
		leaseAge  time.Duration
		drifted   bool
		wantActs  []act
		wantSkip  string
		wantLease bool
	}{
		{
			name: "fresh lease of another reconciler: skipped", leaseAge: 9 * time.Minute, drifted: true,
			wantSkip: "under maintenance by another reconciler", wantLease: true,
		},
		{
			name: "stale lease on a drifted member: taken over, member replaced", leaseAge: 11 * time.Minute, drifted: true,
			wantActs: wantActs(
				"update Lease corral-vdi-ct-desk-1",
				"delete PersistentVolumeClaim desk-1-data",
				"delete Pod desk-1",
				"delete Service desk-1-console",
				"create PersistentVolumeClaim desk-1-data",
				"create Pod desk-1",
				"delete Lease corral-vdi-ct-desk-1",
			),
		},
		{
			// A reconciler that stopped after its step left its Lease on a
			// healthy member: the next reconcile takes it over and removes it,
			// or the member would stay in maintenance (never free) for ever.
			name: "stale lease on a healthy member: taken over and removed", leaseAge: 11 * time.Minute,
			wantActs: wantActs(
				"update Lease corral-vdi-ct-desk-1",
				"delete Lease corral-vdi-ct-desk-1",
			),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			src := spec
			if tt.drifted {
				src = driftedSpec(1)
			}
			seedPool(f, "desk", spec, 0)
			p, c := readyMember("desk", 1, src)
			f.add(p, c, ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-tt.leaseAge)))

			res, err := e.Reconcile(context.Background(), "desk")
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			assertActs(t, memberWrites(f.writes(), "desk-1"), tt.wantActs)
			if tt.wantSkip != "" && (len(res.Actions) != 1 || res.Actions[0].Skipped != tt.wantSkip) {
				t.Fatalf("actions %+v, want skipped %q", res.Actions, tt.wantSkip)
			}
			if got := f.lease(LeaseName("desk-1")) != nil; got != tt.wantLease {
				t.Fatalf("lease left: %v, want %v", got, tt.wantLease)
			}
			if !tt.wantLease {
				v := Observe(mustSnap(t, f), testNow)
				if m := v.Member("desk-1"); !m.Free {
					t.Fatalf("desk-1 is not free after the reconcile: %+v", m)
				}
			}
		})
	}
}

func mustSnap(t *testing.T, f *fakeCluster) Snapshot {
	t.Helper()
	s, err := f.Snapshot(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A failing step is reported, and the reconciler's Lease is removed anyway.
func TestReconcileStepFailures(t *testing.T) {
	spec := baseSpec(3)
	tests := []struct {
		name, verb, kind, target string
		member                   string
		wantErr                  string
	}{
		{"create PVC", "create", kPVC, "desk-1-data", "desk-1", "create desk-1: create PVC: boom"},
		{"create Pod", "create", kPod, "desk-1", "desk-1", "create desk-1: create Pod: boom"},
		{"start", "create", kPod, "desk-2", "desk-2", "start desk-2: boom"},
		{"replace: delete Pod", "delete", kPod, "desk-3", "desk-3", "replace desk-3: delete Pod: boom"},
		{"replace: delete Service", "delete", kSvc, "desk-3-console", "desk-3", "replace desk-3: delete console Service: boom"},
		{"replace: wait", "wait", kPVC, "desk-3-data", "desk-3", "replace desk-3: wait for PersistentVolumeClaim desk-3-data to go: boom"},
		{"replace: create", "create", kPod, "desk-3", "desk-3", "replace desk-3: create Pod: boom"},
		{"scale down: delete PVC", "delete", kPVC, "desk-4-data", "desk-4", "delete desk-4: delete PVC: boom"},
		{"remove lease", "delete", kLease, "corral-vdi-ct-desk-2", "desk-2", "start desk-2: remove lease: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			f.add(BuildConfigMap(testNS, "desk", spec), BuildPVC(testNS, "desk", 2, spec))
			p3, c3 := readyMember("desk", 3, driftedSpec(3))
			p3.Status.Conditions = nil // Starting: no rollout budget holds it
			p4, c4 := readyMember("desk", 4, spec)
			f.add(p3, c3, p4, c4)
			f.fail(tt.verb, tt.kind, tt.target, errBoom, 0)

			res, err := e.Reconcile(context.Background(), "desk")
			var se *StepError
			if !errors.As(err, &se) || len(se.Errors) != 1 || se.Errors[0] != tt.wantErr {
				t.Fatalf("Reconcile error %v, want a *StepError with %q", err, tt.wantErr)
			}
			if !errors.Is(res.Actions[memberAction(res, tt.member)].Err, errBoom) {
				t.Fatalf("the action on %s does not carry the cause: %+v", tt.member, res.Actions)
			}
			w := memberWrites(f.writes(), tt.member)
			if w[0] != (act{"create", kLease, LeaseName(tt.member)}) || w[len(w)-1] != (act{"delete", kLease, LeaseName(tt.member)}) {
				t.Fatalf("writes on %s do not start by taking the Lease and end by removing it: %v", tt.member, w)
			}
			if tt.kind != kLease && f.lease(LeaseName(tt.member)) != nil {
				t.Fatal("the reconciler's Lease was left behind")
			}
			st, _ := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
			if len(st.Errors) != 1 || st.Errors[0] != tt.wantErr {
				t.Fatalf("status errors %q, want [%q]", st.Errors, tt.wantErr)
			}
			// The other members' steps still ran.
			if n := res.Done(); n != 3 {
				t.Fatalf("%d steps done, want the 3 that did not fail", n)
			}

			// The next reconcile, with the fault gone, finishes the job and clears the errors.
			f.clearFailures()
			if _, err := e.Reconcile(context.Background(), "desk"); err != nil && tt.kind != kLease {
				t.Fatalf("second Reconcile: %v", err)
			}
			if tt.kind == kLease {
				// The Lease left by the failed removal is fresh: the member
				// stays in maintenance until it is stale.
				return
			}
			st, _ = ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
			if len(st.Errors) != 0 || st.Observed != 3 {
				t.Fatalf("after recovery: status %+v", st)
			}
		})
	}
}

func memberAction(res ReconcileResult, member string) int {
	for i, a := range res.Actions {
		if a.Member == member {
			return i
		}
	}
	return -1
}

func TestReconcileTakeLeaseFailures(t *testing.T) {
	tests := []struct {
		name     string
		inject   error
		hook     bool // a user claims desk-1 just before the reconciler's create
		wantSkip string
		wantErr  string
	}{
		{name: "a user claims first", hook: true, wantSkip: "lease taken meanwhile"},
		{name: "forbidden", inject: fmt.Errorf("leases is forbidden: %w", ErrForbidden), wantErr: "create desk-1: take lease: leases is forbidden: forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", baseSpec(1), 0)
			if tt.inject != nil {
				f.fail("create", kLease, LeaseName("desk-1"), tt.inject, 0)
			}
			if tt.hook {
				f.hook = func(a act) {
					if a == (act{"create", kLease, LeaseName("desk-1")}) {
						f.hook = nil
						f.add(claimAt("desk", "desk-1", "alice", testNow))
					}
				}
			}
			res, err := e.Reconcile(context.Background(), "desk")
			if tt.wantErr != "" {
				if err == nil || err.Error() != "reconcile: "+tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				errIs(t, res.Actions[0].Err, ErrForbidden)
			} else if err != nil || res.Actions[0].Skipped != tt.wantSkip {
				t.Fatalf("error %v actions %+v, want skipped %q", err, res.Actions, tt.wantSkip)
			}
			assertActs(t, memberWrites(f.writes(), "desk-1"), wantActs("create Lease corral-vdi-ct-desk-1"))
			if tt.hook && *f.lease(LeaseName("desk-1")).Spec.HolderIdentity != "alice" {
				t.Fatal("the user's claim was touched")
			}
		})
	}
}

// Running reconcile again with no change in the cluster writes nothing.
func TestReconcileIsIdempotent(t *testing.T) {
	spec := baseSpec(3)
	tests := []struct {
		name string
		seed func(f *fakeCluster)
	}{
		{"new pool", func(f *fakeCluster) { f.add(BuildConfigMap(testNS, "desk", spec)) }},
		{"size zero", func(f *fakeCluster) { f.add(BuildConfigMap(testNS, "desk", baseSpec(0))) }},
		{"healthy pool", func(f *fakeCluster) { seedPool(f, "desk", spec, 3) }},
		{"scale down and drift", func(f *fakeCluster) {
			seedPool(f, "desk", spec, 0)
			for n := 1; n <= 5; n++ {
				p, c := readyMember("desk", n, driftedSpec(3))
				f.add(p, c)
			}
		}},
		{"claimed drifted, failed and above-size members", func(f *fakeCluster) {
			seedPool(f, "desk", spec, 0)
			p1, c1 := readyMember("desk", 1, driftedSpec(3))
			p2, c2 := readyMember("desk", 2, spec)
			p2.Status.Phase = corev1.PodFailed
			p4, c4 := readyMember("desk", 4, spec)
			f.add(p1, c1, p2, c2, p4, c4)
			for _, m := range []string{"desk-1", "desk-2", "desk-4"} {
				f.add(claimAt("desk", m, "alice", testNow.Add(-3*time.Hour)))
			}
		}},
		{"claimed Missing and Stopped members", func(f *fakeCluster) {
			seedPool(f, "desk", spec, 0)
			f.add(BuildPVC(testNS, "desk", 2, spec), claimAt("desk", "desk-1", "a", testNow), claimAt("desk", "desk-2", "b", testNow))
		}},
		{"Terminating and Unschedulable members", func(f *fakeCluster) {
			seedPool(f, "desk", spec, 0)
			p1, c1 := readyMember("desk", 1, driftedSpec(3))
			deletingPod(p1)
			p2, c2 := readyMember("desk", 2, spec)
			p2.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "no room"}}}
			p3, c3 := readyMember("desk", 3, spec)
			f.add(p1, c1, p2, c2, p3, c3)
		}},
		{"objects with odd names", func(f *fakeCluster) {
			seedPool(f, "desk", spec, 3)
			p, _ := readyMember("desk", 1, spec)
			p.Name, p.Labels[LabelMember] = "desk-x", "desk-x"
			f.add(p)
		}},
		{"fresh maintenance", func(f *fakeCluster) {
			seedPool(f, "desk", spec, 3)
			f.add(ReconcilerLease(testNS, "desk", "desk-2", testNow.Add(-time.Minute)))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			tt.seed(f)
			if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
				t.Fatalf("first Reconcile: %v", err)
			}
			f.reset()
			res, err := e.Reconcile(context.Background(), "desk")
			if err != nil {
				t.Fatalf("second Reconcile: %v", err)
			}
			if w := f.writes(); len(w) != 0 {
				t.Fatalf("second reconcile wrote %d times: %v", len(w), w)
			}
			if res.StatusWritten || res.Done() != 0 {
				t.Fatalf("second reconcile: statusWritten %v done %d", res.StatusWritten, res.Done())
			}
		})
	}
}

func TestReconcileStatusWrites(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(1), 1)
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	first := f.cm(ConfigMapName("desk")).Data[KeyStatus]

	// A change that needs no step (a claim) is still recorded, once.
	f.add(claimAt("desk", "desk-1", "alice", testNow))
	f.reset()
	e.Now = fixedClock(testNow.Add(time.Minute))
	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil || !res.StatusWritten {
		t.Fatalf("Reconcile: %v, statusWritten %v", err, res.StatusWritten)
	}
	// (and the claim marks of the Pod the claim Lease, written by another
	// program, did not mark)
	assertActs(t, f.writes(), wantActs("patch Pod desk-1", "patch ConfigMap corral-vdi-ctpool-desk"))
	st, _ := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
	if st.Claimed != 1 || st.Members[0].Holder != "alice" || !st.UpdatedAt.Equal(testNow.Add(time.Minute)) || st.Exhausted != true {
		t.Fatalf("status %+v", st)
	}
	if f.cm(ConfigMapName("desk")).Data[KeyStatus] == first {
		t.Fatal("status unchanged")
	}

	// Time passing alone changes nothing until the claim expires.
	f.reset()
	e.Now = fixedClock(testNow.Add(30 * time.Minute))
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil || len(f.writes()) != 0 {
		t.Fatalf("Reconcile: %v, writes %v", err, f.writes())
	}
	e.Now = fixedClock(testNow.Add(2 * time.Hour))
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	st, _ = ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
	if !st.Members[0].ClaimExpired {
		t.Fatalf("expiry not recorded: %+v", st.Members[0])
	}

}

// A reconciler that cannot read a pool's recorded status (a newer
// release's format, or text that does not parse) changes nothing and says
// so, until the status is removed or can be read.
func TestReconcileStopsOnAStatusItCannotRead(t *testing.T) {
	tests := []struct {
		name, status, why string
	}{
		{"does not parse", "members: {", "did not find expected node content"},
		{"a newer format", "format: 2\ndesired: 3\nmembers:\n- desk-1 Ready\n", "format 2 is a newer release's; this release reads formats up to 1"},
		{"a newer format with keys of its own", "format: 9\nsize: {\"desk\": [1, 2]}\n", "format 9 is a newer release's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			e, f := newEngine()
			// Two members on an old image and one missing: work a reconcile
			// would do.
			seedPool(f, "desk", Spec{Image: "img:1", Size: 3}, 2)
			if err := f.PatchConfigMapData(ctx, ConfigMapName("desk"), KeySpec, "image: img:2\nsize: 3\n"); err != nil {
				t.Fatal(err)
			}
			if err := f.PatchConfigMapData(ctx, ConfigMapName("desk"), KeyStatus, tt.status); err != nil {
				t.Fatal(err)
			}
			f.reset()
			res, err := e.Reconcile(ctx, "desk")
			var ue *UnreadableStatusError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), "remove it: kubectl patch configmap corral-vdi-ctpool-desk") {
				t.Fatalf("Reconcile: %v", err)
			}
			if w := f.writes(); len(w) != 0 || res.Done() != 0 {
				t.Fatalf("writes %v, %d actions over a status it cannot read", w, res.Done())
			}
			if got := f.cm(ConfigMapName("desk")).Data[KeyStatus]; got != tt.status {
				t.Fatalf("status written over:\n%s", got)
			}
			// Emptied, the status starts afresh at the next reconcile.
			if err := f.PatchConfigMapData(ctx, ConfigMapName("desk"), KeyStatus, ""); err != nil {
				t.Fatal(err)
			}
			if res, err := e.Reconcile(ctx, "desk"); err != nil || !res.StatusWritten || res.Done() == 0 {
				t.Fatalf("after the status was removed: %v, written %v, %d actions", err, res.StatusWritten, res.Done())
			}
			if st, err := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus]); err != nil || st.Desired != 3 {
				t.Fatalf("fresh status %+v, %v", st, err)
			}
		})
	}
}

func TestReconcileBrokenDefinitions(t *testing.T) {
	tests := []struct {
		name    string
		spec    string // "" means no ConfigMap
		wantIs  error
		wantErr string
	}{
		{name: "no pool", wantIs: ErrPoolNotFound, wantErr: "pool not found: desk (no ConfigMap corral-vdi-ctpool-desk in namespace vdi)"},
		{name: "persistent", spec: "image: img\nsize: 2\nmode: persistent\n", wantIs: ErrPersistentMode},
		{name: "malformed YAML", spec: "image: [\n", wantErr: "pool desk: invalid spec"},
		{name: "unknown field", spec: "image: img\nsize: 1\nreplicas: 3\n", wantErr: `unknown field "replicas"`},
		{name: "bad quantity", spec: "image: img\nsize: 1\ncpu: lots\n", wantErr: `invalid cpu "lots"`},
		{name: "negative size", spec: "image: img\nsize: -1\n", wantErr: "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			if tt.spec != "" {
				f.add(cmRaw(tt.spec, ""))
			}
			p, c := readyMember("desk", 1, driftedSpec(1))
			f.add(p, c)
			_, err := e.Reconcile(context.Background(), "desk")
			if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Reconcile = %v, want %v %q", err, tt.wantIs, tt.wantErr)
			}
			if w := memberWrites(f.writes(), "desk-1"); len(w) != 0 {
				t.Fatalf("member writes %v", w)
			}
			if tt.spec == "" {
				if len(f.writes()) != 0 {
					t.Fatalf("writes %v", f.writes())
				}
				return
			}
			// The broken definition is named in the status, once.
			assertActs(t, f.writes(), wantActs("patch ConfigMap corral-vdi-ctpool-desk"))
			st, _ := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
			if len(st.Errors) != 1 || !strings.HasPrefix(st.Errors[0], "spec: ") {
				t.Fatalf("status errors %q", st.Errors)
			}
			f.reset()
			if _, err := e.Reconcile(context.Background(), "desk"); err == nil || len(f.writes()) != 0 {
				t.Fatalf("second run: %v, writes %v", err, f.writes())
			}
		})
	}
}

func TestReconcileStuckTerminating(t *testing.T) {
	e, f := newEngine()
	e.WaitTimeout = 20 * time.Millisecond
	f.terminating = true
	seedPool(f, "desk", baseSpec(1), 0)
	p, c := readyMember("desk", 1, driftedSpec(1))
	f.add(p, c)
	_, err := e.Reconcile(context.Background(), "desk")
	if err == nil || !strings.Contains(err.Error(), "replace desk-1: Pod desk-1 still exists after 20ms (stuck Terminating? check its finalizers)") {
		t.Fatalf("Reconcile = %v", err)
	}
	if f.lease(LeaseName("desk-1")) != nil {
		t.Fatal("lease left behind")
	}
	if hasAct(f.writes(), "create", kPod, "desk-1") {
		t.Fatal("a new Pod was created while the old one is Terminating")
	}
	// Terminating members are left alone by the next reconcile.
	f.reset()
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil || len(memberWrites(f.writes(), "desk-1")) != 0 {
		t.Fatalf("second run: %v, writes %v", err, f.writes())
	}
	// Once the objects are gone, the member is created again.
	f.finish(KindPod, "desk-1")
	f.finish(KindPVC, "desk-1-data")
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil || f.pod("desk-1") == nil {
		t.Fatalf("recreate: %v", err)
	}
}

func TestReconcileConcurrentMembers(t *testing.T) {
	e, f := newEngine()
	e.Concurrency = 0 // the default bound
	seedPool(f, "desk", baseSpec(40), 0)
	for n := 41; n <= 50; n++ {
		p, c := readyMember("desk", n, baseSpec(40))
		f.add(p, c)
	}
	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil || res.Done() != 50 {
		t.Fatalf("Reconcile: %v, done %d", err, res.Done())
	}
	if pods, pvcs, leases := f.count(); pods != 40 || pvcs != 40 || leases != 0 {
		t.Fatalf("%d pods, %d pvcs, %d leases", pods, pvcs, leases)
	}
	for n := 1; n <= 50; n++ {
		w := memberWrites(f.writes(), MemberName("desk", n))
		l := LeaseName(MemberName("desk", n))
		if w[0] != (act{"create", kLease, l}) || w[len(w)-1] != (act{"delete", kLease, l}) {
			t.Fatalf("member %d writes outside its Lease: %v", n, w)
		}
	}
	if res.Status.Observed != 40 || res.Status.Desired != 40 {
		t.Fatalf("status %+v", res.Status)
	}
}

func TestReconcileSnapshotError(t *testing.T) {
	e, f := newEngine()
	f.snapshotErr = fmt.Errorf("pods is forbidden: %w", ErrForbidden)
	_, err := e.Reconcile(context.Background(), "desk")
	if !errors.Is(err, ErrForbidden) || !strings.HasPrefix(err.Error(), "read pool desk: ") || len(f.writes()) != 0 {
		t.Fatalf("Reconcile = %v, writes %v", err, f.writes())
	}
}

// Objects created by a faster reconciler meanwhile are left as they are.
func TestReconcileObjectsCreatedMeanwhile(t *testing.T) {
	e, f := newEngine()
	spec := baseSpec(2)
	seedPool(f, "desk", spec, 0)
	f.add(BuildPVC(testNS, "desk", 2, spec))
	f.hook = func(a act) {
		switch a {
		case act{"create", kPVC, "desk-1-data"}:
			f.add(BuildPVC(testNS, "desk", 1, spec))
		case act{"create", kPod, "desk-2"}:
			f.add(BuildPod(testNS, "desk", 2, spec))
		}
	}
	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil || res.Done() != 2 {
		t.Fatalf("Reconcile = %v, done %d", err, res.Done())
	}
	if pods, pvcs, leases := f.count(); pods != 2 || pvcs != 2 || leases != 0 {
		t.Fatalf("%d pods %d pvcs %d leases", pods, pvcs, leases)
	}
}

func TestStepString(t *testing.T) {
	want := map[Step]string{StepCreate: "create", StepStart: "start", StepReplace: "replace", StepDelete: "delete", StepStatus: "status", StepRead: "read", StepMark: "mark", StepRecord: "record", Step(99): "step(99)"}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("Step(%d) = %q, want %q", int(s), s.String(), w)
		}
	}
	e := &StepError{Errors: []string{"a", "b"}}
	if e.Error() != "reconcile: 2 steps failed: a; b" {
		t.Errorf("StepError = %q", e.Error())
	}
	if (&Engine{}).waitTimeout() != DeleteWaitTimeout || (&Engine{}).concurrency() != DefaultConcurrency {
		t.Error("defaults")
	}
}

// tickingClock advances by one second on every reading, so that a step's
// timing counts the engine's clock readings within it.
func tickingClock(start time.Time) func() time.Time {
	var mu sync.Mutex
	cur := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := cur
		cur = cur.Add(time.Second)
		return t
	}
}

func TestReconcileTimings(t *testing.T) {
	cases := []struct {
		name  string
		seed  func(f *fakeCluster)
		fail  error
		steps string
	}{
		{
			name: "every step",
			seed: func(f *fakeCluster) {
				spec := baseSpec(4)
				f.add(BuildConfigMap(testNS, "desk", spec), BuildPVC(testNS, "desk", 2, spec))
				p3, c3 := readyMember("desk", 3, driftedSpec(4))
				p3.Status.Conditions = nil // Starting: no rollout budget holds it
				p4, c4 := readyMember("desk", 4, spec)
				p5, c5 := readyMember("desk", 5, spec)
				f.add(p3, c3, p4, c4, p5, c5)
			},
			steps: "read create start replace delete status",
		},
		{
			name:  "nothing to do",
			seed:  func(f *fakeCluster) { seedPool(f, "desk", baseSpec(2), 2) },
			steps: "read status",
		},
		{
			name:  "only creates",
			seed:  func(f *fakeCluster) { seedPool(f, "desk", baseSpec(3), 0) },
			steps: "read create status",
		},
		{
			name:  "unreadable pool",
			seed:  func(f *fakeCluster) {},
			fail:  ErrForbidden,
			steps: "read",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			e.Now = tickingClock(testNow)
			tc.seed(f)
			f.snapshotErr = tc.fail
			res, err := e.Reconcile(context.Background(), "desk")
			if !errors.Is(err, tc.fail) {
				t.Fatalf("Reconcile = %v, want %v", err, tc.fail)
			}
			var steps []string
			for _, st := range res.Timings {
				steps = append(steps, st.Step.String())
				if st.Took <= 0 {
					t.Errorf("%s took %v on a clock that ticks on every reading", st.Step, st.Took)
				}
			}
			if got := strings.Join(steps, " "); got != tc.steps {
				t.Fatalf("timed steps %q, want %q", got, tc.steps)
			}
		})
	}
}
