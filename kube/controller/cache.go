package controller

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// informerSet is the shared informer cache of every pool object, in one
// namespace or in all of them (kube.NewPoolInformers, as the dashboard's
// Watcher builds it), with the controller's handler, and the time of the
// last failed list, watch or probe.
type informerSet struct {
	*kube.PoolInformers
	// lastWatchError is when a list or watch or a /livez probe last failed
	// (UnixNano, 0 for never): until suspectWindow after it, the cache may
	// miss changes. (Informers retry a refused connection without reporting
	// it, hence the probe.)
	lastWatchError atomic.Int64
	// nodes is the optional node informer: its down nodes go into every
	// snapshot (engine.Snapshot.NodeDown), so that no reconcile replaces a
	// member because its node is down (nil when nodes may not be read).
	nodes *kube.NodeWatch
	// budgets is the optional informer of the pools' PodDisruptionBudgets:
	// a pool whose budget it holds as written costs its reconcile no read
	// of it (engine.Snapshot.DisruptionBudget).
	budgets *kube.BudgetWatch
}

// Start starts the pool informers and the node informer.
func (s *informerSet) Start(ctx context.Context) {
	s.PoolInformers.Start(ctx)
	s.nodes.Start(ctx)
	s.budgets.Start(ctx)
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

// newInformerSet builds the informers of namespace (metav1.NamespaceAll for
// every namespace) and registers h on each. List and watch errors go to log
// (each distinct message once in a row). nodesChanged is called when a node
// goes down or comes back. Nothing is read until Start.
func newInformerSet(client kubernetes.Interface, namespace string, h cache.ResourceEventHandler, nodesChanged func(), log *slog.Logger) *informerSet {
	s := &informerSet{nodes: kube.NewNodeWatch(client, nodesChanged), budgets: kube.NewBudgetWatch(client, namespace, h)}
	var mu sync.Mutex
	last := map[string]string{} // by resource
	// Instead of cache.DefaultWatchErrorHandler, which only logs through
	// klog; the reflector backs off and retries by itself.
	s.PoolInformers = kube.NewPoolInformers(client, namespace, h, func(_ context.Context, r *cache.Reflector, err error) {
		s.watchFailed(time.Now())
		mu.Lock()
		defer mu.Unlock()
		res := r.TypeDescription()
		if msg := err.Error(); msg != last[res] {
			last[res] = msg
			log.Warn("list/watch failed; retrying", "resource", res, "err", msg)
		}
	})
	return s
}

// keyOf names the pool of an object from its pool label (kube.PoolOf).
func keyOf(obj any) (engine.PoolRef, bool) { return kube.PoolOf(obj) }

// snapshot returns one pool's objects from the caches (kube.ErrNotSynced
// while they have not synced).
func (s *informerSet) snapshot(ctx context.Context, k engine.PoolRef) (engine.Snapshot, error) {
	snap, err := s.Snapshot(ctx, k)
	snap.NodeDown, snap.NodeCordoned = s.nodes.Down(), s.nodes.Cordoned()
	snap.DisruptionBudget = s.budgets.Read(k.Namespace, k.Name)
	return snap, err
}

// pools lists the pools that have a definition in the cache.
func (s *informerSet) pools() []engine.PoolRef { return s.Pools() }

// cacheReader is an engine.Reader of one namespace served by the caches.
type cacheReader struct {
	set       *informerSet
	namespace string
}

func (r cacheReader) Snapshot(ctx context.Context, pool string) (engine.Snapshot, error) {
	return r.set.snapshot(ctx, engine.PoolRef{Namespace: r.namespace, Name: pool})
}

// recordingReader hands out a first snapshot already read (when set), then
// reads through inner, and keeps the last snapshot it returned: the metrics
// are computed from what the engine saw last.
type recordingReader struct {
	first *engine.Snapshot
	inner engine.Reader
	last  *engine.Snapshot
	reads int
	// seen, when set, stamps each snapshot read through inner with the
	// first sightings of its future-stamped Leases (clock now).
	seen *sightings
	now  func() time.Time
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
		if r.seen != nil {
			r.seen.stamp(&s, r.now())
		}
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
