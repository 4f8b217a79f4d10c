package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Taking a member's reconciler Lease is pipelined: while a worker works on a
// member it takes the Lease of its next one.
func TestReconcileTakesTheNextLeaseAhead(t *testing.T) {
	e, f := newEngine() // one worker
	seedPool(f, "desk", baseSpec(3), 0)
	taken := make(chan struct{})
	var once sync.Once
	var overlapped atomic.Bool
	f.hook = func(a act) {
		switch a {
		case act{"create", kLease, LeaseName("desk-2")}:
			once.Do(func() { close(taken) })
		case act{"create", kPod, "desk-1"}:
			select {
			case <-taken:
				overlapped.Store(true)
			case <-time.After(10 * time.Second): // a guard, not a measurement: fail instead of hanging
			}
		}
	}
	res, err := e.Reconcile(context.Background(), "desk")
	if err != nil || res.Done() != 3 {
		t.Fatalf("Reconcile = %v, done %d", err, res.Done())
	}
	if !overlapped.Load() {
		t.Fatal("the Lease of desk-2 was not taken while desk-1 was being created")
	}
	for _, m := range []string{"desk-1", "desk-2", "desk-3"} {
		w := memberWrites(f.writes(), m)
		if w[0] != (act{"create", kLease, LeaseName(m)}) || w[len(w)-1] != (act{"delete", kLease, LeaseName(m)}) {
			t.Fatalf("writes on %s do not start by taking the Lease and end by removing it: %v", m, w)
		}
	}
	if _, _, leases := f.count(); leases != 0 {
		t.Fatalf("%d leases left", leases)
	}
}

// A Lease taken ahead is removed too when the reconcile is cancelled before
// its member's work begins: no member keeps a reconciler Lease.
func TestReconcileCancelledRemovesLeasesTakenAhead(t *testing.T) {
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
