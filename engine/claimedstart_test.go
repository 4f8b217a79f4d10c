package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
		{name: "released meanwhile (the Lease passed to the reconciler)", state: StateStopped, meanwhile: func(f *fakeCluster) {
			f.add(setLeaseHolder(f.lease(LeaseName("desk-1")), ReconcilerIdentity, ReconcilerLeaseTTL, testNow))
		}},
		// The new PVC stays (only a Lease holder deletes data): the release
		// at work adopts it or deletes it under its Lease.
		{name: "released meanwhile, member missing (the Pod removed, the new PVC kept)", state: StateMissing, meanwhile: func(f *fakeCluster) {
			f.add(setLeaseHolder(f.lease(LeaseName("desk-1")), ReconcilerIdentity, ReconcilerLeaseTTL, testNow))
		}},
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
		{name: "the claim's own start, released by an administrator meanwhile", state: StateStopped, claim: true, wantErr: "claim changed meanwhile", meanwhile: func(f *fakeCluster) {
			f.add(setLeaseHolder(f.lease(LeaseName("desk-1")), ReconcilerIdentity, ReconcilerLeaseTTL, testNow))
		}},
		{name: "the check fails: nothing is stopped on a guess", state: StateStopped, kept: true, wantErr: "check the claim after starting", meanwhile: func(f *fakeCluster) {
			f.fail("list", kLease, "desk", boom, 1)
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
				if a.Verb == "create" && tc.meanwhile != nil {
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
				t.Fatal("a PVC was deleted without the member's Lease")
			}
			if hasAct(f.writes(), "delete", kPVC, "desk-1-data") {
				t.Fatal("the start deleted a PVC")
			}
		})
	}
}
