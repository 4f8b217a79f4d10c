package main

import (
	"context"
	"fmt"
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
	changes int           // creates and deletes that succeeded
	failed  int           // those that failed (told in the log)
	elapsed time.Duration // the window
	late    int           // ticks that found the previous change still running
}

// churn makes c.churnRate member changes a second for c.churn: every
// change is a claim Lease created (engine.ClaimLease, as the engine's claim
// makes it) or deleted, alternating, each claim deleted churnLife changes
// after its create. It deletes what it holds before it returns, so the pool
// is as before (the claims at rest, and whatever the caller made).
func churn(ctx context.Context, client kubernetes.Interface, c config) churnResult {
	var res churnResult
	leases := client.CoordinationV1().Leases(c.namespace)
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	var held []string // lease names, oldest first
	defer func() {
		for _, name := range held {
			if err := leases.Delete(ctx, name, del); ignoreNotFound(err) != nil {
				logf("churn: removing the claim %s: %v", name, err)
			}
		}
	}()
	interval := time.Second / time.Duration(c.churnRate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	start := time.Now()
	end := start.Add(c.churn)
	for k, created := 0, 0; ; k++ {
		if k > 0 {
			<-tick.C // the pace of the changes, not a wait for a condition
			if len(tick.C) > 0 {
				res.late++
			}
		}
		if !time.Now().Before(end) {
			break
		}
		var err error
		if k%2 == 0 || len(held) < churnLife/2 {
			l := engine.ClaimLease(c.namespace, c.pool, churnMember(c, created), "churn@example.com", time.Now())
			created++
			_, err = leases.Create(ctx, l, metav1.CreateOptions{})
			if err == nil {
				held = append(held, l.Name)
			}
		} else {
			err = ignoreNotFound(leases.Delete(ctx, held[0], del))
			held = held[1:]
		}
		if err != nil {
			res.failed++
			logf("churn: %v", err)
			continue
		}
		res.changes++
	}
	res.elapsed = time.Since(start)
	return res
}

func (r churnResult) String() string {
	return fmt.Sprintf("%d changes in %v (%.1f/s), %d failed, %d late", r.changes, r.elapsed.Round(time.Millisecond),
		float64(r.changes)/r.elapsed.Seconds(), r.failed, r.late)
}
