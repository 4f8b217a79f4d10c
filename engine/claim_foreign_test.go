package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A claim never takes a member whose name is held by an object the pool did
// not make (DECISIONS, "Objects the engine did not make"): the snapshot
// holds only labelled objects, so the claim's fresh read of the member by
// name decides. The member is skipped, its objects untouched and its Lease
// given back; the claim takes the next member, or names the block when none
// is left.
func TestClaimSkipsAMemberHeldByAForeignObject(t *testing.T) {
	foreignPVC := func(labels map[string]string) func(*fakeCluster) {
		return func(f *fakeCluster) {
			f.add(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "el-2-data", Namespace: testNS, Labels: labels}})
		}
	}
	cases := []struct {
		name    string
		foreign func(*fakeCluster)
		kind    string // of the foreign object
		why     string
	}{
		{"an unlabelled PVC", foreignPVC(nil), kPVC, "pvc el-2-data exists and is not this pool's member (it has no pool labels)"},
		{"another pool's PVC", foreignPVC(map[string]string{LabelPool: "other", LabelMember: "other-2"}), kPVC, "pvc el-2-data exists and is not this pool's member (it is labelled " + LabelPool + "=other)"},
		{"an unlabelled Pod", func(f *fakeCluster) {
			f.add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "el-2", Namespace: testNS}})
		}, kPod, "pod el-2 exists and is not this pool's member (it has no pool labels)"},
	}
	for _, tc := range cases {
		// A full elastic pool at size 1 (el-1 claimed): the claim grows the
		// pool, and el-2, the first index above the size, is not the pool's.
		seed := func(t *testing.T, maxSize int) (*Engine, *fakeCluster, *corev1.ConfigMap) {
			e, f := newEngine()
			spec := elasticSpec(1, 0, maxSize, 0)
			cm := BuildConfigMap(testNS, "el", spec)
			cm.Data[KeyStatus] = Status{Elastic: &ElasticStatus{Size: 1, From: 1}}.Encode()
			f.add(cm)
			p, c := readyMember("el", 1, spec)
			f.add(p, c, claimAt("el", "el-1", "alice", testNow))
			tc.foreign(f)
			return e, f, cm
		}
		foreignRV := func(f *fakeCluster) string {
			if tc.kind == kPVC {
				return f.pvc("el-2-data").ResourceVersion
			}
			return f.pod("el-2").ResourceVersion
		}
		t.Run(tc.name+": the claim moves on", func(t *testing.T) {
			e, f, _ := seed(t, 3)
			rv := foreignRV(f)
			res, err := e.Claim(context.Background(), "el", "bob")
			if err != nil || res.Member != "el-3" || !res.Grew {
				t.Fatalf("Claim = %+v, %v; want el-3, grown", res, err)
			}
			for _, a := range f.writes() {
				if a.Name == "el-2" || a.Name == "el-2-data" {
					t.Errorf("wrote the foreign member's object: %s", a)
				}
			}
			if foreignRV(f) != rv {
				t.Fatal("the foreign object changed")
			}
			if l := f.lease(LeaseName("el-2")); l != nil {
				t.Fatalf("the blocked member's Lease was kept: holder %q", *l.Spec.HolderIdentity)
			}
			if p := f.pod("el-3"); p == nil || p.Labels[LabelPool] != "el" {
				t.Fatal("el-3 was not started")
			}
		})
		t.Run(tc.name+": nothing else left, the block is named", func(t *testing.T) {
			e, f, _ := seed(t, 2)
			rv := foreignRV(f)
			_, err := e.Claim(context.Background(), "el", "bob")
			var nf *NoFreeMembersError
			if !errors.As(err, &nf) || !strings.Contains(err.Error(), "blocked, left alone: el-2: "+tc.why) {
				t.Fatalf("Claim = %v; want no free members naming the block %q", err, tc.why)
			}
			if foreignRV(f) != rv || f.lease(LeaseName("el-2")) != nil {
				t.Fatal("the blocked member was touched or its Lease kept")
			}
			for _, a := range f.writes() {
				if a.Verb != "create" && a.Verb != "delete" || a.Kind != kLease {
					t.Errorf("a write beside the Lease given back: %s", a)
				}
			}
		})
	}

	// A free member of a fixed pool, Stopped (its PVC and no Pod in the
	// snapshot), whose Pod name an unlabelled Pod holds: the claim must not
	// answer it (its "desktop" is someone else's Pod).
	t.Run("a stopped free member whose Pod name is taken", func(t *testing.T) {
		e, f := newEngine()
		spec := baseSpec(2)
		seedPool(f, "desk", spec, 0)
		seedMember(f, 1, spec, StateStopped)
		seedMember(f, 2, spec, StateStopped)
		f.add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "desk-1", Namespace: testNS}})
		f.add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "desk-2", Namespace: testNS}})
		_, err := e.Claim(context.Background(), "desk", "bob")
		if !errors.Is(err, ErrNoFreeMembers) || !strings.Contains(err.Error(), "desk-1: pod desk-1 exists") || !strings.Contains(err.Error(), "desk-2: pod desk-2 exists") {
			t.Fatalf("Claim = %v; want both members blocked", err)
		}
		for _, a := range f.writes() {
			if a.Kind != kLease {
				t.Errorf("wrote %s", a)
			}
		}
	})
}
