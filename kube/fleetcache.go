package kube

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// A fleet Watcher keeps one Snapshot per pool between two reads and
// regroups only the pools whose objects changed: a read of 3,000 pools
// after a change to a few of them costs those few, not the 138,000 objects
// of the fleet.
//
// A pool here is what fleetSnapshotsWhole groups: the objects of one
// namespace with one value of the pool label (a ConfigMap only when it is
// that pool's definition; a Lease by engine.LeasePool, its name). Every object the informers add, update or delete
// marks its pool (the old object's and the new one's) before the reader is
// signalled, so a read that follows a signal regroups every pool the
// signal's change touched. A read thus equals a whole regrouping of the
// caches as of the changes whose handlers ran (TestFleetIncrementalReadEqualsWhole).

// fleetCache is a fleet Watcher's pools as last read.
type fleetCache struct {
	// dirtyMu guards the marks, which handlers write.
	dirtyMu sync.Mutex
	all     bool // regroup everything (nothing read yet)
	dirty   map[engine.PoolRef]struct{}
	// handled counts the handler calls done (tests wait on it).
	handled atomic.Int64

	// readMu serialises the reads; what follows is theirs.
	readMu sync.Mutex
	snaps  []engine.Snapshot      // by namespace, then pool
	at     map[engine.PoolRef]int // snaps entry of a pool
	// indexed: whether PoolIndex holds a label value (engine.ValidatePoolName
	// is a regular expression; the pools of a fleet share few names).
	indexed map[string]bool
}

// markPool marks the pool of an object (a handler's old or new object, or
// a tombstone) to be regrouped at the next read: its pool label's, a
// Lease's engine.LeasePool. An object without the pool label marks the pool
// "" of its namespace: a ConfigMap named engine.ConfigMapName("") is that
// pool's definition.
func (c *fleetCache) markPool(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		c.markAll()
		return
	}
	k := engine.PoolRef{Namespace: m.GetNamespace(), Name: m.GetLabels()[engine.LabelPool]}
	if l, ok := obj.(*coordinationv1.Lease); ok {
		k.Name, _ = engine.LeasePool(l) // by its name, labelled or not
	}
	c.dirtyMu.Lock()
	defer c.dirtyMu.Unlock()
	if c.all {
		return
	}
	if c.dirty == nil {
		c.dirty = map[engine.PoolRef]struct{}{}
	}
	c.dirty[k] = struct{}{}
}

func (c *fleetCache) markAll() {
	c.dirtyMu.Lock()
	c.all, c.dirty = true, nil
	c.dirtyMu.Unlock()
}

// take returns the marks and forgets them.
func (c *fleetCache) take() (all bool, dirty map[engine.PoolRef]struct{}) {
	c.dirtyMu.Lock()
	defer c.dirtyMu.Unlock()
	all, dirty = c.all, c.dirty
	c.all, c.dirty = false, nil
	return all, dirty
}

// markingHandler marks the pool of every object h is given, then hands it
// to h; the marks come first, so that h's signal finds them.
func (c *fleetCache) markingHandler(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			c.markPool(obj)
			h.OnAdd(obj, initial)
			c.handled.Add(1)
		},
		UpdateFunc: func(old, obj any) {
			c.markPool(old)
			c.markPool(obj)
			h.OnUpdate(old, obj)
			c.handled.Add(1)
		},
		DeleteFunc: func(obj any) {
			c.markPool(obj)
			h.OnDelete(obj)
			c.handled.Add(1)
		},
	}
}

// read returns the fleet's pools, by namespace then pool: the pools marked
// since the last read regrouped from the informers' pool index, the others
// as they were; everything regrouped (whole) at the first read.
func (c *fleetCache) read(sets []*PoolInformers, whole func() []engine.Snapshot) []engine.Snapshot {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	all, dirty := c.take()
	if all || c.at == nil {
		c.snaps = whole()
		c.at = make(map[engine.PoolRef]int, len(c.snaps))
		for i := range c.snaps {
			c.at[engine.PoolRef{Namespace: c.snaps[i].Namespace, Name: c.snaps[i].Pool}] = i
		}
		return slices.Clone(c.snaps)
	}
	reorder := false
	for k := range dirty {
		indexed, known := c.indexed[k.Name]
		if !known {
			indexed = k.Name != "" && engine.ValidatePoolName(k.Name) == nil
			if c.indexed == nil {
				c.indexed = map[string]bool{}
			}
			c.indexed[k.Name] = indexed
		}
		snap, ok := groupPool(sets, k, indexed)
		i, had := c.at[k]
		switch {
		case ok && had:
			c.snaps[i] = snap
		case ok:
			c.at[k] = len(c.snaps)
			c.snaps = append(c.snaps, snap)
			reorder = true
		case had:
			c.snaps[i] = engine.Snapshot{} // dropped below
			delete(c.at, k)
			reorder = true
		}
	}
	if reorder {
		kept := c.snaps[:0]
		for _, s := range c.snaps {
			if _, ok := c.at[engine.PoolRef{Namespace: s.Namespace, Name: s.Pool}]; ok {
				kept = append(kept, s)
			}
		}
		clear(c.snaps[len(kept):])
		c.snaps = kept
		slices.SortFunc(c.snaps, func(a, b engine.Snapshot) int {
			if n := strings.Compare(a.Namespace, b.Namespace); n != 0 {
				return n
			}
			return strings.Compare(a.Pool, b.Pool)
		})
		for i := range c.snaps {
			c.at[engine.PoolRef{Namespace: c.snaps[i].Namespace, Name: c.snaps[i].Pool}] = i
		}
	}
	return slices.Clone(c.snaps)
}

// groupPool is one pool's objects in the informer sets, as
// fleetSnapshotsWhole groups them (engine.GroupByPool); ok is false when it
// has none. A pool whose name PoolIndex holds (indexed: a valid pool name)
// is read from the index; any other label value (which the index leaves
// out) from a scan of the caches. Either way every object read is of the
// pool's namespace and label value.
func groupPool(sets []*PoolInformers, k engine.PoolRef, indexed bool) (engine.Snapshot, bool) {
	snap := engine.Snapshot{Namespace: k.Namespace, Pool: k.Name}
	found := false
	definition := engine.ConfigMapName(k.Name)
	key := k.String()
	objs := func(inf cache.SharedIndexInformer) []any {
		if indexed {
			items, _ := inf.GetIndexer().ByIndex(PoolIndex, key)
			return items
		}
		var out []any
		for _, o := range inf.GetStore().List() {
			m, err := meta.Accessor(o)
			if err != nil || m.GetNamespace() != k.Namespace {
				continue
			}
			if l, ok := o.(*coordinationv1.Lease); ok {
				if engine.LeaseInPool(l, k.Name) {
					out = append(out, o)
				}
			} else if m.GetLabels()[engine.LabelPool] == k.Name {
				out = append(out, o)
			}
		}
		return out
	}
	for _, s := range sets {
		for _, o := range objs(s.ConfigMaps) {
			if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == definition {
				snap.ConfigMap, found = cm, true
			}
		}
		if k.Name == "" {
			continue // GroupByPool groups no Pod, PVC or Lease without a pool
		}
		pods, pvcs, leases := objs(s.Pods), objs(s.PVCs), objs(s.Leases)
		snap.Pods = slices.Grow(snap.Pods, len(pods))
		for _, o := range pods {
			if p, ok := o.(*corev1.Pod); ok {
				snap.Pods, found = append(snap.Pods, p), true
			}
		}
		snap.PVCs = slices.Grow(snap.PVCs, len(pvcs))
		for _, o := range pvcs {
			if c, ok := o.(*corev1.PersistentVolumeClaim); ok {
				snap.PVCs, found = append(snap.PVCs, c), true
			}
		}
		snap.Leases = slices.Grow(snap.Leases, len(leases))
		for _, o := range leases {
			if l, ok := o.(*coordinationv1.Lease); ok {
				// A Lease known by its name alone makes no pool appear
				// (engine.GroupByPool): only one labelled for it does.
				snap.Leases = append(snap.Leases, l)
				found = found || l.Labels[engine.LabelPool] == k.Name
			}
		}
	}
	// As GroupByPool's appends leave them: nil when none.
	if len(snap.Pods) == 0 {
		snap.Pods = nil
	}
	if len(snap.PVCs) == 0 {
		snap.PVCs = nil
	}
	if len(snap.Leases) == 0 {
		snap.Leases = nil
	}
	return snap, found
}
