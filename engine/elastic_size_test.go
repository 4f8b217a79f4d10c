package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// seedElastic puts an elastic pool "el" into f: its definition spec, a
// recorded effective size, members 1..members Ready and the given ones
// claimed.
func seedElastic(f *fakeCluster, spec Spec, size, members int, claimed ...int) {
	cm := BuildConfigMap(testNS, "el", spec)
	cm.Data[KeyStatus] = Status{Desired: size, Elastic: &ElasticStatus{Size: size, From: spec.Size}}.Encode()
	f.add(cm)
	for n := 1; n <= members; n++ {
		p, c := readyMember("el", n, spec)
		f.add(p, c)
	}
	for _, n := range claimed {
		f.add(claimAt("el", MemberName("el", n), fmt.Sprintf("u%d", n), testNow))
	}
}

func recordedSize(t *testing.T, f *fakeCluster) int {
	t.Helper()
	rec := RecordedElastic(f.cm(ConfigMapName("el")).Data[KeyStatus])
	if rec == nil {
		t.Fatal("no elastic record")
	}
	return rec.Size
}

// A resize or an apply --size is an instruction about the effective size: it
// takes effect whether or not the definition's stored size changes.
func TestSizeGivenSetsTheEffectiveSize(t *testing.T) {
	spec := elasticSpec(3, 0, 10, 0) // the definition says 3; the pool shrank to 1
	for _, tc := range []struct {
		name string
		do   func(e *Engine) error
	}{
		{"resize to the definition's size", func(e *Engine) error {
			_, err := e.Resize(context.Background(), "el", 3)
			return err
		}},
		{"apply --size of the definition's size", func(e *Engine) error {
			_, err := e.ApplyWith(context.Background(), "el", func(s *Spec) (Spec, error) {
				n := *s
				n.Size = 3
				return n, nil
			}, ApplyOptions{SizeGiven: true})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			seedElastic(f, spec, 1, 1)
			if err := tc.do(e); err != nil {
				t.Fatal(err)
			}
			if got := recordedSize(t, f); got != 3 {
				t.Fatalf("effective size %d after the instruction, want 3", got)
			}
			for _, m := range []string{"el-2", "el-3"} {
				if f.pod(m) == nil || f.pvc(PVCName(m)) == nil {
					t.Fatalf("%s was not created", m)
				}
			}
			// A second reconcile keeps it (the settle time has not passed).
			if _, err := e.Reconcile(context.Background(), "el"); err != nil {
				t.Fatal(err)
			}
			if got := recordedSize(t, f); got != 3 {
				t.Fatalf("effective size %d after a reconcile, want 3", got)
			}
		})
	}
	t.Run("an apply without --size keeps the effective size", func(t *testing.T) {
		e, f := newEngine()
		seedElastic(f, spec, 1, 1)
		if _, err := e.ApplyWith(context.Background(), "el", func(s *Spec) (Spec, error) {
			n := *s
			n.Settle = "5m"
			return n, nil
		}, ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := recordedSize(t, f); got != 1 {
			t.Fatalf("effective size %d, want 1 (no size was given)", got)
		}
	})
}

// --max-size=0 fixes the pool at its effective size (never below a claimed
// member), not at the size its definition started from: nothing is deleted.
func TestElasticOffKeepsTheEffectiveSize(t *testing.T) {
	off := func(s *Spec) (Spec, error) { return s.Fixed(s.Size), nil }
	for _, tc := range []struct {
		name      string
		size      int // effective
		members   int
		claimed   []int
		sizeGiven int // 0: none
		want      int
	}{
		{"effective 8 with members 4 and 5 claimed", 8, 8, []int{4, 5}, 0, 8},
		{"a claim above the size not yet taken in", 3, 5, []int{5}, 0, 5},
		{"a size given wins", 8, 8, nil, 6, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			seedElastic(f, elasticSpec(3, 0, 10, 1), tc.size, tc.members, tc.claimed...)
			edit, opts := off, ApplyOptions{}
			if tc.sizeGiven > 0 {
				edit = func(s *Spec) (Spec, error) { return s.Fixed(tc.sizeGiven), nil }
				opts.SizeGiven = true
			}
			res, err := e.ApplyWith(context.Background(), "el", edit, opts)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := ParseSpec(f.cm(ConfigMapName("el")).Data[KeySpec])
			if err != nil {
				t.Fatal(err)
			}
			if stored.Elastic() || stored.Size != tc.want || res.Spec.Size != tc.want {
				t.Fatalf("stored %+v (result %d), want a fixed pool of %d", stored, res.Spec.Size, tc.want)
			}
			for _, a := range f.writes() {
				if a.Verb == "delete" && (a.Kind == kPod || a.Kind == kPVC) && memberIndexOf(a.Name) <= tc.want {
					t.Errorf("deleted %s", a)
				}
			}
			for n := 1; n <= tc.want; n++ {
				if f.pod(MemberName("el", n)) == nil {
					t.Errorf("el-%d has no Pod", n)
				}
			}
		})
	}
}

func memberIndexOf(name string) int {
	if n, ok := MemberFromPVCName(name); ok {
		name = n
	}
	i, _ := MemberIndex("el", name)
	return i
}

// interleaved runs before once, just ahead of the first status write: as
// another reconciler writing its own decision while this one worked.
type interleaved struct {
	*fakeCluster
	before func()
}

func (c *interleaved) hook() {
	if c.before != nil {
		b := c.before
		c.before = nil
		b()
	}
}

func (c *interleaved) PatchConfigMapData(ctx context.Context, name, key, value string) error {
	c.hook()
	return c.fakeCluster.PatchConfigMapData(ctx, name, key, value)
}

func (c *interleaved) PatchConfigMap(ctx context.Context, name, rv string, labels, data map[string]string) error {
	c.hook()
	return c.fakeCluster.PatchConfigMap(ctx, name, rv, labels, data)
}

// Two reconcilers start on an elastic pool at 3 with no free member; one
// grows it to 7 and records that while the other works; the other, which
// decided 5, must not write 5 over 7 (a shrink with no settle time).
func TestElasticDecisionNeverOverwritesANewerOne(t *testing.T) {
	spec := elasticSpec(3, 1, 10, 2)
	e, f := newEngine()
	seedElastic(f, spec, 3, 3, 1, 2, 3)
	other := Status{Desired: 7, Elastic: &ElasticStatus{Size: 7, From: 3, Reason: "grew from 3 to 7: another reconciler"}}.Encode()
	e.Cluster = &interleaved{fakeCluster: f, before: func() {
		if err := f.PatchConfigMapData(context.Background(), ConfigMapName("el"), KeyStatus, other); err != nil {
			t.Fatal(err)
		}
	}}
	res, err := e.Reconcile(context.Background(), "el")
	if err != nil {
		t.Fatal(err)
	}
	if got := recordedSize(t, f); got != 7 {
		t.Fatalf("recorded size %d after the reconcile, want the other reconciler's 7 kept", got)
	}
	if !res.StatusWritten {
		t.Fatal("the reconcile wrote no status at all")
	}
	// Without the interleaving the same reconcile decides 5.
	e2, f2 := newEngine()
	seedElastic(f2, spec, 3, 3, 1, 2, 3)
	if _, err := e2.Reconcile(context.Background(), "el"); err != nil {
		t.Fatal(err)
	}
	if got := recordedSize(t, f2); got != 5 {
		t.Fatalf("recorded size %d, want 5 (3 claimed, spare 2)", got)
	}
}

// An elastic pool whose status was recorded while its members waited for
// their PVCs (Unschedulable) and that are Ready by now: a claim takes one of
// them rather than growing the pool past a desktop that is ready.
func TestClaimTakesAMemberRecordedUnschedulableThatIsFreeNow(t *testing.T) {
	spec := elasticSpec(3, 0, 40, 3)
	e, f := newEngine()
	cm := BuildConfigMap(testNS, "el", spec)
	st := Status{Desired: 3, Observed: 3, Unschedulable: 3, Source: spec.SourceHash(), Elastic: &ElasticStatus{Size: 3, From: 3}}
	for n := 1; n <= 3; n++ {
		st.Members = append(st.Members, MemberRow{Name: MemberName("el", n), State: StateUnschedulable})
	}
	cm.Data[KeyStatus] = st.Encode()
	f.add(cm)
	for n := 1; n <= 3; n++ {
		p, c := readyMember("el", n, spec)
		f.add(p, c)
	}
	res, err := e.Claim(context.Background(), "el", "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if idx, _ := MemberIndex("el", res.Member); idx < 1 || idx > 3 || res.Grew {
		t.Fatalf("claim got %s (grew %v), want one of the three Ready members", res.Member, res.Grew)
	}
}

// Claims one after the other on an elastic pool whose recorded status was
// written before any of them (no reconcile between): the first take the
// members the status calls free, losing races to the claims before them
// (the status is stale, no one else is claiming), and the rest grow the
// pool one member each. None of them saw a claim made while it ran, so each
// takes the first member above the size: the pool ends at exactly the
// claims, and the reconcile takes it to the claims plus the spare. (With a
// window widened by races lost on a stale status, five claims from three
// free members reached member 10 of a ceiling of 10.)
func TestSequentialClaimsGrowAnElasticPoolByOneEach(t *testing.T) {
	for _, users := range []int{5, 12} {
		t.Run(fmt.Sprintf("%d claims", users), func(t *testing.T) {
			spec := elasticSpec(3, 0, 20, 2)
			e, f := newEngine()
			seedPool(f, "el", spec, 3)
			if _, err := e.Reconcile(context.Background(), "el"); err != nil {
				t.Fatal(err)
			}
			got := map[int]bool{}
			for u := range users {
				res, err := e.Claim(context.Background(), "el", fmt.Sprintf("u%d@example.com", u))
				if err != nil {
					t.Fatal(err)
				}
				idx, _ := MemberIndex("el", res.Member)
				if idx > 3 && !res.Grew || idx <= 3 && res.Grew {
					t.Errorf("u%d got %s, grew %v", u, res.Member, res.Grew)
				}
				got[idx] = true
			}
			for i := 1; i <= users; i++ {
				if !got[i] {
					t.Fatalf("the claims took %v, want members 1 to %d", sortedInts(got), users)
				}
			}
			if _, err := e.Reconcile(context.Background(), "el"); err != nil {
				t.Fatal(err)
			}
			if n := recordedSize(t, f); n != users+2 {
				t.Fatalf("recorded size %d, want %d (%d claimed, spare 2)", n, users+2, users)
			}
		})
	}
}

func sortedInts(set map[int]bool) []int {
	var out []int
	for i := range set {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// A claim that grows an elastic pool from a status written before a
// reconciler added spare members takes the first such member (built, free)
// rather than passing it over for an empty one above: passed over, it
// stayed free below the claims for the rest of the day.
func TestGrowingClaimTakesASpareMemberBuiltSinceTheStatus(t *testing.T) {
	spec := elasticSpec(3, 0, 20, 1)
	e, f := newEngine()
	seedPool(f, "el", spec, 3)
	if _, err := e.Reconcile(context.Background(), "el"); err != nil {
		t.Fatal(err)
	}
	// Three claims since, and a reconciler's spare member 4, built but not
	// yet in the recorded status.
	for n := 1; n <= 3; n++ {
		f.add(claimAt("el", MemberName("el", n), fmt.Sprintf("u%d@example.com", n), testNow))
	}
	p, c := readyMember("el", 4, spec)
	f.add(p, c)
	res, err := e.Claim(context.Background(), "el", "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if res.Member != "el-4" || res.Started {
		t.Fatalf("claim = %+v, want el-4, already built (not started)", res)
	}
	if f.pod("el-5") != nil {
		t.Fatal("the claim built el-5")
	}
}
