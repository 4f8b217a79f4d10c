package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// ---------------------------------------------------------------------------
// The churn: claims made and given back at a steady rate while the tool
// shows the pool.

// churnMembers is how many members (odd ones, not claimed at rest, from the
// top of the pool: never the member of a run's claim) the churn cycles
// through.
const churnMembers = 100

// churnLife is how many changes after its create a churn claim is deleted:
// at rate changes a second, half of them creates, a claim lives
// churnLife/rate seconds and about churnLife/2 are held at any time.
const churnLife = 20

// churnMember is the member of the j-th claim of the churn.
func churnMember(c config, j int) string {
	top := c.members
	if top%2 == 0 {
		top-- // the highest odd member
	}
	return engine.MemberName(c.pool, top-2*(j%churnMembers))
}

// churnResult is what a churn window did.
type churnResult struct {
	changes  int           // creates and deletes that succeeded
	failed   int           // those that failed (told in the log)
	elapsed  time.Duration // the window
	inFlight int           // the most changes sent and not yet answered at once
}

// churn makes c.churnRate member changes a second for c.churn: every
// change is a claim Lease created (engine.ClaimLease, as the engine's claim
// makes it) or deleted, alternating, each claim deleted churnLife changes
// after its create. Each change is sent on a tick of its own, without
// waiting for the answer to the one before, so that the rate holds when
// the API server answers slowly. It deletes what it holds before it
// returns, so the pool is as before (the claims at rest, and whatever the
// caller made).
func churn(ctx context.Context, client kubernetes.Interface, c config) churnResult {
	var res churnResult
	leases := client.CoordinationV1().Leases(c.namespace)
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	var (
		wg                       sync.WaitGroup
		mu                       sync.Mutex
		ok, failed, flying, most int
	)
	send := func(change func() error, done chan struct{}) {
		mu.Lock()
		flying++
		most = max(most, flying)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := change()
			if done != nil {
				close(done)
			}
			mu.Lock()
			defer mu.Unlock()
			flying--
			if err != nil {
				failed++
				logf("churn: %v", err)
				return
			}
			ok++
		}()
	}
	type claim struct {
		name    string
		created chan struct{} // closed once its create is answered
	}
	var held []claim // oldest first
	interval := time.Second / time.Duration(c.churnRate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	start := time.Now()
	end := start.Add(c.churn)
	for k, created := 0, 0; time.Now().Before(end); k++ {
		if k > 0 {
			<-tick.C // the pace of the changes, not a wait for a condition
		}
		if k%2 == 0 || len(held) < churnLife/2 {
			l := engine.ClaimLease(c.namespace, c.pool, churnMember(c, created), "churn@example.com", time.Now())
			created++
			cl := claim{name: l.Name, created: make(chan struct{})}
			held = append(held, cl)
			send(func() error { _, err := leases.Create(ctx, l, metav1.CreateOptions{}); return err }, cl.created)
		} else {
			cl := held[0]
			held = held[1:]
			send(func() error { <-cl.created; return leases.Delete(ctx, cl.name, del) }, nil)
		}
	}
	res.elapsed = time.Since(start)
	wg.Wait()
	for _, cl := range held {
		if err := leases.Delete(ctx, cl.name, del); ignoreNotFound(err) != nil {
			logf("churn: removing the claim %s: %v", cl.name, err)
		}
	}
	res.changes, res.failed, res.inFlight = ok, failed, most
	return res
}

func (r churnResult) String() string {
	return fmt.Sprintf("%d changes in %v (%.1f/s), %d failed, at most %d in flight", r.changes, r.elapsed.Round(time.Millisecond),
		float64(r.changes)/r.elapsed.Seconds(), r.failed, r.inFlight)
}
