// How concurrent claims by one identity converge on one member (DECISIONS,
// "Claims").

package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// converge runs after a claim won the Lease won. It reads the pool's Leases
// fresh: when identity holds an earlier claim than won (a concurrent claim by
// the same identity), won is given back and the earlier member is returned;
// otherwise won's member. Every racer sees the earliest claim, since it was
// created before any racer's read, so every racer answers the same member.
func (e *Engine) converge(ctx context.Context, pool, identity string, won *coordinationv1.Lease) (string, error) {
	mine, _ := MemberFromLeaseName(won.Name)
	// Every claim the engine writes carries its holder's label: the
	// identity's Leases of the pool are one selector away.
	leases, err := e.Cluster.ListLabelledLeases(ctx, pool, identity)
	if err != nil {
		return mine, fmt.Errorf("could not check for a concurrent claim by %q (%v): %s is yours", identity, err, mine)
	}
	first := won
	for _, l := range leases {
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != identity || l.Name == won.Name {
			continue
		}
		if _, ok := MemberFromLeaseName(l.Name); ok && createdBefore(l, first) {
			first = l
		}
	}
	if first == won {
		return mine, nil
	}
	// The earlier claim may be a racer's that is giving its member back
	// at this moment (its fresh read found the member not free): answered,
	// it would hand out a desktop nobody holds. Read it again; gone (or no
	// longer the identity's), it is no claim, and this one stands.
	switch cur, err := e.Cluster.GetLease(ctx, first.Name); {
	case errors.Is(err, ErrNotFound):
		return mine, nil
	case err == nil && (cur.UID != first.UID || cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != identity):
		return mine, nil
	}
	if err := e.unlock(ctx, won); err != nil {
		return mine, fmt.Errorf("%q already holds another member, but giving %s back failed (%v): %s is yours", identity, mine, err, mine)
	}
	name, _ := MemberFromLeaseName(first.Name)
	return name, nil
}

// createdBefore orders Leases by creation: the API server's creation time,
// then (within one second) the resourceVersion, which etcd hands out in one
// increasing sequence; a claim Lease of one identity is only updated by a
// renewal, an hour or more after its creation, so the resourceVersion still
// orders claims created within the same second.
func createdBefore(a, b *coordinationv1.Lease) bool {
	if a == nil || b == nil {
		return b == nil && a != nil
	}
	ta, tb := a.CreationTimestamp.Unix(), b.CreationTimestamp.Unix()
	if ta != tb {
		return ta < tb
	}
	ra, erra := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, errb := strconv.ParseUint(b.ResourceVersion, 10, 64)
	if erra == nil && errb == nil && ra != rb {
		return ra < rb
	}
	return a.Name < b.Name
}
