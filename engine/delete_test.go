package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A claim is removed only by its release: delete names the claimed member
// and keeps its Lease, also when the member's Pod and PVC are gone.
func TestDeleteNeverRemovesAClaim(t *testing.T) {
	tests := []struct {
		name    string
		objects bool // the member still has its Pod and PVC
	}{
		{"Pod and PVC gone", false},
		{"Pod and PVC there", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			spec := baseSpec(2)
			seedPool(f, "desk", spec, 0)
			if tt.objects {
				p, c := readyMember("desk", 1, spec)
				f.add(p, c)
			}
			f.add(claimAt("desk", "desk-1", "alice", testNow.Add(-time.Minute)))
			_, err := e.Delete(context.Background(), "desk")
			errIs(t, err, ErrClaimed)
			if !strings.Contains(err.Error(), `desk-1 (claimed by "alice")`) {
				t.Fatalf("error %q does not name the claimed member", err)
			}
			if f.lease(LeaseName("desk-1")) == nil {
				t.Fatal("delete removed the claim Lease")
			}
			if f.cm(ConfigMapName("desk")) == nil {
				t.Fatal("delete removed the definition")
			}
			if tt.objects && (f.pod("desk-1") == nil || f.pvc("desk-1-data") == nil) {
				t.Fatal("delete destroyed the claimed member")
			}
		})
	}
}

// Objects that carry the pool label but are not its members never block a
// delete and are never touched; the result lists them.
func TestDeleteLeavesNonMembersAlone(t *testing.T) {
	e, f := newEngine()
	spec := baseSpec(1)
	seedPool(f, "desk", spec, 1)
	scratch := &corev1.PersistentVolumeClaim{}
	scratch.Name, scratch.Labels = "scratch", PoolLabels("desk")
	stray := readyPod(BuildPod(testNS, "desk", 1, spec))
	stray.Name, stray.Labels[LabelMember] = "desk-x", "desk-x"
	f.add(scratch, stray)

	res, err := e.Delete(context.Background(), "desk")
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	want := []string{"pod/desk-x, not a member", "pvc/scratch, not a member"}
	if !slices.Equal(res.LeftAlone, want) {
		t.Fatalf("left alone %q, want %q", res.LeftAlone, want)
	}
	if f.pvc("scratch") == nil || f.pod("desk-x") == nil {
		t.Fatal("delete touched an object that is not a member")
	}
	for _, a := range f.writes() {
		if a.Name == "scratch" || a.Name == "desk-x" {
			t.Fatalf("delete wrote %v", a)
		}
	}
	if f.pod("desk-1") != nil || f.cm(ConfigMapName("desk")) != nil {
		t.Fatal("the member or the definition is still there")
	}
}
