// How a reconcile runs one step over its members: Leases taken ahead and
// removed behind, claims checked again, a bounded pool of workers.

package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// runStep works on the step's members, at most e.Concurrency at once, each
// under the reconciler's Lease. Each of e.Concurrency workers pipelines its
// members through three stages, so that neither Lease write waits on the
// member's own work:
//
//   - while it works on a member, it takes the Lease of its next one;
//   - once the member's work is done, it goes on to the next member while
//     the Lease is removed, with at most e.Concurrency removals in flight.
//
// Every Lease taken is removed after the member's work, also when the work
// fails or ctx ends. A member's action is recorded when its Lease is gone (or
// its removal failed), and runStep returns when every Lease of the step is.
func (e *Engine) runStep(ctx context.Context, step Step, members []*Member, add func(MemberAction), fn func(context.Context, *Member) error) {
	if len(members) == 0 {
		return
	}
	var next atomic.Int64
	pop := func() *Member {
		if i := int(next.Add(1)) - 1; i < len(members) {
			return members[i]
		}
		return nil
	}
	take := func(m *Member) taken {
		if err := ctx.Err(); err != nil {
			return taken{m: m, err: err}
		}
		held, skipped, err := e.takeReconcilerLease(ctx, m)
		return taken{m: m, held: held, skipped: skipped, err: err}
	}
	unlocks := make(chan struct{}, e.concurrency())
	var workers, removals sync.WaitGroup
	for range min(e.concurrency(), len(members)) {
		workers.Go(func() {
			m := pop()
			if m == nil {
				return
			}
			cur := take(m)
			for {
				var ahead chan taken
				if m := pop(); m != nil {
					ahead = make(chan taken, 1)
					go func() { ahead <- take(m) }()
				}
				if cur.held == nil {
					add(MemberAction{Step: step, Member: cur.m.Name, Skipped: cur.skipped, Err: cur.err})
				} else {
					err := fn(ctx, cur.m)
					unlocks <- struct{}{}
					removals.Add(1)
					go func(t taken) {
						defer removals.Done()
						if uerr := e.unlock(ctx, t.held); uerr != nil && err == nil {
							err = fmt.Errorf("remove lease: %w", uerr)
						}
						<-unlocks
						add(MemberAction{Step: step, Member: t.m.Name, Err: err})
					}(cur)
				}
				if ahead == nil {
					return
				}
				cur = <-ahead
			}
		})
	}
	workers.Wait()
	removals.Wait()
}

// stillClaimed reads the pool's Leases fresh and keeps the claimed members
// whose claim is unchanged since the snapshot. A claimed member is worked on
// without a reconciler Lease; should a release have taken its Lease over
// since the snapshot was read, starting it would put a Pod on data that is
// being destroyed. The others are skipped.
func (e *Engine) stillClaimed(ctx context.Context, pool string, creates, starts []*Member, add func(MemberAction)) ([]*Member, []*Member) {
	if len(creates)+len(starts) == 0 {
		return creates, starts
	}
	leases, err := e.Cluster.ListLeases(ctx, pool)
	rv := make(map[string]string, len(leases))
	for _, l := range leases {
		rv[l.Name] = l.ResourceVersion
	}
	keep := func(step Step, ms []*Member) []*Member {
		out := ms[:0:0]
		for _, m := range ms {
			switch {
			case err != nil:
				add(MemberAction{Step: step, Member: m.Name, Err: fmt.Errorf("check the claim: %w", err)})
			case rv[m.Lease.Name] != m.Lease.ResourceVersion:
				add(MemberAction{Step: step, Member: m.Name, Skipped: "claim changed meanwhile"})
			default:
				out = append(out, m)
			}
		}
		return out
	}
	return keep(StepCreate, creates), keep(StepStart, starts)
}

// forEach calls fn for each member, at most e.Concurrency at once, and
// returns when every call has.
func (e *Engine) forEach(members []*Member, fn func(*Member)) {
	sem := make(chan struct{}, e.concurrency())
	var wg sync.WaitGroup
	for _, m := range members {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(m)
		})
	}
	wg.Wait()
}

func ignoreExists(err error) error {
	if errors.Is(err, ErrAlreadyExists) {
		return nil
	}
	return err
}
