package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A hand-made ConfigMap (no data, no spec key, a spec that does not parse)
// never panics an operation; delete still removes the pool.
func TestHandMadeConfigMaps(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
	}{
		{"no data", nil},
		{"no spec key", map[string]string{"other": "x"}},
		{"spec does not parse", map[string]string{KeySpec: "image: [\n"}},
		{"persistent", map[string]string{KeySpec: "image: img\nsize: 2\nmode: persistent\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			e, f := newEngine()
			f.add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName("nodata"), Labels: map[string]string{LabelPool: "nodata"}}, Data: tt.data})
			p, c := readyMember("nodata", 1, baseSpec(1))
			f.add(p, c)
			if _, err := e.Reconcile(ctx, "nodata"); err == nil {
				t.Fatal("Reconcile of a broken definition succeeded")
			}
			if _, err := e.Claim(ctx, "nodata", "alice"); err == nil {
				t.Fatal("Claim on a broken definition succeeded")
			}
			if _, err := e.Delete(ctx, "nodata"); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if f.cm(ConfigMapName("nodata")) != nil {
				t.Fatal("definition left")
			}
			if pods, pvcs, leases := f.count(); pods+pvcs+leases != 0 {
				t.Fatalf("left %d pods %d pvcs %d leases", pods, pvcs, leases)
			}
		})
	}
}

// ApplyEdit never loses a field the admin did not change: a stored
// definition that is persistent or does not parse is refused (nothing
// written) unless replace is set.
func TestApplyEditStoredDefinitions(t *testing.T) {
	setImage := func(img string) SpecEdit {
		return func(stored *Spec) (Spec, error) {
			if stored == nil {
				return Spec{Image: img, Size: 1}, nil
			}
			s := *stored
			s.Image = img
			return s, nil
		}
	}
	tests := []struct {
		name    string
		stored  string
		replace bool
		wantErr string
		wantIs  error
		want    string // the stored spec afterwards ("" = unchanged)
	}{
		{name: "keeps fields not named", stored: "image: a\ncpu: \"2\"\nmemory: 4Gi\nsize: 1\n",
			want: Spec{Image: "b", CPU: "2", Memory: "4Gi", Size: 1}.withDefaults().Encode()},
		{name: "persistent is refused", stored: "image: a\ncpu: \"2\"\nsize: 1\nmode: persistent\n",
			wantErr: "pool desk is stored with mode: persistent", wantIs: ErrPersistentMode},
		{name: "unknown field names field and line", stored: "image: a\nsize: 1\ncolour: blue\n",
			wantErr: `unknown field "colour" (line 3: colour)`},
		{name: "invalid value names field and line", stored: "image: a\ncpu: lots\nsize: 1\n",
			wantErr: `invalid cpu "lots": is not a quantity (examples: 500m, 2, 2Gi) (line 2: cpu: lots)`},
		{name: "malformed YAML names the line", stored: "image: a\nsize: [1\n", wantErr: "line "},
		{name: "replace writes the whole definition", stored: "image: a\ncpu: lots\nsize: 1\n", replace: true,
			want: Spec{Image: "b", Size: 1}.withDefaults().Encode()},
		{name: "replace over persistent", stored: "image: a\nsize: 1\nmode: persistent\n", replace: true,
			want: Spec{Image: "b", Size: 1}.withDefaults().Encode()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			f.add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName("desk"), Labels: map[string]string{LabelPool: "desk"}}, Data: map[string]string{KeySpec: tt.stored}})
			_, err := e.ApplyEdit(context.Background(), "desk", setImage("b"), tt.replace)
			got := f.cm(ConfigMapName("desk")).Data[KeySpec]
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
					t.Fatalf("ApplyEdit = %v, want %q", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "nothing was written") {
					t.Fatalf("error does not say nothing was written: %v", err)
				}
				if got != tt.stored {
					t.Fatalf("stored definition changed to %q", got)
				}
				if hasAct(f.writes(), "cas", kCM, ConfigMapName("desk")) {
					t.Fatal("wrote the definition")
				}
				return
			}
			if got != tt.want {
				t.Fatalf("stored\n%s\nwant\n%s (err %v)", got, tt.want, err)
			}
		})
	}

	t.Run("a change meanwhile is not lost", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(1), 1)
		edit := func(stored *Spec) (Spec, error) {
			// Someone else writes the definition between the read and the write.
			f.mu.Lock()
			cm := f.cms[ConfigMapName("desk")]
			cm.Data[KeySpec] = "image: other\nsize: 1\n"
			cm.ResourceVersion = f.nextRV()
			f.mu.Unlock()
			s := *stored
			s.Size = 3
			return s, nil
		}
		_, err := e.ApplyEdit(context.Background(), "desk", edit, false)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("ApplyEdit = %v, want ErrConflict", err)
		}
		if got := f.cm(ConfigMapName("desk")).Data[KeySpec]; got != "image: other\nsize: 1\n" {
			t.Fatalf("the other change was overwritten: %q", got)
		}
	})
}

func (s Spec) withDefaults() Spec { s.Default(); return s }

func TestTTLSecondsAboveSandboxdMaximum(t *testing.T) {
	for _, ttl := range []int64{86400, 86401, 1 << 40} {
		s := Spec{Image: "img", Size: 1, Runtime: &Runtime{Backend: BackendSandboxd, Template: "t", TTLSeconds: &ttl}}
		s.Default()
		err := s.Validate()
		if ttl <= 86400 {
			if err != nil {
				t.Fatalf("ttl %d: %v", ttl, err)
			}
			continue
		}
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != "runtime.ttlSeconds" || !strings.Contains(err.Error(), "at most 86400: sandboxd's maximum") {
			t.Fatalf("ttl %d: %v", ttl, err)
		}
	}
}

// Concurrent claims by one identity converge on one member, whatever the
// interleaving; different identities still get different members.
func TestConcurrentClaimsConverge(t *testing.T) {
	t.Run("a racer that won later gives its member back", func(t *testing.T) {
		// alice claims another member from another place just before this
		// claim's Lease create of the member it tries first; this claim
		// must answer the other one.
		first, other := firstPick(t, "alice", 3)
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(3), 3)
		f.hook = func(a act) {
			if a == (act{"create", kLease, LeaseName(first)}) {
				f.hook = nil
				f.add(claimAt("desk", other, "alice", testNow))
			}
		}
		res, err := e.Claim(context.Background(), "desk", "alice")
		if err != nil || res.Member != other || !res.Existing {
			t.Fatalf("Claim = %+v, %v; want %s (the earlier claim)", res, err, other)
		}
		if f.lease(LeaseName(first)) != nil {
			t.Fatalf("%s was not given back", first)
		}
		if hasAct(f.writes(), "patch", kPVC, PVCName(first)) {
			t.Fatal("annotated the member given back")
		}
	})

	t.Run("the earlier racer keeps its member", func(t *testing.T) {
		// Another claim of alice's wins a second member after this one won
		// the member it tried first.
		first, other := firstPick(t, "alice", 3)
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(3), 3)
		f.hook = func(a act) {
			if a == (act{"list", kLease, "desk"}) {
				f.hook = nil
				f.add(claimAt("desk", other, "alice", testNow))
			}
		}
		res, err := e.Claim(context.Background(), "desk", "alice")
		if err != nil || res.Member != first || res.Existing {
			t.Fatalf("Claim = %+v, %v; want %s", res, err, first)
		}
	})

	t.Run("an earlier racer's claim given back meanwhile is no answer", func(t *testing.T) {
		// Another claim of alice's won a member before this one and gives
		// it back (its fresh read found it not free) between this claim's
		// list and its answer: this claim keeps its own member, never
		// answering one whose Lease is gone (a 10,000-operation randomized
		// run handed such a member to a broker while alice was told it
		// was hers).
		first, other := firstPick(t, "alice", 3)
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(3), 3)
		f.hook = func(a act) {
			switch a {
			case act{"create", kLease, LeaseName(first)}:
				f.add(claimAt("desk", other, "alice", testNow))
			case act{"get", kLease, LeaseName(other)}:
				f.hook = nil
				f.mu.Lock()
				delete(f.leases, LeaseName(other))
				f.mu.Unlock()
			}
		}
		res, err := e.Claim(context.Background(), "desk", "alice")
		if err != nil || res.Member != first || res.Existing {
			t.Fatalf("Claim = %+v, %v; want %s, its own (the earlier claim was given back)", res, err, first)
		}
		if f.lease(LeaseName(first)) == nil {
			t.Fatalf("%s was given back too: alice holds nothing", first)
		}
	})

	t.Run("the list fails: the claim stands with a warning", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(2), 2)
		f.fail("list", kLease, "desk", errBoom, 0)
		res, err := e.Claim(context.Background(), "desk", "alice")
		if first, _ := firstPick(t, "alice", 2); err != nil || res.Member != first || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "could not check for a concurrent claim") {
			t.Fatalf("Claim = %+v, %v", res, err)
		}
	})

	for _, tc := range []struct{ identities, per, size int }{{1, 8, 10}, {10, 3, 40}, {5, 4, 12}} {
		t.Run(fmt.Sprintf("%d identities x %d claims on %d members", tc.identities, tc.per, tc.size), func(t *testing.T) {
			_, f := newEngine()
			seedPool(f, "desk", baseSpec(tc.size), tc.size)
			answers := make(map[string]map[string]bool)
			var mu sync.Mutex
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range tc.identities {
				id := fmt.Sprintf("user%d@example.com", i)
				answers[id] = map[string]bool{}
				for range tc.per {
					// Each racer has its own engine, as separate processes would.
					e := &Engine{Cluster: f, Namespace: testNS, Now: fixedClock(testNow), Concurrency: 1, WaitTimeout: time.Second}
					wg.Go(func() {
						<-start
						res, err := e.Claim(context.Background(), "desk", id)
						if err != nil {
							t.Errorf("%s: %v", id, err)
							return
						}
						mu.Lock()
						answers[id][res.Member] = true
						mu.Unlock()
					})
				}
			}
			close(start)
			wg.Wait()
			held := map[string][]string{}
			snap, _ := f.Snapshot(context.Background(), "desk")
			for _, l := range snap.Leases {
				held[*l.Spec.HolderIdentity] = append(held[*l.Spec.HolderIdentity], l.Name)
			}
			for id, got := range answers {
				if len(got) != 1 || len(held[id]) != 1 {
					t.Errorf("%s was answered %v and holds %v", id, got, held[id])
					continue
				}
				for m := range got {
					if LeaseName(m) != held[id][0] {
						t.Errorf("%s was answered %s but holds %s", id, m, held[id][0])
					}
				}
			}
		})
	}
}

// Reconcile starts a claimed member that lost its Pod and rebuilds one that
// lost its Pod and PVC, keeping the claim and taking no Lease.
func TestReconcileStartsClaimedMembers(t *testing.T) {
	spec := baseSpec(2)
	tests := []struct {
		name     string
		seed     func(f *fakeCluster)
		want     []string // writes on desk-1
		wantStep Step
	}{
		{"claimed, Pod gone", func(f *fakeCluster) {
			seedMember(f, 1, spec, StateStopped)
		}, []string{"create Pod desk-1"}, StepStart},
		{"claimed, expired, Pod gone", func(f *fakeCluster) {
			seedMember(f, 1, spec, StateStopped)
		}, []string{"create Pod desk-1"}, StepStart},
		{"claimed, drifted, Pod gone", func(f *fakeCluster) {
			seedMember(f, 1, driftedSpec(2), StateStopped)
		}, []string{"create Pod desk-1"}, StepStart},
		{"claimed, Pod and PVC gone", func(*fakeCluster) {}, []string{"create PersistentVolumeClaim desk-1-data", "create Pod desk-1"}, StepCreate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			f.add(BuildConfigMap(testNS, "desk", spec))
			seedMember(f, 2, spec, StateReady)
			tt.seed(f)
			at := testNow.Add(-time.Minute)
			if strings.Contains(tt.name, "expired") {
				at = testNow.Add(-3 * time.Hour)
			}
			f.add(claimAt("desk", "desk-1", "alice", at))
			var uid string
			if c := f.pvc("desk-1-data"); c != nil {
				uid = string(c.UID)
			}
			res, err := e.Reconcile(context.Background(), "desk")
			if err != nil {
				t.Fatal(err)
			}
			assertActs(t, memberWrites(f.writes(), "desk-1"), wantActs(tt.want...))
			if i := memberAction(res, "desk-1"); i < 0 || res.Actions[i].Step != tt.wantStep || res.Actions[i].Skipped != "" {
				t.Fatalf("actions %+v", res.Actions)
			}
			assertHeldBy(t, f, "desk-1", "alice")
			if uid != "" && string(f.pvc("desk-1-data").UID) != uid {
				t.Fatal("the user's data PVC was replaced")
			}
			// A second run does nothing more.
			f.reset()
			if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
				t.Fatal(err)
			}
			if w := memberWrites(f.writes(), "desk-1"); len(w) != 0 {
				t.Fatalf("second reconcile wrote %v", w)
			}
		})
	}

	// Above the size (the pool was made smaller while desk-2 was claimed):
	// the claim still holds, so a lost Pod comes back on the user's data; a
	// member that lost its data too is not built again above the size.
	above := []struct {
		name string
		seed func(f *fakeCluster)
		want []string // writes on desk-2
	}{
		{"claimed above the size, Pod gone", func(f *fakeCluster) {
			seedMember(f, 2, spec, StateStopped)
		}, []string{"create Pod desk-2"}},
		{"claimed above the size, Pod and PVC gone", func(*fakeCluster) {}, nil},
	}
	for _, tt := range above {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			f.add(BuildConfigMap(testNS, "desk", baseSpec(1)))
			seedMember(f, 1, spec, StateReady)
			tt.seed(f)
			f.add(claimAt("desk", "desk-2", "alice", testNow.Add(-time.Minute)))
			res, err := e.Reconcile(context.Background(), "desk")
			if err != nil {
				t.Fatal(err)
			}
			assertActs(t, memberWrites(f.writes(), "desk-2"), wantActs(tt.want...))
			if i := memberAction(res, "desk-2"); tt.want != nil && (i < 0 || res.Actions[i].Step != StepStart || res.Actions[i].Skipped != "" || res.Actions[i].Err != nil) {
				t.Fatalf("actions %+v", res.Actions)
			}
			assertHeldBy(t, f, "desk-2", "alice")
			f.reset()
			if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
				t.Fatal(err)
			}
			if w := memberWrites(f.writes(), "desk-2"); len(w) != 0 {
				t.Fatalf("second reconcile wrote %v", w)
			}
		})
	}

	t.Run("a claimed member whose release did not finish is not started", func(t *testing.T) {
		e, f := newEngine()
		f.add(BuildConfigMap(testNS, "desk", spec))
		seedMember(f, 2, spec, StateReady)
		seedMember(f, 1, spec, StateStopped)
		f.mu.Lock()
		f.pvcs["desk-1-data"].Annotations = map[string]string{AnnotationReleased: "true"}
		f.mu.Unlock()
		f.add(claimAt("desk", "desk-1", "alice", testNow))
		if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
			t.Fatal(err)
		}
		if w := memberWrites(f.writes(), "desk-1"); len(w) != 0 {
			t.Fatalf("writes %v", w)
		}
	})
}

// Every reconciler Lease carries the clock reading at the moment it is taken:
// one taken late in a long run is not stale to a second reconciler until it
// has been held ReconcilerLeaseTTL.
func TestReconcilerLeaseStampedWhenTaken(t *testing.T) {
	e, f := newEngine()
	f.add(BuildConfigMap(testNS, "desk", baseSpec(6)))
	// Each clock reading is one minute later: the reconcile runs for minutes.
	var mu sync.Mutex
	cur := testNow
	e.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := cur
		cur = cur.Add(time.Minute)
		return t
	}
	taken := map[string]time.Time{}
	f.hook = func(a act) {
		if a.Verb == "create" && a.Kind == kPod {
			// The member's Lease is held now; read it as a second reconciler would.
			l := f.lease(LeaseName(a.Name))
			if l == nil || l.Spec.AcquireTime == nil {
				t.Errorf("no Lease while creating %s", a.Name)
				return
			}
			taken[a.Name] = l.Spec.AcquireTime.Time
		}
	}
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	if len(taken) != 6 {
		t.Fatalf("saw %d Leases", len(taken))
	}
	last := taken["desk-6"]
	if !last.After(testNow.Add(5 * time.Minute)) {
		t.Fatalf("desk-6's Lease says %s, taken minutes into the run (start %s)", last, testNow)
	}
	// A second reconciler reading at the time desk-6's Lease was taken plus
	// 9 minutes still sees it fresh.
	l := ReconcilerLease(testNS, "desk", "desk-6", last)
	if c, _ := interpretLease(l, last.Add(9*time.Minute)); c.Stale {
		t.Fatal("stale after 9 minutes of holding")
	}
}

// A Pod that runs on a data PVC being deleted (created while a release
// destroyed the member) never makes the member free; an unclaimed one is
// rebuilt once its maintenance Lease is stale.
func TestPodOnADeletedPVCIsNeverFree(t *testing.T) {
	e, f := newEngine()
	spec := baseSpec(1)
	f.add(BuildConfigMap(testNS, "desk", spec))
	p, c := readyMember("desk", 1, spec)
	now := metav1.NewTime(testNow)
	c.DeletionTimestamp = &now
	c.Finalizers = []string{"kubernetes.io/pvc-protection"}
	f.add(p, c, ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-time.Minute)))
	snap, _ := f.Snapshot(context.Background(), "desk")
	v := Observe(snap, testNow)
	m := v.Member("desk-1")
	if m.State != StateReady || !m.Drift || m.Free || len(m.Problems) == 0 {
		t.Fatalf("state %s drift %v free %v problems %v", m.State, m.Drift, m.Free, m.Problems)
	}
	// Stale maintenance: the next reconcile replaces it (the Pod goes, so the
	// PVC can go; the fake then finishes the deletes).
	e.Now = fixedClock(testNow.Add(ReconcilerLeaseTTL + time.Minute))
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	if !hasAct(f.writes(), "delete", kPod, "desk-1") || f.lease(LeaseName("desk-1")) != nil {
		t.Fatalf("not replaced: %v", f.writes())
	}
}

// A claimed member is started without a reconciler Lease, so the claim is
// read again just before: one a release took over meanwhile is skipped.
func TestClaimedStartSkipsAClaimTakenOverMeanwhile(t *testing.T) {
	e, f := newEngine()
	spec := baseSpec(1)
	f.add(BuildConfigMap(testNS, "desk", spec))
	seedMember(f, 1, spec, StateStopped)
	f.add(claimAt("desk", "desk-1", "alice", testNow))
	f.hook = func(a act) {
		if a == (act{"list", kLease, "desk"}) {
			f.hook = nil
			// alice's release swaps the Lease to the reconciler now.
			f.mu.Lock()
			l := f.leases[LeaseName("desk-1")]
			l.Spec.HolderIdentity = ptrTo(ReconcilerIdentity)
			l.ResourceVersion = f.nextRV()
			f.mu.Unlock()
		}
	}
	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	if hasAct(f.writes(), "create", kPod, "desk-1") {
		t.Fatal("started a member whose claim was taken over")
	}
	if i := memberAction(res, "desk-1"); i < 0 || res.Actions[i].Skipped != "claim changed meanwhile" {
		t.Fatalf("actions %+v", res.Actions)
	}
}

// cancelAfterLeaseWrite applies a Lease write, then answers as a client
// whose context ended while it waited for the answer.
type cancelAfterLeaseWrite struct {
	*fakeCluster
	cancel context.CancelFunc
}

func (c cancelAfterLeaseWrite) CreateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	_, _ = c.fakeCluster.CreateLease(ctx, l)
	c.cancel()
	return nil, ctx.Err()
}

func (c cancelAfterLeaseWrite) UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	_, _ = c.fakeCluster.UpdateLease(ctx, l)
	c.cancel()
	return nil, ctx.Err()
}

// A take whose answer the reconcile stopped waiting for (it was stopped)
// may have been written all the same: the Lease is removed, not left for ten
// minutes with no reconciler working on the member.
func TestReconcilerTakeCancelledLeavesNoLease(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stale bool // a stale maintenance Lease is taken over (else one is created)
	}{
		{"create", false},
		{"take over a stale Lease", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			f.add(BuildConfigMap(testNS, "desk", baseSpec(1)))
			if tc.stale {
				f.add(ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-ReconcilerLeaseTTL-time.Minute)))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e.Cluster = cancelAfterLeaseWrite{fakeCluster: f, cancel: cancel}
			if _, err := e.Reconcile(ctx, "desk"); err == nil {
				t.Fatal("a cancelled reconcile reported success")
			}
			if l := f.lease(LeaseName("desk-1")); l != nil {
				t.Fatalf("Lease left behind: holder %q renewed %v", *l.Spec.HolderIdentity, l.Spec.RenewTime)
			}
		})
	}
}
