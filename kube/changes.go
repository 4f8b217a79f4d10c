package kube

import (
	"sort"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// maxRecordedMembers bounds what a Watcher records between two reads: past
// it, the next read is a whole one (cheaper than that many members one by
// one, and it bounds the memory when no one reads the changes).
const maxRecordedMembers = 4096

// changeLog is what changed in a Watcher's cache since the last
// TakeChanges: every pool object's change is recorded by its handler, after
// the cache holds it, so a read of the cache that follows a take sees every
// change the take returned.
type changeLog struct {
	all     bool // everything (the first read, or too much to list)
	pools   map[engine.PoolRef]*poolLog
	members int
}

type poolLog struct {
	full, definition bool
	members          map[string]struct{}
}

// record notes one object's change (a handler's old or new object, or a
// tombstone).
func (w *Watcher) record(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	var (
		ns, pool, member string
		named, ok        bool
		definition       bool
	)
	switch o := obj.(type) {
	case *corev1.Pod:
		ns = o.Namespace
		pool, member, named, ok = engine.PodMember(o)
	case *corev1.PersistentVolumeClaim:
		ns = o.Namespace
		pool, member, named, ok = engine.PVCMember(o)
	case *coordinationv1.Lease:
		ns = o.Namespace
		pool, member, named, ok = engine.LeaseMember(o)
	case *corev1.ConfigMap:
		ns = o.Namespace
		pool, ok = engine.DefinedPool(o.Name, o.Labels)
		definition = true
	default:
		w.changesMu.Lock()
		w.changes.all = true // not a pool object: read everything
		w.changesMu.Unlock()
		return
	}
	if !ok {
		return // an object no pool observes
	}
	w.changesMu.Lock()
	defer w.changesMu.Unlock()
	c := &w.changes
	if c.all {
		return
	}
	k := engine.PoolRef{Namespace: ns, Name: pool}
	p := c.pools[k]
	if p == nil {
		if c.pools == nil {
			c.pools = map[engine.PoolRef]*poolLog{}
		}
		p = &poolLog{}
		c.pools[k] = p
	}
	switch {
	case definition:
		p.definition = true
	case !named:
		p.full = true
	case !p.full:
		if p.members == nil {
			p.members = map[string]struct{}{}
		}
		if _, seen := p.members[member]; !seen {
			p.members[member] = struct{}{}
			c.members++
			if c.members > maxRecordedMembers {
				*c = changeLog{all: true}
			}
		}
	}
}

// TakeChanges returns what changed since the last call and forgets it: all
// (the first call, or more than can be listed: read everything), or the
// pools whose objects changed, sorted. Read the cache after it: the read
// then sees every change it returned.
func (w *Watcher) TakeChanges() (all bool, pools []engine.PoolChanges) {
	w.changesMu.Lock()
	c := w.changes
	w.changes = changeLog{}
	w.changesMu.Unlock()
	if c.all {
		return true, nil
	}
	for k, p := range c.pools {
		pc := engine.PoolChanges{Namespace: k.Namespace, Pool: k.Name, Full: p.full, Definition: p.definition}
		if !p.full {
			pc.Members = make([]string, 0, len(p.members))
			for m := range p.members {
				pc.Members = append(pc.Members, m)
			}
		}
		pools = append(pools, pc)
	}
	sort.Slice(pools, func(i, j int) bool {
		if pools[i].Namespace != pools[j].Namespace {
			return pools[i].Namespace < pools[j].Namespace
		}
		return pools[i].Pool < pools[j].Pool
	})
	return false, pools
}

// ReadChanges reads from the cache the objects a change names: the pool's
// ConfigMap when its definition changed, and each changed member's Pod,
// PVC and Lease by name (engine.PoolState.Update). Objects of another pool
// are left out, as Snapshots leaves them.
func (w *Watcher) ReadChanges(pc engine.PoolChanges) engine.PoolUpdate {
	u := engine.PoolUpdate{Definition: pc.Definition, Members: make(map[string]engine.MemberObjects, len(pc.Members))}
	s := w.setOf(pc.Namespace)
	if s == nil {
		return u
	}
	get := func(inf cache.SharedIndexInformer, name string) any {
		o, exists, err := inf.GetIndexer().GetByKey(pc.Namespace + "/" + name)
		if err != nil || !exists {
			return nil
		}
		return o
	}
	if pc.Definition {
		if cm, ok := get(s.ConfigMaps, engine.ConfigMapName(pc.Pool)).(*corev1.ConfigMap); ok && cm.Labels[engine.LabelPool] == pc.Pool {
			u.ConfigMap = cm
		}
	}
	for _, m := range pc.Members {
		var o engine.MemberObjects
		if p, ok := get(s.Pods, m).(*corev1.Pod); ok && p.Labels[engine.LabelPool] == pc.Pool {
			o.Pod = p
		}
		if c, ok := get(s.PVCs, engine.PVCName(m)).(*corev1.PersistentVolumeClaim); ok && c.Labels[engine.LabelPool] == pc.Pool {
			o.PVC = c
		}
		if l, ok := get(s.Leases, engine.LeaseName(m)).(*coordinationv1.Lease); ok && engine.LeaseInPool(l, pc.Pool) {
			o.Lease = l
		}
		u.Members[m] = o
	}
	return u
}

// setOf is the informer set that holds namespace, or nil.
func (w *Watcher) setOf(namespace string) *PoolInformers {
	switch {
	case w.fleet == nil:
		if namespace == w.namespace {
			return w.informers
		}
	case len(w.namespaces) == 0:
		return w.fleet[0]
	default:
		for i, ns := range w.namespaces {
			if ns == namespace {
				return w.fleet[i]
			}
		}
	}
	return nil
}
