package engine

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// PoolState is one pool's view kept up to date by difference, for a
// dashboard that follows a cache: Update re-observes only the members whose
// objects changed (and those whose claim crossed a time limit since the last
// observation) and updates the counts by difference, so that its cost is
// proportional to the change, not to the pool. Its view is always what
// Observe gives for the same objects at the same time.
//
// A change to the pool's shape cannot be applied by difference: a new size
// or template, a lost definition, a member that appears or vanishes beyond
// the size, or objects that are not named after their member (the pool is
// then "odd" until a whole observation finds none). Update reports it, and
// the caller observes the pool whole again (NewPoolState).
//
// A PoolState is not safe for concurrent use; its view's Members are
// updated in place.
type PoolState struct {
	view   PoolView
	size   int
	source string
	// odd: some object is not named after its member (a read by name
	// would not find it, and a member may have two objects of a kind, of
	// which Observe takes the last listed): every change observes the pool
	// whole.
	odd bool
	// pods and pvcs are the numbers of objects of the snapshot (they set
	// the limit past which indexed names are placed with the odd ones).
	pods, pvcs int
	// The members beyond the size keep their places while the limit is in
	// [limitLo, limitHi).
	limitLo, limitHi int
	// extra is the position of every member that is not one of 1..size.
	extra map[string]int
	// nodeDown is the snapshot's NodeDown: a change of the nodes is no
	// member's change, and the caller observes the pool whole again.
	nodeDown map[string]string
	// cordoned is the snapshot's NodeCordoned, as nodeDown.
	cordoned map[string]bool
	// seen is the snapshot's LeaseSeen.
	seen map[string]time.Time
	// due holds, per member with a Lease, when its claim next changes with
	// time alone (lazily: an entry may be stale, then it only costs a
	// re-observation that changes nothing).
	due dueHeap
}

// MemberObjects are one member's objects, as a cache holds them by name:
// the Pod named after the member, its data PVC and its claim Lease (each
// nil when absent).
type MemberObjects struct {
	Pod   *corev1.Pod
	PVC   *corev1.PersistentVolumeClaim
	Lease *coordinationv1.Lease
}

// PoolUpdate is what changed in one pool, read from the cache after the
// changes were recorded.
type PoolUpdate struct {
	// Definition: the pool's ConfigMap changed; ConfigMap is its current
	// value (nil: deleted).
	Definition bool
	ConfigMap  *corev1.ConfigMap
	// Members holds the current objects of every member whose objects
	// changed.
	Members map[string]MemberObjects
}

// MemberChange is one member that Update re-observed: its position in the
// view's Members and its value before.
type MemberChange struct {
	Pos int
	Old Member
}

// NewPoolState observes a snapshot whole (Observe) and keeps the result.
func NewPoolState(snap Snapshot, now time.Time) *PoolState {
	s := &PoolState{view: Observe(snap, now), pods: len(snap.Pods), pvcs: len(snap.PVCs), nodeDown: snap.NodeDown, cordoned: snap.NodeCordoned, seen: snap.LeaseSeen}
	s.size, s.source = s.view.Status.Desired, s.view.Source
	s.odd = !conventional(snap)
	limit := placementLimit(s.size, s.pods, s.pvcs)
	s.limitLo, s.limitHi = 0, math.MaxInt
	for i := range s.view.Members {
		m := &s.view.Members[i]
		if i >= s.size {
			if s.extra == nil {
				s.extra = map[string]int{}
			}
			s.extra[m.Name] = i
			if n, ok := MemberIndex(s.view.Name, m.Name); ok {
				if n <= limit {
					s.limitLo = max(s.limitLo, n)
				} else {
					s.limitHi = min(s.limitHi, n)
				}
			}
		}
		if c := m.LeaseRead(); c != nil {
			if t := claimChangesAt(m.Lease, c, now); !t.IsZero() {
				s.due = append(s.due, dueEntry{at: t, pos: i})
			}
		}
	}
	heap.Init(&s.due)
	return s
}

// View is the pool's current view. Its Members are updated in place by
// Update; the PoolView itself is a copy's worth of headers.
func (s *PoolState) View() *PoolView { return &s.view }

// placementLimit is Observe's limit past which a name <pool>-<n> is placed
// with the names that do not fit (a guard against a huge n).
func placementLimit(size, pods, pvcs int) int { return 4*(size+pods+pvcs) + 64 }

// conventional reports whether every object of the snapshot is named after
// the member it belongs to, so that a cache read by name finds it. (Names
// are unique per kind in a namespace, so no member then has two objects of
// a kind.)
func conventional(snap Snapshot) bool {
	for _, p := range snap.Pods {
		if p == nil || memberNameOf(p.Labels, p.Name) != p.Name {
			return false
		}
	}
	for _, c := range snap.PVCs {
		if c == nil {
			return false
		}
		name, ok := MemberFromPVCName(c.Name)
		if !ok || memberNameOf(c.Labels, name) != name {
			return false
		}
	}
	for _, l := range snap.Leases {
		if l == nil {
			return false
		}
	}
	return true
}

// position is the place of a member in the view's Members, if it is there.
func (s *PoolState) position(name string) (int, bool) {
	if n, ok := MemberIndex(s.view.Name, name); ok && n <= s.size {
		return n - 1, true
	}
	pos, ok := s.extra[name]
	return pos, ok
}

// Update applies the changes u at time now. It returns the members it
// re-observed, in the order of their positions, and true; or false, having
// changed nothing, when the change is not one of members within the pool's
// shape (see PoolState): the caller then observes the pool whole. Every
// pool is to be updated at every observation, with an empty PoolUpdate when
// nothing of it changed: time alone changes claims.
func (s *PoolState) Update(u PoolUpdate, now time.Time) ([]MemberChange, bool) {
	v := &s.view
	if now.Before(v.ObservedAt) {
		return nil, false
	}
	if (s.odd || !v.Defined) && (u.Definition || len(u.Members) > 0) {
		return nil, false
	}
	var def PoolView
	if u.Definition {
		def.Name = v.Name
		observeDefinition(&def, u.ConfigMap)
		if !def.Defined || def.Size != s.size || def.Source != s.source {
			return nil, false
		}
	}
	type work struct {
		pos  int
		name string
		objs MemberObjects
	}
	todo := make([]work, 0, len(u.Members))
	pods, pvcs := s.pods, s.pvcs
	for name, o := range u.Members {
		if !s.fits(name, o) {
			return nil, false
		}
		present := o.Pod != nil || o.PVC != nil || o.Lease != nil
		pos, ok := s.position(name)
		if !ok {
			if present {
				return nil, false // a member appears beyond the size
			}
			continue
		}
		old := &v.Members[pos]
		if !present && pos >= s.size {
			return nil, false // a member beyond the size vanishes
		}
		pods += b2i(o.Pod != nil) - b2i(old.Pod != nil)
		pvcs += b2i(o.PVC != nil) - b2i(old.PVC != nil)
		todo = append(todo, work{pos: pos, name: name, objs: o})
	}
	if limit := placementLimit(s.size, pods, pvcs); limit < s.limitLo || limit >= s.limitHi {
		return nil, false // members beyond the size would move
	}

	// From here on, the update is applied.
	s.pods, s.pvcs = pods, pvcs
	if u.Definition {
		// A block the status records (an object no snapshot shows) is
		// part of its member's observation, and so is a recorded backoff:
		// the members whose recorded block or backoff changed are observed
		// again.
		was, is := recordedFacts(&v.Recorded), recordedFacts(&def.Recorded)
		for _, name := range sortedUnion(was, is) {
			if was[name] == is[name] {
				continue
			}
			if _, changed := u.Members[name]; changed {
				continue
			}
			if pos, ok := s.position(name); ok {
				m := &v.Members[pos]
				todo = append(todo, work{pos: pos, name: m.Name, objs: MemberObjects{Pod: m.Pod, PVC: m.PVC, Lease: m.Lease}})
			}
		}
		v.Spec, v.SpecError, v.Recorded, v.RecordedError, v.Problems = def.Spec, def.SpecError, def.Recorded, def.RecordedError, def.Problems
	}
	// The members whose claims changed with time alone, with their objects.
	for len(s.due) > 0 && !s.due[0].at.After(now) {
		e := heap.Pop(&s.due).(dueEntry)
		m := &v.Members[e.pos]
		if _, changed := u.Members[m.Name]; !changed {
			todo = append(todo, work{pos: e.pos, name: m.Name, objs: MemberObjects{Pod: m.Pod, PVC: m.PVC, Lease: m.Lease}})
		}
	}
	sort.Slice(todo, func(i, j int) bool { return todo[i].pos < todo[j].pos })
	ob := newObserver(v, s.size, now, s.seen, s.nodeDown, s.cordoned)
	changes := make([]MemberChange, 0, len(todo))
	for i, w := range todo {
		if i > 0 && todo[i-1].pos == w.pos {
			continue // due twice
		}
		m := &v.Members[w.pos]
		changes = append(changes, MemberChange{Pos: w.pos, Old: *m})
		v.Status.count(m, -1)
		idx, ok := MemberIndex(v.Name, w.name)
		podSource := ""
		if w.objs.Pod != nil {
			podSource = w.objs.Pod.Labels[LabelSource]
		}
		ob.member(m, w.name, idx, ok, w.objs, podSource)
		v.Status.count(m, 1)
		v.Status.Members[w.pos] = memberRow(m)
		if c := m.LeaseRead(); c != nil {
			if t := claimChangesAt(m.Lease, c, now); !t.IsZero() {
				heap.Push(&s.due, dueEntry{at: t, pos: w.pos})
			}
		}
	}
	if len(s.due) > 4*len(v.Members)+64 {
		s.compactDue(now)
	}
	v.Status.Exhausted = s.size > 0 && v.Status.Free == 0 && v.Status.Serving == 0
	v.ObservedAt = now
	return changes, true
}

// fits reports whether a member's objects are named after it and carry
// this pool's label: what a read by name finds is then what Observe takes.
func (s *PoolState) fits(name string, o MemberObjects) bool {
	pool := s.view.Name
	if p := o.Pod; p != nil && (p.Name != name || p.Labels[LabelPool] != pool || memberNameOf(p.Labels, p.Name) != name) {
		return false
	}
	if c := o.PVC; c != nil && (c.Name != PVCName(name) || c.Labels[LabelPool] != pool || memberNameOf(c.Labels, name) != name) {
		return false
	}
	if l := o.Lease; l != nil && (l.Name != LeaseName(name) || !LeaseInPool(l, pool)) {
		return false
	}
	return true
}

// compactDue rebuilds the heap from the members' claims.
func (s *PoolState) compactDue(now time.Time) {
	s.due = s.due[:0]
	for i := range s.view.Members {
		m := &s.view.Members[i]
		if c := m.LeaseRead(); c != nil {
			if t := claimChangesAt(m.Lease, c, now); !t.IsZero() {
				s.due = append(s.due, dueEntry{at: t, pos: i})
			}
		}
	}
	heap.Init(&s.due)
}

// claimChangesAt is the first time after now at which interpretLease(l, t)
// may give other than c = interpretLease(l, now); zero when no later time
// does. A lease time in the future makes the claim follow the clock, so
// any later time does.
func claimChangesAt(l *coordinationv1.Lease, c *Claim, now time.Time) time.Time {
	stamp := c.Renewed
	if stamp.IsZero() {
		stamp = c.Acquired
	}
	if stamp.IsZero() {
		stamp = l.CreationTimestamp.Time
	}
	if stamp.After(now.Add(SkewTolerance)) || LeaseWritten(l).After(now.Add(SkewTolerance)) {
		return now.Add(time.Nanosecond)
	}
	base := c.Since // the stamp, or the API server's write when later
	if base.IsZero() {
		return time.Time{} // expired and stale for good
	}
	var next time.Time
	if !c.Expired {
		next = c.Expires
	}
	if (c.Holder == ReconcilerIdentity || c.Holder == "") && !c.Stale {
		if t := base.Add(ReconcilerLeaseTTL); next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dueEntry: the member at pos is to be observed again at at.
type dueEntry struct {
	at  time.Time
	pos int
}

type dueHeap []dueEntry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueEntry)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// PodMember names the pool and member a Pod belongs to as Observe groups
// it, and whether it is named after that member (a read by name finds it);
// ok is false without a pool label.
func PodMember(p *corev1.Pod) (pool, member string, named, ok bool) {
	pool = p.Labels[LabelPool]
	member = memberNameOf(p.Labels, p.Name)
	return pool, member, member == p.Name, pool != ""
}

// PVCMember is PodMember for a data PVC.
func PVCMember(c *corev1.PersistentVolumeClaim) (pool, member string, named, ok bool) {
	pool = c.Labels[LabelPool]
	name, fits := MemberFromPVCName(c.Name)
	if !fits {
		name = c.Name
	}
	member = memberNameOf(c.Labels, name)
	return pool, member, fits && member == name, pool != ""
}

// LeaseMember is PodMember for a claim Lease, whose pool is LeasePool's (by
// its name, labelled or not); ok is also false for a Lease whose name is not
// a claim Lease's (Observe ignores it).
func LeaseMember(l *coordinationv1.Lease) (pool, member string, named, ok bool) {
	pool, _ = LeasePool(l)
	member, fits := MemberFromLeaseName(l.Name)
	return pool, member, true, pool != "" && fits
}

// PoolChanges names what changed in one pool's objects since a cache was
// last read (kube.Watcher.TakeChanges).
type PoolChanges struct {
	// Context is the pool's kubeconfig context in a source of several
	// contexts (kube.Contexts), "" in one cluster.
	Context         string
	Namespace, Pool string
	// Full: an object not named after its member changed; observe the pool
	// whole.
	Full bool
	// Definition: the pool's ConfigMap changed.
	Definition bool
	// Members whose Pod, PVC or Lease changed, in no order.
	Members []string
}

// Ref is the changed pool's identity.
func (c *PoolChanges) Ref() PoolRef {
	return PoolRef{Context: c.Context, Namespace: c.Namespace, Name: c.Pool}
}

// sortedUnion returns the keys of a and b, each once, sorted.
func sortedUnion(a, b map[string]string) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// recordedFacts are what a recorded status says of each member that is part
// of its observation (its block and its backoff), by member, in words that
// differ when the facts do.
func recordedFacts(st *Status) map[string]string {
	facts := recordedBlocks(st)
	for name, b := range recordedBackoffs(st) {
		if facts == nil {
			facts = map[string]string{}
		}
		facts[name] += fmt.Sprintf("\x00%d %s %s", b.Failures, b.RetryAt.Format(time.RFC3339Nano), b.By)
	}
	return facts
}
