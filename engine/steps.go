// How a reconcile runs one step over its members: each member's work under
// the reconciler's Lease, claims checked again, a bounded pool of workers.

package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// runStep works on the step's members with e.Concurrency workers. Each
// worker takes the next member's reconciler Lease, does the member's work,
// removes the Lease (also when the work failed or ctx ended: the removal
// does not depend on ctx) and records the member's action, one request after
// the other; the member's work itself sends its requests one after the
// other. So a step has at most e.Concurrency requests in flight, and, with
// more members than workers, exactly that many: the same pipe as a plain
// client loop of as many workers sending the same writes. runStep returns
// when every Lease of the step is gone.
func (e *Engine) runStep(ctx context.Context, step Step, members []*Member, add func(MemberAction), fn func(context.Context, *Member) error) {
	if len(members) == 0 {
		return
	}
	ctx, progress := e.track(ctx, members[0].Pool, step, len(members))
	done := func(a MemberAction) {
		add(a)
		progress.done()
	}
	var next atomic.Int64
	var workers sync.WaitGroup
	for range min(e.concurrency(), len(members)) {
		workers.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(members) {
					return
				}
				m := members[i]
				if err := ctx.Err(); err != nil {
					done(MemberAction{Step: step, Member: m.Name, Err: err})
					continue
				}
				held, skipped, err := e.takeReconcilerLease(ctx, m)
				if held == nil {
					done(MemberAction{Step: step, Member: m.Name, Skipped: skipped, Err: err})
					continue
				}
				err = fn(ctx, m)
				if uerr := e.unlock(ctx, held); uerr != nil && err == nil {
					err = fmt.Errorf("remove lease: %w", uerr)
				}
				done(MemberAction{Step: step, Member: m.Name, Err: err})
			}
		})
	}
	workers.Wait()
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
