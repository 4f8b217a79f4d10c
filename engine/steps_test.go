package engine

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
)

// A Lease taken is removed too when the reconcile is cancelled during its
// member's work: no member keeps a reconciler Lease.
func TestReconcileCancelledRemovesLeases(t *testing.T) {
	e, f := newEngine()
	e.Concurrency = 2
	seedPool(f, "desk", baseSpec(8), 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.hook = func(a act) {
		if a == (act{"create", kLease, LeaseName("desk-3")}) {
			cancel()
		}
	}
	res, err := e.Reconcile(ctx, "desk")
	if err == nil {
		t.Fatal("a cancelled reconcile succeeded")
	}
	if _, _, leases := f.count(); leases != 0 {
		t.Fatalf("%d leases left after a cancelled reconcile", leases)
	}
	if len(res.Actions) != 8 {
		t.Fatalf("%d actions, want one for each of the 8 members: %+v", len(res.Actions), res.Actions)
	}
	for _, a := range res.Actions {
		if a.Err == nil && a.Skipped == "" {
			if n := len(memberWrites(f.writes(), a.Member)); n == 0 {
				t.Errorf("%s counted as done without a write", a.Member)
			}
		}
	}
}

// A failed step still removes the Lease, and a failed removal is the
// member's error.
func TestReconcileRemovalFailure(t *testing.T) {
	e, f := newEngine()
	e.Concurrency = 4
	seedPool(f, "desk", baseSpec(6), 0)
	f.fail("create", kPod, "desk-2", errBoom, 0)
	f.fail("delete", kLease, LeaseName("desk-5"), errBoom, 0)
	res, err := e.Reconcile(context.Background(), "desk")
	if err == nil {
		t.Fatal("Reconcile succeeded with a failing Pod create and Lease removal")
	}
	want := map[string]string{"desk-2": "create desk-2: create Pod: boom", "desk-5": "create desk-5: remove lease: boom"}
	if len(res.Errors) != 2 || res.Errors[0] != want["desk-2"] || res.Errors[1] != want["desk-5"] {
		t.Fatalf("errors %q, want %q", res.Errors, want)
	}
	if f.lease(LeaseName("desk-2")) != nil {
		t.Error("the Lease of the failed desk-2 was left behind")
	}
	if res.Done() != 4 {
		t.Errorf("%d members done, want 4", res.Done())
	}
}

// A reconcile step keeps exactly Concurrency requests in flight while every
// worker has a member to work on, and never more: each worker sends one
// request at a time, the same pipe as a plain client loop of as many workers.
// The member writes are held at a gate until every goroutine of the
// reconcile is blocked (synctest.Wait); then the writes held are the
// requests in flight, and the gate opens for the next round.
func TestReconcileKeepsConcurrencyRequestsInFlight(t *testing.T) {
	const members, limit = 24, 4
	synctest.Test(t, func(t *testing.T) {
		e, f := newEngine()
		e.Concurrency = limit
		seedPool(f, "desk", baseSpec(members), 0)
		var (
			mu   sync.Mutex
			held int // member writes waiting at the gate
			gate = make(chan struct{})
		)
		f.hook = func(a act) {
			if (a.Verb != "create" && a.Verb != "delete") || (a.Kind != kLease && a.Kind != kPVC && a.Kind != kPod) {
				return
			}
			mu.Lock()
			held++
			g := gate
			mu.Unlock()
			<-g
		}
		done := make(chan error, 1)
		go func() { _, err := e.Reconcile(context.Background(), "desk"); done <- err }()
		var rounds []int
		for {
			synctest.Wait()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				full := 0
				for _, n := range rounds {
					if n > limit {
						t.Fatalf("%d member writes in flight at once, bound %d (rounds %v)", n, limit, rounds)
					}
					if n == limit {
						full++
					}
				}
				// 4 writes per member: all but the last few rounds are full.
				if want := members*4/limit - limit; full < want {
					t.Fatalf("%d rounds with %d writes in flight, want at least %d (rounds %v)", full, limit, want, rounds)
				}
				if _, _, l := f.count(); l != 0 {
					t.Fatalf("%d leases left", l)
				}
				return
			default:
			}
			mu.Lock()
			if held == 0 {
				mu.Unlock()
				t.Fatalf("the reconcile is blocked with no write held (rounds %v)", rounds)
			}
			rounds = append(rounds, held)
			close(gate)
			gate, held = make(chan struct{}), 0
			mu.Unlock()
		}
	})
}
