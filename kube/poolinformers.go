package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// ErrNotSynced: a snapshot was asked of an informer cache before it had
// synced. Nothing may act on an empty cache.
var ErrNotSynced = errors.New("the informer cache has not synced yet")

// PoolIndex indexes every cached pool object by the "namespace/pool" of its
// pool label (a Lease: of the pool its name names, PoolOf), so that one
// pool's snapshot does not scan the namespace.
const PoolIndex = "ctpool-pool"

// PoolInformers is the informer cache of every pool object: the pool
// ConfigMaps, the labelled Pods and PVCs, and the claim Leases (by their
// name, labelled or not), in one namespace or in all of them. The
// dashboard's Watcher and the controller both build theirs with
// NewPoolInformers: one generated factory, a label selector on the pool
// label (the Leases: none, and only the claim Leases kept, leases.go),
// StripForCache as the transform, PoolIndex, and the caller's event handler
// and watch-error hook on each informer.
type PoolInformers struct {
	factory  informers.SharedInformerFactory
	selector labels.Selector

	ConfigMaps, Pods, PVCs, Leases cache.SharedIndexInformer
}

// poolLabelSelector selects the objects that carry the pool label.
func poolLabelSelector() labels.Selector {
	req, err := labels.NewRequirement(engine.LabelPool, selection.Exists, nil)
	if err != nil { // a constant, valid key: cannot fail
		panic(fmt.Sprintf("pool label selector: %v", err))
	}
	return labels.NewSelector().Add(*req)
}

// NewPoolInformers builds the informers of namespace (metav1.NamespaceAll
// for every namespace), registers h (when set) on each, and hands their
// list and watch errors to onWatchError (when set; client-go's default
// handler, which logs through klog, otherwise). Nothing is read until Start.
func NewPoolInformers(client kubernetes.Interface, namespace string, h cache.ResourceEventHandler, onWatchError cache.WatchErrorHandlerWithContext) *PoolInformers {
	sel := poolLabelSelector()
	f := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }),
		informers.WithTransform(StripForCache),
	)
	core := f.Core().V1()
	s := &PoolInformers{
		factory:    f,
		selector:   sel,
		ConfigMaps: core.ConfigMaps().Informer(),
		Pods:       core.Pods().Informer(),
		PVCs:       core.PersistentVolumeClaims().Informer(),
		// A claim Lease is known by its name, labelled or not: the Leases
		// are read without the label selector, through claimLeases, which
		// keeps the claim Leases only (leases.go).
		Leases: f.InformerFor(&coordinationv1.Lease{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return coordinationinformers.NewFilteredLeaseInformer(claimLeases{c}, namespace, resync,
				cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
				func(o *metav1.ListOptions) { leaseListOptions(namespace, o) })
		}),
	}
	for _, inf := range s.all() {
		// These fail only once the informer has started; it has not.
		_ = inf.AddIndexers(cache.Indexers{PoolIndex: indexByPool})
		if h != nil {
			_, _ = inf.AddEventHandler(h)
		}
		if onWatchError != nil {
			_ = inf.SetWatchErrorHandlerWithContext(onWatchError)
		}
	}
	return s
}

func (s *PoolInformers) all() []cache.SharedIndexInformer {
	return []cache.SharedIndexInformer{s.ConfigMaps, s.Pods, s.PVCs, s.Leases}
}

// Selector is the label selector the informers list and watch with.
func (s *PoolInformers) Selector() labels.Selector { return s.selector }

// Start starts the informers. They stop when ctx ends; Shutdown waits for
// them.
func (s *PoolInformers) Start(ctx context.Context) {
	s.factory.Start(ctx.Done())
	context.AfterFunc(ctx, s.factory.Shutdown)
}

// Shutdown waits until the informers started have stopped (their context
// ended or ends).
func (s *PoolInformers) Shutdown() { s.factory.Shutdown() }

// WaitForSync waits until every cache has synced or ctx ends.
func (s *PoolInformers) WaitForSync(ctx context.Context) bool {
	synced := make([]cache.InformerSynced, 0, 4)
	for _, inf := range s.all() {
		synced = append(synced, inf.HasSynced)
	}
	return cache.WaitForCacheSync(ctx.Done(), synced...)
}

// Synced reports whether every cache has finished its first list.
func (s *PoolInformers) Synced() bool {
	for _, inf := range s.all() {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// PoolOf names the pool of an object from its pool label (tombstones too);
// a Lease's is engine.LeasePool's, by its name, labelled or not. An object
// without the label, or with a value that is no pool name, has none.
func PoolOf(obj any) (engine.PoolRef, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return engine.PoolRef{}, false
	}
	pool := m.GetLabels()[engine.LabelPool]
	if l, ok := obj.(*coordinationv1.Lease); ok {
		pool, _ = engine.LeasePool(l)
	}
	if pool == "" || engine.ValidatePoolName(pool) != nil {
		return engine.PoolRef{}, false
	}
	return engine.PoolRef{Namespace: m.GetNamespace(), Name: pool}, true
}

func indexByPool(obj any) ([]string, error) {
	k, ok := PoolOf(obj)
	if !ok {
		return nil, nil
	}
	return []string{k.String()}, nil
}

// Snapshot returns one pool's objects from the caches. It fails with
// ErrNotSynced while the caches have not synced, so that nothing acts on an
// empty cache.
func (s *PoolInformers) Snapshot(ctx context.Context, k engine.PoolRef) (engine.Snapshot, error) {
	snap := engine.Snapshot{Namespace: k.Namespace, Pool: k.Name}
	if err := ctx.Err(); err != nil {
		return snap, err
	}
	if !s.Synced() {
		return snap, ErrNotSynced
	}
	objs := func(inf cache.SharedIndexInformer) []any {
		items, _ := inf.GetIndexer().ByIndex(PoolIndex, k.String())
		return items
	}
	for _, o := range objs(s.ConfigMaps) {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			if pool, ok := engine.DefinedPool(cm.Name, cm.Labels); ok && pool == k.Name {
				snap.ConfigMap = cm
			}
		}
	}
	for _, o := range objs(s.Pods) {
		if p, ok := o.(*corev1.Pod); ok {
			snap.Pods = append(snap.Pods, p)
		}
	}
	for _, o := range objs(s.PVCs) {
		if p, ok := o.(*corev1.PersistentVolumeClaim); ok {
			snap.PVCs = append(snap.PVCs, p)
		}
	}
	for _, o := range objs(s.Leases) {
		if l, ok := o.(*coordinationv1.Lease); ok {
			snap.Leases = append(snap.Leases, l)
		}
	}
	return snap, nil
}

// Pools lists the pools that have a definition (their ConfigMap) in the
// cache.
func (s *PoolInformers) Pools() []engine.PoolRef {
	var out []engine.PoolRef
	for _, o := range s.ConfigMaps.GetStore().List() {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		if pool, ok := engine.DefinedPool(cm.Name, cm.Labels); ok {
			out = append(out, engine.PoolRef{Namespace: cm.Namespace, Name: pool})
		}
	}
	return out
}
