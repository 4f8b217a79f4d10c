package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A claimed member is started (its Pod, and its PVC when missing) without a
// reconciler Lease. A release that takes the claim after the start checked it,
// and reads the member before the start's creates land, would not delete what
// the start creates, and would wait for a PVC that the new Pod keeps. The
// start reads the claim again after creating and removes what it created when
// the claim is no longer its holder's.
func TestClaimedStartRacesARelease(t *testing.T) {
	spec := baseSpec(1)
	boom := errors.New("connection refused")
	for _, tc := range []struct {
		name      string
		state     State // the claimed member before the start (Stopped or Missing)
		claim     bool  // started by Claim (the holder's own) rather than Reconcile
		meanwhile func(f *fakeCluster)
		kept      bool   // what the start created stays
		wantErr   string // Claim's error, or the reconcile action's
	}{
		{name: "claim kept", state: StateStopped, kept: true},
		{name: "claim renewed meanwhile", state: StateStopped, kept: true, meanwhile: func(f *fakeCluster) {
			f.add(renewLease(f.lease(LeaseName("desk-1")), testNow.Add(ClaimDuration/2)))
		}},
		{name: "released meanwhile, the release deleting the data", state: StateStopped, meanwhile: releasing(true)},
		// The release's own destroy deletes whatever Pod the member has once
		// its PVC is deleted (TestReleaseDeletesAPodStartedAfterItsRead).
		{name: "released meanwhile, the release not at the data yet", state: StateStopped, kept: true, meanwhile: releasing(false)},
		// A PVC the start creates is brand new: only a Lease holder deletes data.
		{name: "released meanwhile, member missing (its new PVC and Pod kept)", state: StateMissing, kept: true, meanwhile: releasing(false)},
		// A release that finished meanwhile waited for the old PVC to go,
		// which this Pod would have kept: the Pod is the new member's.
		{name: "released and claimed by another identity meanwhile", state: StateStopped, kept: true, meanwhile: func(f *fakeCluster) {
			f.mu.Lock()
			delete(f.leases, LeaseName("desk-1"))
			f.mu.Unlock()
			f.add(claimAt("desk", "desk-1", "bob", testNow))
		}},
		{name: "released and done meanwhile (no Lease)", state: StateStopped, kept: true, meanwhile: func(f *fakeCluster) {
			f.mu.Lock()
			delete(f.leases, LeaseName("desk-1"))
			f.mu.Unlock()
		}},
		{name: "the claim's own start, released by an administrator meanwhile", state: StateStopped, claim: true, wantErr: "claim changed meanwhile", meanwhile: releasing(true)},
		{name: "the check fails: nothing is stopped on a guess", state: StateStopped, kept: true, wantErr: "check the claim after starting", meanwhile: func(f *fakeCluster) {
			f.fail("get", kLease, LeaseName("desk-1"), boom, 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newEngine()
			f.add(BuildConfigMap(testNS, "desk", spec))
			seedMember(f, 1, spec, tc.state)
			f.add(claimAt("desk", "desk-1", "alice", testNow))
			var before *corev1.PersistentVolumeClaim
			if c := f.pvc("desk-1-data"); c != nil {
				before = c
			}
			f.hook = func(a act) {
				if a.Verb == "create" && a.Kind == kPod && tc.meanwhile != nil {
					f.hook = nil
					tc.meanwhile(f)
				}
			}
			var err error
			if tc.claim {
				_, err = e.Claim(context.Background(), "desk", "alice")
			} else {
				var res ReconcileResult
				res, err = e.Reconcile(context.Background(), "desk")
				for _, a := range res.Actions {
					switch {
					case a.Member != "desk-1":
					case a.Err != nil && err == nil:
						err = a.Err
					case a.Skipped != "" && tc.kept:
						t.Errorf("the start was skipped (%s) though the claim was kept", a.Skipped)
					case a.Skipped == "" && a.Err == nil && !tc.kept:
						t.Errorf("action %s on desk-1 reported done though the claim had changed", a.Step)
					}
				}
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
			pod, pvc := f.pod("desk-1"), f.pvc("desk-1-data")
			if tc.kept {
				if pod == nil || pvc == nil {
					t.Fatalf("the claimed member was not started (Pod %v, PVC %v)", pod != nil, pvc != nil)
				}
				return
			}
			if pod != nil {
				t.Fatal("the Pod started for a claim that changed meanwhile is still there")
			}
			if pvc == nil || (before != nil && pvc.UID != before.UID) {
				t.Fatal("a PVC went without the member's Lease")
			}
			if hasAct(f.writes(), "delete", kPVC, "desk-1-data") {
				t.Fatal("the start deleted a PVC")
			}
		})
	}
}

// releasing is a release that took the member's Lease meanwhile and, with
// atData, has marked and deleted its PVC (held Terminating by the Pod).
func releasing(atData bool) func(f *fakeCluster) {
	return func(f *fakeCluster) {
		f.add(setLeaseHolder(f.lease(LeaseName("desk-1")), ReconcilerIdentity, ReconcilerLeaseTTL, testNow))
		if !atData {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		c := f.pvcs["desk-1-data"]
		now := metav1.NewTime(testNow)
		c.DeletionTimestamp = &now
		c.Annotations = map[string]string{AnnotationReleased: "true"}
	}
}

// The release's side of the same race: a claimed start that checked the claim
// before the release took it creates a Pod after the release read the member
// (here a stopped one, so the release saw no Pod). The release deletes
// whatever Pod the member has once its PVC is deleted, so that Pod neither
// keeps the released PVC nor survives on the rebuilt member.
func TestReleaseDeletesAPodStartedAfterItsRead(t *testing.T) {
	spec := baseSpec(1)
	e, f := newEngine()
	f.add(BuildConfigMap(testNS, "desk", spec))
	seedMember(f, 1, spec, StateStopped)
	f.add(claimAt("desk", "desk-1", "alice", testNow))
	var started *corev1.Pod
	f.hook = func(a act) {
		if a == (act{"delete", kPVC, "desk-1-data"}) {
			f.hook = nil
			p, _ := readyMember("desk", 1, spec)
			f.add(p)
			started = f.pod("desk-1")
		}
	}
	if _, err := e.Release(context.Background(), "desk", "desk-1", "alice"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if started == nil {
		t.Fatal("the start was not simulated")
	}
	if p := f.pod("desk-1"); p == nil || p.UID == started.UID {
		t.Fatalf("the Pod started after the release's read survived it (or the member has no Pod: %v)", p == nil)
	}
	if f.lease(LeaseName("desk-1")) != nil {
		t.Fatal("the Lease is still there")
	}
}
