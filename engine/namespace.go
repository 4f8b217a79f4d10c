package engine

import (
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// GroupByPool splits namespace-wide lists of pool objects into one Snapshot
// per pool, sorted by pool name. A pool is known by its ConfigMap or by the
// pool label of any of its objects, so objects that claim a pool with no
// definition still show up (as a pool with Defined false). A Lease is
// grouped by LeasePool: by the member its name names, labelled or not (a
// Lease with no label, or another pool's, joins a pool known otherwise).
// leases may hold any Leases of the namespace: those of no pool are left
// out. Linear in the number of objects, plus the sort of the pool names.
func GroupByPool(namespace string, cms []*corev1.ConfigMap, pods []*corev1.Pod, pvcs []*corev1.PersistentVolumeClaim, leases []*coordinationv1.Lease) []Snapshot {
	idx := map[string]*Snapshot{}
	get := func(pool string) *Snapshot {
		s := idx[pool]
		if s == nil {
			s = &Snapshot{Namespace: namespace, Pool: pool}
			idx[pool] = s
		}
		return s
	}
	for _, cm := range cms {
		pool, ok := DefinedPool(cm.Name, cm.Labels)
		if !ok {
			continue // labelled for a pool but not its definition
		}
		get(pool).ConfigMap = cm
	}
	for _, p := range pods {
		if pool := p.Labels[LabelPool]; pool != "" {
			s := get(pool)
			s.Pods = append(s.Pods, p)
		}
	}
	for _, c := range pvcs {
		if pool := c.Labels[LabelPool]; pool != "" {
			s := get(pool)
			s.PVCs = append(s.PVCs, c)
		}
	}
	// A Lease goes to the pool its name names (LeasePool), labelled or not;
	// one known by its name alone joins only a pool known otherwise (its
	// definition, or a labelled object), so that a Lease that merely looks
	// like a claim makes no pool appear.
	var byNameOnly []*coordinationv1.Lease
	for _, l := range leases {
		pool, byName := LeasePool(l)
		switch {
		case pool == "":
		case byName && !labelsAsPool(l, pool):
			byNameOnly = append(byNameOnly, l)
		default:
			s := get(pool)
			s.Leases = append(s.Leases, l)
		}
	}
	for _, l := range byNameOnly {
		pool, _ := LeasePool(l)
		if s := idx[pool]; s != nil {
			s.Leases = append(s.Leases, l)
		}
	}
	out := make([]Snapshot, 0, len(idx))
	for _, s := range idx {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out
}

// ObserveAll observes every pool of GroupByPool's result.
func ObserveAll(snaps []Snapshot, now time.Time) []PoolView {
	out := make([]PoolView, len(snaps))
	for i, s := range snaps {
		out[i] = Observe(s, now)
	}
	return out
}
