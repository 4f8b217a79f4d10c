package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The removal of a member's reconciler Lease is pipelined: the next member
// starts while the Lease of the previous one is being deleted. Every member's
// writes still begin by taking its Lease and end by removing it, the member's
// action is recorded once its Lease is gone, and Reconcile returns with no
// Lease left.
func TestReconcilePipelinesLeaseRemoval(t *testing.T) {
	e, f := newEngine() // one member at a time
	seedPool(f, "desk", baseSpec(3), 0)
	secondStarted := make(chan struct{})
	var once sync.Once
	var waitedFor atomic.Bool
	f.hook = func(a act) {
		switch a {
		case act{"create", kLease, LeaseName("desk-2")}:
			once.Do(func() { close(secondStarted) })
		case act{"delete", kLease, LeaseName("desk-1")}:
			select {
			case <-secondStarted:
				waitedFor.Store(true)
			case <-time.After(10 * time.Second): // a guard, not a measurement: fail instead of hanging
			}
		}
	}
	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil || res.Done() != 3 {
		t.Fatalf("Reconcile = %v, done %d", err, res.Done())
	}
	if !waitedFor.Load() {
		t.Fatal("desk-2 did not start while the Lease of desk-1 was being removed")
	}
	if _, _, leases := f.count(); leases != 0 {
		t.Fatalf("%d leases left", leases)
	}
	for _, m := range []string{"desk-1", "desk-2", "desk-3"} {
		w := memberWrites(f.writes(), m)
		if w[0] != (act{"create", kLease, LeaseName(m)}) || w[len(w)-1] != (act{"delete", kLease, LeaseName(m)}) {
			t.Fatalf("writes on %s do not start by taking the Lease and end by removing it: %v", m, w)
		}
	}
}

// A failed step still removes the Lease, pipelined or not, and a failed
// removal is the member's error.
func TestReconcilePipelinedRemovalFailure(t *testing.T) {
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

// At most Concurrency Lease removals are in flight: a slow removal holds
// back new members rather than piling up.
func TestReconcileBoundsPendingLeaseRemovals(t *testing.T) {
	const members, limit = 12, 2
	e, f := newEngine()
	e.Concurrency = limit
	seedPool(f, "desk", baseSpec(members), 0)
	var inHook, peak, entered, pods atomic.Int64
	release := make(chan struct{}, members)
	events := make(chan struct{}, 4*members)
	f.hook = func(a act) {
		switch {
		case a.Verb == "create" && a.Kind == kPod:
			pods.Add(1)
			events <- struct{}{}
		case a.Verb == "delete" && a.Kind == kLease:
			n := inHook.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			entered.Add(1)
			events <- struct{}{}
			select {
			case <-release:
			case <-time.After(10 * time.Second): // a guard against a hang, not a measurement
			}
			inHook.Add(-1)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := e.Reconcile(context.Background(), "desk"); done <- err }()
	// Hold every removal back until the bound is reached, or until every
	// member has done its work and only removals are left.
	released := int64(0)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if p := peak.Load(); p > limit {
				t.Fatalf("%d Lease removals in flight at once, bound %d", p, limit)
			}
			if p := peak.Load(); p < limit {
				t.Fatalf("at most %d Lease removal in flight: the removal is not pipelined", p)
			}
			if _, _, leases := f.count(); leases != 0 {
				t.Fatalf("%d leases left", leases)
			}
			return
		case <-events:
		}
		for {
			waiting := entered.Load() - released
			if waiting < limit && (waiting == 0 || pods.Load() < members) {
				break
			}
			release <- struct{}{}
			released++
		}
	}
}
