package controller

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// sightings remembers, for every member Lease stamped further ahead than
// engine.SkewTolerance (a writer whose clock runs fast), when the controller
// first saw its current resourceVersion, as client-go's leader election
// remembers its own observation time. The engine then counts the Lease from
// that sighting (engine.Snapshot.LeaseSeen), so an hour-fast reconciler's
// Lease is stale 10 minutes after the controller first saw it.
type sightings struct {
	mu sync.Mutex
	m  map[sightingKey]sighting
}

type sightingKey struct{ namespace, pool, lease string }

type sighting struct {
	rv string
	at time.Time
}

// stamp fills snap.LeaseSeen for its future-stamped Leases, first seen now
// unless already seen at this resourceVersion, and forgets the pool's
// sightings of Leases that are gone or no longer in the future.
func (s *sightings) stamp(snap *engine.Snapshot, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	future := map[string]bool{}
	for _, l := range snap.Leases {
		if l == nil || !stampedAhead(l, now) {
			continue
		}
		future[l.Name] = true
		k := sightingKey{snap.Namespace, snap.Pool, l.Name}
		got, ok := s.m[k]
		if !ok || got.rv != l.ResourceVersion {
			got = sighting{rv: l.ResourceVersion, at: now}
			if s.m == nil {
				s.m = map[sightingKey]sighting{}
			}
			s.m[k] = got
		}
		if snap.LeaseSeen == nil {
			snap.LeaseSeen = map[string]time.Time{}
		}
		snap.LeaseSeen[l.Name] = got.at
	}
	for k := range s.m {
		if k.namespace == snap.Namespace && k.pool == snap.Pool && !future[k.lease] {
			delete(s.m, k)
		}
	}
}

// stampedAhead: the Lease's renew (or acquire) time is more than
// engine.SkewTolerance ahead of now.
func stampedAhead(l *coordinationv1.Lease, now time.Time) bool {
	t := l.Spec.RenewTime
	if t == nil {
		t = l.Spec.AcquireTime
	}
	return t != nil && t.Time.After(now.Add(engine.SkewTolerance))
}
