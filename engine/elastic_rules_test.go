package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The elastic rules that TestPlanElastic and the simulated day leave
// unguarded (issue 41): each case below fails when its rule is broken.

// elMember adds member n of the pool "el" (Ready, built from spec) to s.
func elMember(s *Snapshot, spec Spec, n int) {
	p, c := readyMember("el", n, spec)
	s.Pods, s.PVCs = append(s.Pods, p), append(s.PVCs, c)
}

// elClaim adds a claim of member n of the pool "el" to s.
func elClaim(s *Snapshot, n int) {
	s.Leases = append(s.Leases, claimAt("el", MemberName("el", n), fmt.Sprintf("late%d", n), testNow))
}

// elForeign adds a Pod that holds the name of member n of the pool "el" but
// is labelled as another member: the member is blocked.
func elForeign(s *Snapshot, spec Spec, n int) {
	p := readyPod(BuildPod(testNS, "el", n, spec))
	p.Labels[LabelMember] = "other-1"
	s.Pods = append(s.Pods, p)
}

func TestPlanElasticRules(t *testing.T) {
	since := func(d time.Duration) *time.Time { t := testNow.Add(-d); return &t }
	spare1 := elasticSpec(3, 0, 10, 1)
	spare2 := elasticSpec(3, 0, 10, 2)
	max5 := elasticSpec(3, 0, 5, 1)
	for _, tc := range []struct {
		name             string
		spec             Spec
		rec              *ElasticStatus
		members, claimed int
		mutate           func(*Snapshot)
		want             int
		changed          bool
		aboveSince       bool
		reason           string // a part of the reason; "" checks nothing
		floor            int    // -1 checks nothing
	}{
		{name: "a claim above the size takes the size up to it",
			spec: spare1, rec: &ElasticStatus{Size: 3, From: 3}, members: 3, claimed: 2,
			mutate: func(s *Snapshot) { elMember(s, spare1, 4); elClaim(s, 4) },
			want:   4, changed: true, reason: "grew from 3 to 4: claims took members above the size", floor: 4},
		{name: "a free member on a down node is no spare: the pool grows for it",
			spec: spare1, rec: &ElasticStatus{Size: 2, From: 3}, members: 2,
			mutate: func(s *Snapshot) {
				elClaim(s, 2)
				s.Pods[0].Spec.NodeName = "node-a"
				s.NodeDown = map[string]string{"node-a": "the node's kubelet stopped posting status"}
			},
			want: 3, changed: true, reason: "grew from 2 to 3: 0 free of spare 1", floor: -1},
		{name: "a claim above maxSize (lowered since) never takes the size past it",
			spec: max5, rec: &ElasticStatus{Size: 5, From: 3}, members: 5, claimed: 4,
			mutate: func(s *Snapshot) { elMember(s, max5, 7); elClaim(s, 7) },
			want:   5, floor: 5},
		{name: "a recorded size above maxSize is kept within it, and that is a change",
			spec: max5, rec: &ElasticStatus{Size: 8, From: 3}, members: 5, claimed: 4,
			want: 5, changed: true, reason: "kept within minSize 0 and maxSize 5", floor: -1},
		{name: "the definition's size changed to the size recorded: no change of size",
			spec: spare1, rec: &ElasticStatus{Size: 3, From: 5}, members: 3, claimed: 2,
			want: 3, reason: "the definition's size changed to 3", floor: -1},
		{name: "a blocked member is a floor: no shrink below it",
			spec: spare1, rec: &ElasticStatus{Size: 6, From: 3, AboveSince: since(time.Hour)}, members: 5,
			mutate: func(s *Snapshot) { elForeign(s, spare1, 6) },
			want:   6, floor: 6},
		{name: "a member under maintenance is a floor: no shrink below it",
			spec: spare1, rec: &ElasticStatus{Size: 6, From: 3, AboveSince: since(time.Hour)}, members: 6,
			mutate: func(s *Snapshot) {
				s.Leases = append(s.Leases, ReconcilerLease(testNS, "el", "el-6", testNow))
			},
			want: 6, floor: 6},
		{name: "a floor above the size: no settle time, and no shrink upwards",
			spec: spare1, rec: &ElasticStatus{Size: 3, From: 3, AboveSince: since(time.Hour)}, members: 3,
			mutate: func(s *Snapshot) { elForeign(s, spare1, 5) },
			want:   3, floor: 5},
		// The settle time began when more were free, and claims took them
		// all since: a later release must wait the settle time again.
		{name: "at maxSize with nothing spare: the settle time is forgotten",
			spec: max5, rec: &ElasticStatus{Size: 5, From: 3, AboveSince: since(time.Hour)}, members: 5, claimed: 5,
			want: 5, floor: 5},
		{name: "a Terminating member is no supply: grow",
			spec: spare1, rec: &ElasticStatus{Size: 3, From: 3}, members: 3, claimed: 2,
			mutate: func(s *Snapshot) { s.Pods[2].DeletionTimestamp = &metav1.Time{Time: testNow} },
			want:   4, changed: true, reason: "grew from 3 to 4: 0 free of spare 1", floor: -1},
		{name: "a blocked member is no supply: grow",
			spec: spare1, rec: &ElasticStatus{Size: 3, From: 3}, members: 2, claimed: 2,
			mutate: func(s *Snapshot) { elForeign(s, spare1, 3) },
			want:   4, changed: true, reason: "grew from 3 to 4: 0 free of spare 1", floor: -1},
		// Two claims took el-4 and el-5 above the size, and el-4 was
		// released (a member above the size is not rebuilt): the reconcile
		// creates el-4, which is the spare.
		{name: "a member not there below a claim taken above the size is coming supply",
			spec: spare1, rec: &ElasticStatus{Size: 3, From: 3}, members: 3, claimed: 3,
			mutate: func(s *Snapshot) { elMember(s, spare1, 5); elClaim(s, 5) },
			want:   5, changed: true, reason: "claims took members above the size", floor: 5},
		// el-4 is left over above the size (a shrink whose delete did not
		// finish) when a claim takes el-5: once the size takes el-4 in, it
		// is free, and the growth for the spare says so.
		{name: "a free member above the size observed counts as free once the size takes it in",
			spec: spare2, rec: &ElasticStatus{Size: 3, From: 3}, members: 4, claimed: 3,
			mutate: func(s *Snapshot) { elMember(s, spare2, 5); elClaim(s, 5) },
			want:   6, changed: true, reason: "grew from 5 to 6: 1 free of spare 2", floor: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := elasticView(t, tc.spec, tc.rec, tc.members, tc.claimed, tc.mutate)
			d := PlanElastic(tc.spec, &v, v.Recorded.Elastic, testNow)
			if d.Status.Size != tc.want || d.Changed != tc.changed {
				t.Fatalf("size %d changed %v, want %d %v (%s)", d.Status.Size, d.Changed, tc.want, tc.changed, d.Status.Reason)
			}
			if (d.Status.AboveSince != nil) != tc.aboveSince {
				t.Errorf("aboveSince %v, want set %v", d.Status.AboveSince, tc.aboveSince)
			}
			if !strings.Contains(d.Status.Reason, tc.reason) {
				t.Errorf("reason %q does not say %q", d.Status.Reason, tc.reason)
			}
			if tc.floor >= 0 && d.Floor != tc.floor {
				t.Errorf("floor %d, want %d", d.Floor, tc.floor)
			}
		})
	}
}

// A claim on an elastic pool with nothing free takes the first member above
// the size that has no objects, up to and including maxSize.
func TestClaimGrowsUpToMaxSize(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size, max int
		leftover  int // a member above the size left over, unclaimed (0: none)
		want      string
	}{
		{name: "one below maxSize: the claim takes member maxSize", size: 4, max: 5, want: "desk-5"},
		{name: "the next member left over: the claim takes member maxSize", size: 3, max: 5, leftover: 4, want: "desk-5"},
		{name: "at maxSize: no free members", size: 5, max: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			spec := elasticSpec(tc.size, 0, tc.max, 1)
			seedPool(f, "desk", spec, tc.size)
			for n := 1; n <= tc.size; n++ {
				f.add(claimAt("desk", MemberName("desk", n), fmt.Sprintf("u%d@example.com", n), testNow))
			}
			if tc.leftover > 0 {
				seedMember(f, tc.leftover, spec, StateReady)
			}
			res, err := e.Claim(context.Background(), "desk", "alice@example.com")
			if tc.want == "" {
				var nf *NoFreeMembersError
				if !errors.As(err, &nf) || nf.MaxSize != tc.max {
					t.Fatalf("Claim = %+v, %v; want NoFreeMembersError at maxSize %d", res, err, tc.max)
				}
				for _, a := range f.writes() {
					if a.Verb == "create" {
						t.Errorf("a refused claim wrote %s", a)
					}
				}
				return
			}
			if err != nil || res.Member != tc.want || !res.Grew || !res.Started {
				t.Fatalf("Claim = %+v, %v; want %s grown and started", res, err, tc.want)
			}
			l := f.lease(LeaseName(tc.want))
			if l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "alice@example.com" {
				t.Fatalf("lease of %s: %+v, want alice's claim", tc.want, l)
			}
			if f.pod(tc.want) == nil || f.pvc(PVCName(tc.want)) == nil {
				t.Fatalf("%s was not built", tc.want)
			}
		})
	}
}

// With power stopped, exactly spare free members run: the lowest Ready
// ones, and a member on a down node is no running spare (a claim is given
// it last and waits for the node). The reconcile stops the others (the
// highest first), keeps the stopped ones beyond the spare stopped, and
// starts the lowest stopped ones when short.
func TestStoppedPowerRunsTheSpare(t *testing.T) {
	down := map[string]string{"node-b": "Ready=Unknown"}
	for _, tc := range []struct {
		name    string
		states  []State  // of desk-1, desk-2, ...
		nodes   []string // the node of each member's Pod ("": node-a)
		spare   int
		stops   []string // Pod deletes, in order
		starts  []string // Pod creates
		working bool     // NeedsWork before the reconcile
	}{
		{name: "a free member on a down node is no running spare",
			states: []State{StateReady, StateReady}, nodes: []string{"node-b", ""}, spare: 1},
		{name: "a free member on a down node does not keep a stopped one from starting",
			states: []State{StateReady, StateStopped}, nodes: []string{"node-b", ""}, spare: 1,
			starts: []string{"desk-2"}, working: true},
		{name: "the lowest Ready members run; the others stop, the highest first",
			states: []State{StateReady, StateReady, StateReady}, spare: 1,
			stops: []string{"desk-3", "desk-2"}, working: true},
		{name: "a Ready member is the spare before a Starting one",
			states: []State{StateStarting, StateReady}, spare: 1,
			stops: []string{"desk-1"}, working: true},
		{name: "stopped members beyond the spare stay stopped",
			states: []State{StateReady, StateReady, StateStopped}, spare: 1,
			stops: []string{"desk-2"}, working: true},
		{name: "short of the spare: the lowest stopped members start",
			states: []State{StateReady, StateStopped, StateStopped}, spare: 2,
			starts: []string{"desk-2"}, working: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			spec := elasticSpec(len(tc.states), 0, 10, tc.spare)
			spec.Power = PowerStopped
			seedPool(f, "desk", spec, 0)
			for i, s := range tc.states {
				seedMember(f, i+1, spec, s)
				if p := f.pods[MemberName("desk", i+1)]; p != nil {
					p.Spec.NodeName = "node-a"
					if i < len(tc.nodes) && tc.nodes[i] != "" {
						p.Spec.NodeName = tc.nodes[i]
					}
				}
			}
			f.nodeDown = down
			if got := NeedsWork(Observe(mustSnapshot(t, f), testNow)); got != tc.working {
				t.Errorf("NeedsWork = %v before the reconcile, want %v", got, tc.working)
			}
			if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			var stops, starts []string
			for _, a := range f.writes() {
				switch {
				case a.Verb == "delete" && a.Kind == kPod:
					stops = append(stops, a.Name)
				case a.Verb == "create" && a.Kind == kPod:
					starts = append(starts, a.Name)
				}
			}
			if fmt.Sprint(stops) != fmt.Sprint(tc.stops) || fmt.Sprint(starts) != fmt.Sprint(tc.starts) {
				t.Fatalf("stopped %v and started %v, want %v and %v (writes %v)", stops, starts, tc.stops, tc.starts, f.writes())
			}
			if NeedsWork(Observe(mustSnapshot(t, f), testNow)) {
				t.Errorf("NeedsWork after the reconcile")
			}
		})
	}
}

// AtCeiling: at maxSize with no member free, and only then.
func TestElasticAtCeiling(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		size, max, spare, claimed int
		want                      bool
	}{
		{"at maxSize, all claimed", 3, 3, 1, 3, true},
		{"at maxSize, one free", 3, 3, 1, 2, false},
		{"below maxSize, all claimed, no spare wanted", 2, 5, 0, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", elasticSpec(tc.size, 0, tc.max, tc.spare), tc.size)
			for n := 1; n <= tc.claimed; n++ {
				f.add(claimAt("desk", MemberName("desk", n), fmt.Sprintf("u%d", n), testNow))
			}
			if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			st, err := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
			if err != nil || st.Elastic == nil {
				t.Fatalf("status %+v, %v", st, err)
			}
			if st.Elastic.Size != tc.size || st.Elastic.AtCeiling != tc.want {
				t.Fatalf("size %d atCeiling %v, want %d %v", st.Elastic.Size, st.Elastic.AtCeiling, tc.size, tc.want)
			}
		})
	}
}

// The bounds of the elastic fields are inclusive: minSize, spare and size
// may each equal maxSize, settle may be 0 or 24h, and no more or less.
func TestElasticSpecBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		field string // "" when valid
	}{
		{"minSize at maxSize", "image: a\nsize: 3\nminSize: 3\nmaxSize: 3\n", ""},
		{"spare at maxSize", "image: a\nsize: 2\nmaxSize: 5\nspare: 5\n", ""},
		{"size at maxSize", "image: a\nsize: 5\nmaxSize: 5\n", ""},
		{"size at minSize", "image: a\nsize: 2\nminSize: 2\nmaxSize: 5\n", ""},
		{"settle 24h", "image: a\nsize: 1\nmaxSize: 2\nsettle: 24h\n", ""},
		{"settle 0s", "image: a\nsize: 1\nmaxSize: 2\nsettle: 0s\n", ""},
		{"settle negative", "image: a\nsize: 1\nmaxSize: 2\nsettle: -1m\n", "settle"},
		{"settle just past 24h", "image: a\nsize: 1\nmaxSize: 2\nsettle: 24h0m1s\n", "settle"},
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

// With the power policy stopped, a reconcile that builds members beyond what
// the spare needs running builds them stopped (their PVC only): a pool grown
// past a gap runs no more than its spare even for one reconcile.
func TestStoppedPowerBuildsNewMembersStopped(t *testing.T) {
	for _, tc := range []struct {
		name        string
		running     int // free Ready members already
		size        int // the size the reconcile builds to
		wantRunning []string
		wantStopped []string
	}{
		{"the spare runs: every new member is built stopped", 2, 5, nil, []string{"el-3", "el-4", "el-5"}},
		{"short of the spare: the lowest new members run", 1, 4, []string{"el-2"}, []string{"el-3", "el-4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			spec := elasticSpec(tc.running, 0, 10, 2)
			spec.Power = PowerStopped
			seedElastic(f, spec, tc.size, tc.running)
			if _, err := e.Reconcile(context.Background(), "el"); err != nil {
				t.Fatal(err)
			}
			for _, m := range tc.wantRunning {
				if f.pod(m) == nil || f.pvc(PVCName(m)) == nil {
					t.Errorf("%s was not built running", m)
				}
			}
			for _, m := range tc.wantStopped {
				if f.pod(m) != nil || f.pvc(PVCName(m)) == nil {
					t.Errorf("%s was not built stopped (Pod %v, PVC %v)", m, f.pod(m) != nil, f.pvc(PVCName(m)) != nil)
				}
			}
		})
	}
}
