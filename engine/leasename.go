package engine

import (
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// A claim Lease is known by its name: the contract names member <pool>-<n>'s
// claim Lease corral-vdi-ct-<pool>-<n>, and a broker that follows it writes
// that name and no label. So a Lease named so is that member's claim whether
// or not it carries the pool label (DECISIONS, "Claims"); the engine labels
// the Leases it writes all the same.

// LeaseNamePrefix starts the name of every claim Lease. A Lease whose name
// does not start with it is no claim, whatever its labels say.
const LeaseNamePrefix = leaseNamePrefix

// PoolFromLeaseName parses a claim Lease name corral-vdi-ct-<pool>-<n>
// into the pool and the member <pool>-<n>. Member names are <pool>-<n> with
// n a member index (digits, no leading zero), so only one parse can hold
// even when the pool name has dashes of its own: the pool is what is left
// once the last -<n> is cut (corral-vdi-ct-desk-2-3 is member 3 of pool
// desk-2, never anything of pool desk, whose members are desk-<n>). ok is
// false when the name is not a claim Lease's or what is left is no valid
// pool name.
func PoolFromLeaseName(name string) (pool, member string, ok bool) {
	member, ok = strings.CutPrefix(name, leaseNamePrefix)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(member, '-')
	if i <= 0 {
		return "", "", false
	}
	pool = member[:i]
	if _, isIndex := MemberIndex(pool, member); !isIndex || ValidatePoolName(pool) != nil {
		return "", "", false
	}
	return pool, member, true
}

// LeasePool is the pool a Lease belongs to: the pool its name names
// (PoolFromLeaseName), labelled or not, and otherwise its pool label (a
// Lease with the label and a name that names no member: Observe ignores
// it, but the pool is known by it). byName is true when the name decided;
// pool is "" when neither does. A label that disagrees with the name is
// ignored: the name is what a claim creates and what blocks a second one.
func LeasePool(l *coordinationv1.Lease) (pool string, byName bool) {
	if p, _, ok := PoolFromLeaseName(l.Name); ok {
		return p, true
	}
	return l.Labels[LabelPool], false
}

// LeaseInPool reports whether Lease l belongs to pool (LeasePool): what a
// read of one pool's Leases keeps, from a list of the namespace's.
func LeaseInPool(l *coordinationv1.Lease, pool string) bool {
	p, _ := LeasePool(l)
	return p != "" && p == pool
}

// labelsAsPool reports whether a Lease carries the label of the pool its
// name names: such a Lease makes its pool known (GroupByPool), as any
// labelled object does; a Lease known by its name alone is only grouped
// into a pool known otherwise.
func labelsAsPool(l *coordinationv1.Lease, pool string) bool {
	return l.Labels[LabelPool] == pool
}

// labelLease makes a Lease copy the engine is about to write for holder
// carry the pool and member labels of the member its name names (a broker's
// Lease has none) and the holder's label (LabelHolder).
func labelLease(c *coordinationv1.Lease, holder string) {
	pool, member, ok := PoolFromLeaseName(c.Name)
	h := HolderLabel(holder)
	if !ok || (c.Labels[LabelPool] == pool && c.Labels[LabelMember] == member && c.Labels[LabelHolder] == h) {
		return
	}
	labels := make(map[string]string, len(c.Labels)+3)
	for k, v := range c.Labels {
		labels[k] = v
	}
	labels[LabelPool], labels[LabelMember], labels[LabelHolder] = pool, member, h
	c.Labels = labels
}
