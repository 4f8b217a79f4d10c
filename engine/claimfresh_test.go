package engine

import (
	"context"
	"errors"
	"testing"
)

// Claim decides whether to start the member it won from a fresh read of the
// member, not from the read before the win: a Pod lost between the two is
// started (its PVC too, when that went as well), and a Pod that appeared
// meanwhile is not created again.
func TestClaimDecidesOnAFreshRead(t *testing.T) {
	spec := baseSpec(1)
	for _, tc := range []struct {
		name      string
		state     State              // the member at the claim's first read
		meanwhile func(*fakeCluster) // between that read and the win
		started   bool
		createPod bool // the claim sends a create of the Pod
		warn      bool
	}{
		{name: "the Pod vanished", state: StateReady, started: true, createPod: true, meanwhile: func(f *fakeCluster) {
			f.mu.Lock()
			delete(f.pods, "desk-1")
			f.mu.Unlock()
		}},
		{name: "the Pod and the PVC vanished", state: StateReady, started: true, createPod: true, meanwhile: func(f *fakeCluster) {
			f.mu.Lock()
			delete(f.pods, "desk-1")
			delete(f.pvcs, "desk-1-data")
			f.mu.Unlock()
		}},
		{name: "a stopped member's Pod came back", state: StateStopped, meanwhile: func(f *fakeCluster) {
			p, _ := readyMember("desk", 1, spec)
			f.add(p)
		}},
		{name: "nothing changed", state: StateReady},
		{name: "the fresh read fails: decided on the first, with a warning", state: StateStopped, started: true, createPod: true, warn: true, meanwhile: func(f *fakeCluster) {
			f.fail("get", kPod, "desk-1", errors.New("connection refused"), 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			f.add(BuildConfigMap(testNS, "desk", spec))
			seedMember(f, 1, spec, tc.state)
			f.hook = func(a act) {
				if a == (act{"create", kLease, LeaseName("desk-1")}) && tc.meanwhile != nil {
					tc.meanwhile(f)
				}
			}
			res, err := e.Claim(context.Background(), "desk", "alice")
			if err != nil || res.Member != "desk-1" {
				t.Fatalf("Claim = %+v, %v", res, err)
			}
			if got := len(res.Warnings) > 0; got != tc.warn {
				t.Fatalf("warnings %q", res.Warnings)
			}
			if res.Started != tc.started {
				t.Fatalf("Started = %v, want %v", res.Started, tc.started)
			}
			if got := hasAct(f.writes(), "create", kPod, "desk-1"); got != tc.createPod {
				t.Fatalf("create Pod sent: %v, want %v (writes %v)", got, tc.createPod, f.writes())
			}
			if f.pod("desk-1") == nil || f.pvc("desk-1-data") == nil {
				t.Fatal("the claimed member has no Pod or no PVC")
			}
			if got := f.pvc("desk-1-data").Annotations[AnnotationAssignedTo]; got != "alice" {
				t.Fatalf("%s = %q", AnnotationAssignedTo, got)
			}
		})
	}
}
