package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// poolIndex indexes every cached object by the namespace/pool of its label,
// so that one pool's snapshot does not scan the whole namespace.
const poolIndex = "ctpool-pool"

// informerSet is the shared informer cache of every pool object: the pool
// ConfigMaps and the labelled Pods, PVCs and Leases, in one namespace or in
// all of them. It is built like kube.Watcher (generated factory, a label
// selector on the pool label, kube.StripForCache as the transform), with an
// index by pool and the controller's handler.
type informerSet struct {
	factory informers.SharedInformerFactory
	cms     cache.SharedIndexInformer
	pods    cache.SharedIndexInformer
	pvcs    cache.SharedIndexInformer
	leases  cache.SharedIndexInformer
	// lastWatchError is when a list or watch or a /livez probe last failed
	// (UnixNano, 0 for never): until suspectWindow after it, the cache may
	// miss changes. (Informers retry a refused connection without reporting
	// it, hence the probe.)
	lastWatchError atomic.Int64
}

// suspectWindow is how long after a failed list, watch or probe the cache is
// not trusted to say that a pool needs nothing. A reflector retries with a
// backoff of at most 30 s, so a minute covers its way back after an outage.
const suspectWindow = time.Minute

// suspect reports whether a failure was seen within suspectWindow of now.
func (s *informerSet) suspect(now time.Time) bool {
	at := s.lastWatchError.Load()
	return at != 0 && now.Sub(time.Unix(0, at)) < suspectWindow
}

// watchFailed records a failed list, watch or probe.
func (s *informerSet) watchFailed(at time.Time) { s.lastWatchError.Store(at.UnixNano()) }

func poolSelector() labels.Selector {
	req, err := labels.NewRequirement(engine.LabelPool, selection.Exists, nil)
	if err != nil { // a constant, valid key: cannot fail
		panic(fmt.Sprintf("pool label selector: %v", err))
	}
	return labels.NewSelector().Add(*req)
}

// newInformerSet builds the informers of namespace (metav1.NamespaceAll for
// every namespace) and registers h on each. List and watch errors go to log
// (each distinct message once in a row). Nothing is read until start.
func newInformerSet(client kubernetes.Interface, namespace string, h cache.ResourceEventHandler, log *slog.Logger) *informerSet {
	sel := poolSelector().String()
	f := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }),
		informers.WithTransform(kube.StripForCache),
	)
	s := &informerSet{
		factory: f,
		cms:     f.Core().V1().ConfigMaps().Informer(),
		pods:    f.Core().V1().Pods().Informer(),
		pvcs:    f.Core().V1().PersistentVolumeClaims().Informer(),
		leases:  f.Coordination().V1().Leases().Informer(),
	}
	for _, inf := range s.all() {
		// These fail only once the informer has started; it has not.
		_ = inf.AddIndexers(cache.Indexers{poolIndex: indexByPool})
		_, _ = inf.AddEventHandler(h)
		var mu sync.Mutex
		last := ""
		// Instead of cache.DefaultWatchErrorHandler, which only logs through
		// klog; the reflector backs off and retries by itself.
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) {
			s.watchFailed(time.Now())
			mu.Lock()
			defer mu.Unlock()
			if msg := err.Error(); msg != last {
				last = msg
				log.Warn("list/watch failed; retrying", "resource", r.TypeDescription(), "err", msg)
			}
		})
	}
	return s
}

func (s *informerSet) all() []cache.SharedIndexInformer {
	return []cache.SharedIndexInformer{s.cms, s.pods, s.pvcs, s.leases}
}

func (s *informerSet) start(ctx context.Context) {
	s.factory.Start(ctx.Done())
	context.AfterFunc(ctx, s.factory.Shutdown)
}

func (s *informerSet) waitForSync(ctx context.Context) bool {
	synced := make([]cache.InformerSynced, 0, 4)
	for _, inf := range s.all() {
		synced = append(synced, inf.HasSynced)
	}
	return cache.WaitForCacheSync(ctx.Done(), synced...)
}

func (s *informerSet) synced() bool {
	for _, inf := range s.all() {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

func indexByPool(obj any) ([]string, error) {
	k, ok := keyOf(obj)
	if !ok {
		return nil, nil
	}
	return []string{k.String()}, nil
}

// keyOf names the pool of an object from its pool label (tombstones too). An
// object without the label, or with a value that is no pool name, has none.
func keyOf(obj any) (Key, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return Key{}, false
	}
	pool := m.GetLabels()[engine.LabelPool]
	if pool == "" || engine.ValidatePoolName(pool) != nil {
		return Key{}, false
	}
	return Key{Namespace: m.GetNamespace(), Pool: pool}, true
}

// errNotSynced: a snapshot was asked for before the caches had synced.
var errNotSynced = errors.New("the informer cache has not synced yet")

// snapshot returns one pool's objects from the caches. It fails while the
// caches have not synced, so that nothing acts on an empty cache.
func (s *informerSet) snapshot(ctx context.Context, k Key) (engine.Snapshot, error) {
	snap := engine.Snapshot{Namespace: k.Namespace, Pool: k.Pool}
	if err := ctx.Err(); err != nil {
		return snap, err
	}
	if !s.synced() {
		return snap, errNotSynced
	}
	objs := func(inf cache.SharedIndexInformer) []any {
		items, _ := inf.GetIndexer().ByIndex(poolIndex, k.String())
		return items
	}
	name := engine.ConfigMapName(k.Pool)
	for _, o := range objs(s.cms) {
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == name {
			snap.ConfigMap = cm
		}
	}
	for _, o := range objs(s.pods) {
		if p, ok := o.(*corev1.Pod); ok {
			snap.Pods = append(snap.Pods, p)
		}
	}
	for _, o := range objs(s.pvcs) {
		if p, ok := o.(*corev1.PersistentVolumeClaim); ok {
			snap.PVCs = append(snap.PVCs, p)
		}
	}
	for _, o := range objs(s.leases) {
		if l, ok := o.(*coordinationv1.Lease); ok {
			snap.Leases = append(snap.Leases, l)
		}
	}
	return snap, nil
}

// pools lists the pools that have a definition in the cache.
func (s *informerSet) pools() []Key {
	var out []Key
	for _, o := range s.cms.GetStore().List() {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		k, ok := keyOf(cm)
		if ok && cm.Name == engine.ConfigMapName(k.Pool) {
			out = append(out, k)
		}
	}
	return out
}

// cacheReader is an engine.Reader of one namespace served by the caches.
type cacheReader struct {
	set       *informerSet
	namespace string
}

func (r cacheReader) Snapshot(ctx context.Context, pool string) (engine.Snapshot, error) {
	return r.set.snapshot(ctx, Key{Namespace: r.namespace, Pool: pool})
}

// recordingReader hands out a first snapshot already read (when set), then
// reads through inner, and keeps the last snapshot it returned: the metrics
// are computed from what the engine saw last.
type recordingReader struct {
	first *engine.Snapshot
	inner engine.Reader
	last  *engine.Snapshot
	reads int
}

func (r *recordingReader) Snapshot(ctx context.Context, pool string) (engine.Snapshot, error) {
	r.reads++
	if r.first != nil {
		s := *r.first
		r.first = nil
		r.last = &s
		return s, nil
	}
	s, err := r.inner.Snapshot(ctx, pool)
	if err == nil {
		r.last = &s
	}
	return s, err
}

// needsWork reports whether a reconcile of this view would write to a member:
// create, start, replace or delete one, or take over a stale reconciler
// Lease. It mirrors the plan of engine.Reconcile and the skips of its Lease
// step (claimed members, members another reconciler holds). It only chooses
// where the reconcile reads from (see ReadHybrid), never what it does: were
// it wrong, the engine would act on the cache, which is safe, only staler.
func needsWork(v engine.PoolView) bool { return engine.NeedsWork(v) }
