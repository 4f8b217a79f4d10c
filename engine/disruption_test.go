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
	"k8s.io/apimachinery/pkg/util/intstr"
)

// marked gives p the claim marks (as a claim of this tool leaves them).
func marked(p *corev1.Pod) *corev1.Pod {
	markClaimed(p)
	return p
}

// TestClaimMarksThePod: a claim gives the member's Pod both claim marks with
// one patch, and a Pod started for a claim carries them from its creation
// (no patch).
func TestClaimMarksThePod(t *testing.T) {
	for _, tc := range []struct {
		name      string
		state     State
		wantPatch bool
	}{
		{"a Ready member: one patch of its Pod", StateReady, true},
		{"a Stopped member: started marked", StateStopped, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			spec := baseSpec(1)
			f.add(BuildConfigMap(testNS, "desk", spec))
			seedMember(f, 1, spec, tc.state)
			res, err := e.Claim(context.Background(), "desk", "alice")
			if err != nil || res.Member != "desk-1" {
				t.Fatalf("Claim = %+v, %v", res, err)
			}
			if p := f.pod("desk-1"); !ClaimMarked(p) {
				t.Fatalf("claimed Pod labels %v annotations %v; want %s=true and %s=false", p.Labels, p.Annotations, LabelClaimed, AnnotationSafeToEvict)
			}
			patches := 0
			for _, a := range f.writes() {
				if a == (act{"patch", kPod, "desk-1"}) {
					patches++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.wantPatch]; patches != want {
				t.Errorf("%d patches of the Pod, want %d: %v", patches, want, f.writes())
			}
		})
	}
}

// TestClaimMarkFailureKeepsTheClaim: a claim whose mark patch fails still
// stands, with a warning (the next reconcile marks the Pod).
func TestClaimMarkFailureKeepsTheClaim(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(1), 1)
	f.fail("patch", kPod, "desk-1", errors.New("injected"), 0)
	res, err := e.Claim(context.Background(), "desk", "alice")
	if err != nil || res.Member != "desk-1" {
		t.Fatalf("Claim = %+v, %v", res, err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "claim marks") {
		t.Fatalf("warnings %q, want one about the claim marks", res.Warnings)
	}
	f.clearFailures()
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	if !ClaimMarked(f.pod("desk-1")) {
		t.Fatal("the reconcile after the claim did not mark the Pod")
	}
}

// TestClaimOfAPodEvictedMeanwhile: a Pod evicted between the claim's read
// of the member and its marks is started again for the claim, marked, on
// the member's data.
func TestClaimOfAPodEvictedMeanwhile(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(1), 1)
	old := f.pod("desk-1")
	pvc := f.pvc("desk-1-data")
	f.hook = func(a act) {
		if a == (act{"patch", kPod, "desk-1"}) {
			f.hook = nil
			f.mu.Lock()
			delete(f.pods, "desk-1") // evicted
			f.mu.Unlock()
		}
	}
	res, err := e.Claim(context.Background(), "desk", "alice")
	if err != nil || res.Member != "desk-1" || !res.Started {
		t.Fatalf("Claim = %+v, %v; want desk-1 started again", res, err)
	}
	p := f.pod("desk-1")
	if p == nil || p.UID == old.UID || !ClaimMarked(p) {
		t.Fatalf("desk-1's Pod after the claim: %+v; want a new, marked Pod", p)
	}
	if c := f.pvc("desk-1-data"); c == nil || c.UID != pvc.UID {
		t.Fatal("the member's data changed")
	}
}

// TestReleaseRebuildsAnUnmarkedPod: the Pod a release builds for the next
// user carries neither claim mark.
func TestReleaseRebuildsAnUnmarkedPod(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(1), 1)
	ctx := context.Background()
	if _, err := e.Claim(ctx, "desk", "alice"); err != nil {
		t.Fatal(err)
	}
	before := f.pod("desk-1")
	if !ClaimMarked(before) {
		t.Fatal("claimed Pod not marked")
	}
	res, err := e.Release(ctx, "desk", "desk-1", "alice")
	if err != nil || !res.Recreated {
		t.Fatalf("Release = %+v, %v", res, err)
	}
	after := f.pod("desk-1")
	if after == nil || after.UID == before.UID {
		t.Fatalf("no new Pod: %v", after)
	}
	if anyClaimMark(after) {
		t.Fatalf("the rebuilt, free Pod carries claim marks: %v %v", after.Labels, after.Annotations)
	}
}

// TestReconcileRepairsClaimMarks: a reconcile marks the Pod of every claimed
// member that lacks a mark and unmarks every free member's Pod that has one;
// Pods already right, members under maintenance and Pods being deleted cost
// no write.
func TestReconcileRepairsClaimMarks(t *testing.T) {
	spec := baseSpec(1)
	labelOnly := func(p *corev1.Pod) *corev1.Pod { p.Labels[LabelClaimed] = "true"; return p }
	annotationOnly := func(p *corev1.Pod) *corev1.Pod { p.Annotations[AnnotationSafeToEvict] = "false"; return p }
	same := func(p *corev1.Pod) *corev1.Pod { return p }
	for _, tc := range []struct {
		name       string
		pod        func(*corev1.Pod) *corev1.Pod
		lease      func() any // nil: no Lease
		terminates bool
		wantMarked bool
		wantPatch  bool
	}{
		{"claimed by a broker (Lease only): marked", same, func() any { return claimAt("desk", "desk-1", "bob", testNow) }, false, true, true},
		{"claimed, label only: marked whole", labelOnly, func() any { return claimAt("desk", "desk-1", "bob", testNow) }, false, true, true},
		{"claim expired: still marked", same, func() any { return claimAt("desk", "desk-1", "bob", testNow.Add(-5*time.Hour)) }, false, true, true},
		{"claimed and marked: no write", marked, func() any { return claimAt("desk", "desk-1", "bob", testNow) }, false, true, false},
		{"free, marked (a release stopped midway): unmarked", marked, nil, false, false, true},
		{"free, annotation only: unmarked", annotationOnly, nil, false, false, true},
		{"free and unmarked: no write", same, nil, false, false, false},
		{"under maintenance: left as it is", marked, func() any { return ReconcilerLease(testNS, "desk", "desk-1", testNow) }, false, true, false},
		{"being deleted: left as it is", marked, nil, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			f.add(BuildConfigMap(testNS, "desk", spec))
			p, c := readyMember("desk", 1, spec)
			p = tc.pod(p)
			if tc.terminates {
				now := metav1.NewTime(testNow)
				p.DeletionTimestamp = &now
			}
			f.add(p, c)
			if tc.lease != nil {
				f.add(tc.lease())
			}
			res, _ := e.Reconcile(context.Background(), "desk")
			got := f.pod("desk-1")
			if ClaimMarked(got) != tc.wantMarked || (!tc.wantMarked && anyClaimMark(got)) {
				t.Fatalf("Pod labels %v annotations %v; want marked %v", got.Labels, got.Annotations, tc.wantMarked)
			}
			if patched := hasAct(f.writes(), "patch", kPod, "desk-1"); patched != tc.wantPatch {
				t.Fatalf("Pod patched %v, want %v: %v", patched, tc.wantPatch, f.writes())
			}
			if tc.wantPatch {
				marks := 0
				for _, a := range res.Actions {
					if a.Step == StepMark && a.Member == "desk-1" && a.Err == nil && a.Skipped == "" {
						marks++
					}
				}
				if marks != 1 {
					t.Fatalf("actions %+v; want one mark of desk-1", res.Actions)
				}
			}
			// After the repair nothing is left to do about the marks.
			if v := Observe(mustSnap(t, f), testNow); markNeeded(v.Member("desk-1")) {
				t.Fatal("desk-1 still needs its marks changed after the reconcile")
			}
		})
	}
}

// TestNeedsWorkForClaimMarks: a pool whose only difference is a claimed
// member's missing marks (or a free member's stale ones) needs a reconcile.
func TestNeedsWorkForClaimMarks(t *testing.T) {
	spec := baseSpec(1)
	for _, tc := range []struct {
		name    string
		pod     func(*corev1.Pod) *corev1.Pod
		claimed bool
		want    bool
	}{
		{"claimed, unmarked", func(p *corev1.Pod) *corev1.Pod { return p }, true, true},
		{"claimed, marked", marked, true, false},
		{"free, marked", marked, false, true},
		{"free, unmarked", func(p *corev1.Pod) *corev1.Pod { return p }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := readyMember("desk", 1, spec)
			snap := Snapshot{Namespace: testNS, Pool: "desk", ConfigMap: BuildConfigMap(testNS, "desk", spec), Pods: []*corev1.Pod{tc.pod(p)}, PVCs: []*corev1.PersistentVolumeClaim{c}}
			if tc.claimed {
				snap.Leases = append(snap.Leases, claimAt("desk", "desk-1", "bob", testNow))
			}
			if got := NeedsWork(Observe(snap, testNow)); got != tc.want {
				t.Fatalf("NeedsWork = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUnmarkRacingAClaim: a reconcile that unmarks a free member's Pod
// while a claim of it lands (its Lease created between the reconcile's read
// and its patch) gives the Pod its marks back.
func TestUnmarkRacingAClaim(t *testing.T) {
	e, f := newEngine()
	spec := baseSpec(1)
	f.add(BuildConfigMap(testNS, "desk", spec))
	p, c := readyMember("desk", 1, spec)
	f.add(marked(p), c)
	f.hook = func(a act) {
		if a == (act{"patch", kPod, "desk-1"}) {
			f.hook = nil
			f.add(claimAt("desk", "desk-1", "carol", testNow)) // the claim's Lease lands
		}
	}
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	if !ClaimMarked(f.pod("desk-1")) {
		t.Fatalf("carol's member is left unmarked: %v %v", f.pod("desk-1").Labels, f.pod("desk-1").Annotations)
	}
}

// TestReconcileProtection: the pool's PodDisruptionBudget is created when
// missing, put back when changed by hand, left alone when foreign (no pool
// label) or being deleted, and without the rights nothing fails: the
// reconcile says (and the status records) that claimed desktops are not
// protected from eviction.
func TestReconcileProtection(t *testing.T) {
	name := DisruptionBudgetName("desk")
	changed := func() any {
		b := BuildDisruptionBudget(testNS, "desk")
		one := intstr.FromInt32(1)
		b.Spec.MaxUnavailable = &one
		return b
	}
	foreign := func() any {
		b := BuildDisruptionBudget(testNS, "desk")
		b.Labels = nil
		b.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
		return b
	}
	terminating := func() any {
		b := BuildDisruptionBudget(testNS, "desk")
		now := metav1.NewTime(testNow)
		b.DeletionTimestamp = &now
		return b
	}
	forbidden := fmt.Errorf("poddisruptionbudgets %q is forbidden: %w", name, ErrForbidden)
	for _, tc := range []struct {
		name       string
		seed       func() any
		fail       string // verb to fail with forbidden
		wantActs   []string
		wantState  string
		wantDetail string
		protected  bool
	}{
		{name: "missing: created", wantActs: []string{"get", "create"}, wantState: ProtectionEnforced, wantDetail: "created", protected: true},
		{name: "the pool's: nothing written", seed: func() any { return BuildDisruptionBudget(testNS, "desk") }, wantActs: []string{"get"}, wantState: ProtectionEnforced, protected: true},
		{name: "changed by hand: put back", seed: changed, wantActs: []string{"get", "update"}, wantState: ProtectionEnforced, wantDetail: "put back", protected: true},
		{name: "foreign: left alone and reported", seed: foreign, wantActs: []string{"get"}, wantState: ProtectionForeign, wantDetail: "not this pool's"},
		{name: "being deleted: created by a later reconcile", seed: terminating, wantActs: []string{"get"}, wantState: ProtectionMissing, wantDetail: "being deleted"},
		{name: "no right to read", fail: "get", wantActs: []string{"get"}, wantState: ProtectionNone, wantDetail: "no permission to get poddisruptionbudgets"},
		{name: "no right to create", fail: "create", wantActs: []string{"get", "create"}, wantState: ProtectionNone, wantDetail: "forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", baseSpec(1), 1)
			if tc.seed != nil {
				f.add(tc.seed())
			}
			if tc.fail != "" {
				f.fail(tc.fail, kPDB, name, forbidden, 0)
			}
			res, err := e.Reconcile(context.Background(), "desk")
			if err != nil {
				t.Fatalf("Reconcile: %v (the budget never fails a reconcile)", err)
			}
			var verbs []string
			for _, a := range f.budgetActs() {
				verbs = append(verbs, a.Verb)
			}
			if strings.Join(verbs, " ") != strings.Join(tc.wantActs, " ") {
				t.Fatalf("calls on the budget %v, want %v", verbs, tc.wantActs)
			}
			p := res.Protection
			if p == nil || p.State != tc.wantState || !strings.Contains(p.Detail, tc.wantDetail) || p.Protected() != tc.protected {
				t.Fatalf("Protection = %+v, want %s %q", p, tc.wantState, tc.wantDetail)
			}
			if tc.protected {
				b := f.pdb(name)
				if b.Labels[LabelPool] != "desk" || b.Spec.MaxUnavailable == nil || b.Spec.MaxUnavailable.IntValue() != 0 || b.Spec.MinAvailable != nil ||
					b.Spec.Selector.MatchLabels[LabelClaimed] != "true" || b.Spec.Selector.MatchLabels[LabelPool] != "desk" {
					t.Fatalf("budget %+v; want the pool's claimed members, maxUnavailable 0", b)
				}
			}
			st, _ := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
			if tc.protected != (st.Unprotected == "") {
				t.Fatalf("status unprotected %q; protected %v", st.Unprotected, tc.protected)
			}
			if !tc.protected {
				v := Observe(mustSnap(t, f), testNow)
				if pv := v.Protection(); pv == nil || !strings.Contains(pv.Text(), NotProtected) {
					t.Fatalf("the recorded status does not say %q: %+v", NotProtected, pv)
				}
			}
		})
	}
}

// TestApplySaysUnprotectedOnce: apply without the rights on
// PodDisruptionBudgets succeeds and warns once that claimed desktops are not
// protected from eviction.
func TestApplySaysUnprotectedOnce(t *testing.T) {
	e, f := newEngine()
	f.fail("get", kPDB, DisruptionBudgetName("desk"), fmt.Errorf("forbidden: %w", ErrForbidden), 0)
	res, err := e.Apply(context.Background(), "desk", baseSpec(2))
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	n := 0
	for _, w := range res.Warnings {
		n += strings.Count(w, NotProtected)
	}
	if n != 1 {
		t.Fatalf("warnings %q; want %q once", res.Warnings, NotProtected)
	}
}

// TestDeleteRemovesTheBudget: delete removes the pool's budget, and leaves
// a foreign one of the same name alone.
func TestDeleteRemovesTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		foreign bool
	}{{"the pool's", false}, {"a foreign one", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", baseSpec(1), 1)
			b := BuildDisruptionBudget(testNS, "desk")
			if tc.foreign {
				b.Labels = map[string]string{"app": "other"}
			}
			f.add(b)
			if _, err := e.Delete(context.Background(), "desk"); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if gone := f.pdb(DisruptionBudgetName("desk")) == nil; gone == tc.foreign {
				t.Fatalf("budget gone %v, want %v", gone, !tc.foreign)
			}
			if f.cm(ConfigMapName("desk")) != nil {
				t.Fatal("the definition stays")
			}
		})
	}
}

// TestObserveNodeDraining: a member whose Pod is on a cordoned node is
// marked draining, and the pool's drain holds count its claimed members by
// node.
func TestObserveNodeDraining(t *testing.T) {
	spec := baseSpec(4)
	snap := Snapshot{Namespace: testNS, Pool: "desk", ConfigMap: BuildConfigMap(testNS, "desk", spec),
		NodeCordoned: map[string]bool{"node-a": true, "node-c": true}}
	for n, node := range map[int]string{1: "node-a", 2: "node-a", 3: "node-a", 4: "node-b"} {
		p, c := readyMember("desk", n, spec)
		p.Spec.NodeName = node
		snap.Pods, snap.PVCs = append(snap.Pods, p), append(snap.PVCs, c)
	}
	snap.Leases = append(snap.Leases, claimAt("desk", "desk-1", "alice", testNow), claimAt("desk", "desk-2", "bob", testNow), claimAt("desk", "desk-4", "carol", testNow))
	v := Observe(snap, testNow)
	for name, want := range map[string]bool{"desk-1": true, "desk-2": true, "desk-3": true, "desk-4": false} {
		if got := v.Member(name).NodeDraining; got != want {
			t.Errorf("%s NodeDraining = %v, want %v", name, got, want)
		}
	}
	holds := v.DrainHolds()
	if len(holds) != 1 || holds[0].Node != "node-a" || holds[0].Claimed != 2 || strings.Join(holds[0].Members, ",") != "desk-1,desk-2" {
		t.Fatalf("DrainHolds = %+v; want desk-1 and desk-2 on node-a", holds)
	}
	if got := DrainHoldText(holds[0]); got != "2 claimed desktops hold the drain of node-a" {
		t.Errorf("DrainHoldText = %q", got)
	}
	// The incremental observation agrees.
	s := NewPoolState(snap, testNow)
	if !s.View().Member("desk-3").NodeDraining {
		t.Error("PoolState: desk-3 not draining")
	}
	snap.NodeCordoned = nil
	if v := Observe(snap, testNow); v.Member("desk-1").NodeDraining || len(v.DrainHolds()) != 0 {
		t.Error("nodes unknown: a member reads as draining")
	}
}

// TestReconcileReadsACachedBudget: a reconcile whose snapshot holds the
// pool's budget as written (a controller's cache) reads and writes nothing
// of it; one that holds it otherwise reads it fresh.
func TestReconcileReadsACachedBudget(t *testing.T) {
	changed := BuildDisruptionBudget(testNS, "desk")
	one := intstr.FromInt32(1)
	changed.Spec.MaxUnavailable = &one
	for _, tc := range []struct {
		name   string
		cached *DisruptionBudgetRead
		want   []string
	}{
		{"as written: nothing", &DisruptionBudgetRead{Budget: BuildDisruptionBudget(testNS, "desk")}, nil},
		{"changed: read fresh", &DisruptionBudgetRead{Budget: changed}, []string{"get", "create"}},
		{"not cached: read fresh", nil, []string{"get", "create"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", baseSpec(1), 1)
			e.Cluster = budgetCache{f, tc.cached}
			res, err := e.Reconcile(context.Background(), "desk")
			if err != nil || res.Protection == nil || !res.Protection.Protected() {
				t.Fatalf("Reconcile: %v, protection %+v", err, res.Protection)
			}
			var verbs []string
			for _, a := range f.budgetActs() {
				verbs = append(verbs, a.Verb)
			}
			if strings.Join(verbs, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("calls on the budget %v, want %v", verbs, tc.want)
			}
		})
	}
}

// budgetCache is a fake whose snapshots carry a cached budget read.
type budgetCache struct {
	*fakeCluster
	read *DisruptionBudgetRead
}

func (b budgetCache) Snapshot(ctx context.Context, pool string) (Snapshot, error) {
	s, err := b.fakeCluster.Snapshot(ctx, pool)
	s.DisruptionBudget = b.read
	return s, err
}
