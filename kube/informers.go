package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// lastAppliedAnnotation is written by kubectl apply; the cache drops it from
// Pods and PVCs (StripForCache).
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Watcher keeps an informer cache of every pool object in one namespace, or
// in several (NewFleetWatcher: every namespace or a list of them) (the
// pool ConfigMaps and the labelled Pods, PVCs and Leases) for the dashboard.
//
// Its event handlers only make a non-blocking send on a channel of capacity
// one, so a burst of any size leaves at most one pending signal: the reader
// of Changed rebuilds from the listers once for the whole burst. Snapshots and
// Snapshot read the listers, so a Watcher is an engine.Reader served from the
// cache. It also records the connection's health: the time of the last
// object received and the last watch error.
type Watcher struct {
	client    kubernetes.Interface
	namespace string
	now       func() time.Time
	informers *PoolInformers
	selector  labels.Selector

	// The fleet: every namespace (one informer set, cluster-wide) or the
	// namespaces named (one informer set each). nil for one namespace.
	fleet      []*PoolInformers
	namespaces []string
	// pools: a fleet's pools as last read (fleetcache.go).
	pools *fleetCache
	// nodes: the optional informer of the nodes, for the snapshots'
	// NodeDown (nodewatch.go).
	nodes *NodeWatch

	cms    corelisters.ConfigMapLister
	pods   corelisters.PodLister
	pvcs   corelisters.PersistentVolumeClaimLister
	leases coordinationlisters.LeaseLister

	changed chan struct{}

	// changes is what changed since the last TakeChanges (changes.go).
	changesMu sync.Mutex
	changes   changeLog

	// probeEvery is how often the API server's /livez is asked (0: never).
	probeEvery time.Duration

	mu        sync.Mutex
	lastEvent time.Time
	lastErr   error
	lastErrAt time.Time
	// refused is the API server's last refusal of the credentials (nil:
	// none since a request with them succeeded). It stands until the probe
	// succeeds: a watch opened before the refusal goes on delivering
	// events, which tell nothing of the credentials in use now.
	refused error

	events  atomic.Int64 // handler calls
	signals atomic.Int64 // sends that found room in the channel
	started atomic.Bool
}

var _ engine.Reader = (*Watcher)(nil)

// WatcherOption configures a Watcher.
type WatcherOption func(*Watcher)

// withClock sets the clock the Watcher stamps its health with. Only this
// package's tests set it.
func withClock(now func() time.Time) WatcherOption { return func(w *Watcher) { w.now = now } }

// NewWatcher builds the informers for namespace (NewPoolInformers).
// Nothing is read until Start.
func NewWatcher(client kubernetes.Interface, namespace string, opts ...WatcherOption) *Watcher {
	w := &Watcher{
		client:     client,
		namespace:  namespace,
		probeEvery: DefaultProbeInterval,
		now:        time.Now,
		changed:    make(chan struct{}, 1),
		changes:    changeLog{all: true},
	}
	for _, o := range opts {
		o(w)
	}
	w.nodes = NewNodeWatch(listThenWatch{streamedLists{client}}, w.nodesChanged)
	w.informers = w.newInformers(namespace)
	w.selector = w.informers.Selector()
	w.cms = corelisters.NewConfigMapLister(w.informers.ConfigMaps.GetIndexer())
	w.pods = corelisters.NewPodLister(w.informers.Pods.GetIndexer())
	w.pvcs = corelisters.NewPersistentVolumeClaimLister(w.informers.PVCs.GetIndexer())
	w.leases = coordinationlisters.NewLeaseLister(w.informers.Leases.GetIndexer())
	return w
}

// NewFleetWatcher is a Watcher of the pools of several namespaces: of every
// namespace when namespaces is empty (one cluster-wide informer per kind,
// with the same label selector and transform), else of each namespace named
// (one informer set each). Its Snapshots carry each pool's namespace.
func NewFleetWatcher(client kubernetes.Interface, namespaces []string, opts ...WatcherOption) *Watcher {
	w := &Watcher{
		client:     client,
		namespaces: namespaces,
		probeEvery: DefaultProbeInterval,
		now:        time.Now,
		changed:    make(chan struct{}, 1),
		changes:    changeLog{all: true},
		pools:      &fleetCache{all: true},
	}
	for _, o := range opts {
		o(w)
	}
	w.nodes = NewNodeWatch(listThenWatch{streamedLists{client}}, w.nodesChanged)
	if len(namespaces) == 0 {
		w.fleet = []*PoolInformers{w.newInformers(metav1.NamespaceAll)}
	}
	for _, ns := range namespaces {
		w.fleet = append(w.fleet, w.newInformers(ns))
	}
	w.selector = w.fleet[0].Selector()
	return w
}

// newInformers builds the informers of one namespace (NamespaceAll: every
// namespace) with the Watcher's handler and watch-error hook.
func (w *Watcher) newInformers(namespace string) *PoolInformers {
	var h cache.ResourceEventHandler = cache.FilteringResourceEventHandler{
		FilterFunc: w.selected,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { w.record(obj); w.signal() },
			UpdateFunc: func(old, obj any) {
				w.record(old)
				w.record(obj)
				w.signal()
			},
			DeleteFunc: func(obj any) { w.record(obj); w.signal() },
		},
	}
	if w.pools != nil {
		h = w.pools.markingHandler(h)
	}
	return NewPoolInformers(listThenWatch{streamedLists{w.client}}, namespace, h, w.onWatchError)
}

// listThenWatch is a client whose informers list (in pages) and then
// watch, rather than stream the initial objects in a watch (client-go's
// WatchListClient): on the API server of the local plane a streamed
// initial list of 1,000 members took two to three times as long as the
// LISTs that --once sends, and the dashboard's first screen waits on it.
type listThenWatch struct{ kubernetes.Interface }

// IsWatchListSemanticsUnSupported tells client-go's reflectors to list.
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// sets are the Watcher's informer sets.
func (w *Watcher) sets() []*PoolInformers {
	if w.fleet != nil {
		return w.fleet
	}
	return []*PoolInformers{w.informers}
}

// Namespace is the namespace the Watcher reads ("" for a fleet).
func (w *Watcher) Namespace() string { return w.namespace }

// Namespaces are the namespaces a fleet Watcher reads (nil: all of them, or
// one namespace: see Namespace).
func (w *Watcher) Namespaces() []string { return w.namespaces }

// Fleet reports whether the Watcher reads several namespaces.
func (w *Watcher) Fleet() bool { return w.fleet != nil }

// Start starts the informers; they stop when ctx ends. It does not wait for
// the caches to sync (see WaitForSync and Synced).
func (w *Watcher) Start(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("watcher already started")
	}
	for _, s := range w.sets() {
		s.Start(ctx)
	}
	w.nodes.Start(ctx)
	go Probe(ctx, w.client, w.probeEvery, w.probed)
	// The end of the first sync is a change for the reader: a dashboard
	// shows nothing before it, and an empty namespace sends no event.
	// client-go's WaitForCacheSync looks every 100ms; the first screen
	// waits on this, so look every 10ms (a few locked reads).
	go func() {
		err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) { return w.Synced(), nil })
		if err == nil {
			select {
			case w.changed <- struct{}{}:
			default:
			}
		}
	}()
	return nil
}

// WaitForSync waits until every cache has synced or ctx ends.
func (w *Watcher) WaitForSync(ctx context.Context) bool {
	for _, s := range w.sets() {
		if !s.WaitForSync(ctx) {
			return false
		}
	}
	return true
}

// Synced reports whether every cache has finished its first list.
func (w *Watcher) Synced() bool {
	for _, s := range w.sets() {
		if !s.Synced() {
			return false
		}
	}
	return true
}

// Changed delivers at most one pending signal after any number of changes.
func (w *Watcher) Changed() <-chan struct{} { return w.changed }

// LastSync is when the Watcher last heard from the API server: an object
// (a list or a watch event) or a successful /livez probe; zero before the first.
func (w *Watcher) LastSync() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastEvent
}

// LastWatchError is the last list or watch error and when it happened; a
// zero time means none since start.
//
// While the API server refuses the credentials (a *CredentialsError), that
// refusal is the error, dated no earlier than the last event, until a probe
// with the credentials succeeds.
func (w *Watcher) LastWatchError() (time.Time, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refused != nil {
		at := w.lastErrAt
		if w.lastEvent.After(at) {
			at = w.lastEvent
		}
		return at, w.refused
	}
	return w.lastErrAt, w.lastErr
}

// downLocked reports whether LastWatchError names an error at or after the
// last event (w.mu held).
func (w *Watcher) downLocked() bool {
	return w.refused != nil || (!w.lastErrAt.IsZero() && !w.lastErrAt.Before(w.lastEvent))
}

// Stats returns how many handler events arrived and how many of them found
// room to signal (the others coalesced into a pending signal).
//
// Only tests and benchmarks read it, to know the handlers saw what they
// sent: this package's and those of tui and cmd/ctpool-tui, which is why it
// is exported (internal/kubetest cannot hold it: this package's own tests
// import kubetest).
func (w *Watcher) Stats() (events, signals int64) { return w.events.Load(), w.signals.Load() }

// Snapshots returns one Snapshot per pool from the caches, sorted by pool
// (a fleet's by namespace, then pool; a fleet's pools are kept between two
// calls, and only those whose objects changed are regrouped), each with
// the down nodes (NodeDown). The slices and maps of a Snapshot are shared
// with later calls: read them, never change them.
func (w *Watcher) Snapshots() []engine.Snapshot {
	var snaps []engine.Snapshot
	if w.fleet != nil {
		snaps = w.fleetSnapshots()
	} else {
		cms, _ := w.cms.ConfigMaps(w.namespace).List(w.selector)
		pods, _ := w.pods.Pods(w.namespace).List(w.selector)
		pvcs, _ := w.pvcs.PersistentVolumeClaims(w.namespace).List(w.selector)
		leases, _ := w.leases.Leases(w.namespace).List(labels.Everything()) // claim Leases, labelled or not
		snaps = engine.GroupByPool(w.namespace, cms, pods, pvcs, leases)
	}
	down, cordoned := w.NodeDown(), w.nodes.Cordoned()
	for i := range snaps {
		snaps[i].NodeDown, snaps[i].NodeCordoned = down, cordoned
	}
	return snaps
}

// NodeDown is the down nodes by name with their evidence (engine.NodeDown),
// from the Watcher's optional node informer: nil while the nodes are
// unknown (not listed yet, or the identity may not list or watch them).
// The map is shared: read it, never change it.
func (w *Watcher) NodeDown() map[string]string { return w.nodes.Down() }

// nodesChanged: a node went down or came back. A node is no pool object:
// every pool is read whole again, with the new NodeDown.
func (w *Watcher) nodesChanged() {
	w.changesMu.Lock()
	w.changes.all = true
	w.changesMu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// withNodes gives a snapshot read from the caches the down nodes.
func (w *Watcher) withNodes(snap engine.Snapshot, err error) (engine.Snapshot, error) {
	if err == nil {
		snap.NodeDown, snap.NodeCordoned = w.NodeDown(), w.nodes.Cordoned()
	}
	return snap, err
}

// fleetSnapshots is the fleet's pools, by namespace then pool: those whose
// objects changed since the last read regrouped, the others as they were
// (fleetcache.go).
func (w *Watcher) fleetSnapshots() []engine.Snapshot {
	return w.pools.read(w.fleet, w.fleetSnapshotsWhole)
}

// fleetSnapshotsWhole groups every cached object of the fleet by namespace and
// pool. It reads each store once and puts each object straight into its
// namespace's bucket; the label check of selected is left to
// engine.GroupByPool, which drops an object without a pool label (or, for
// a ConfigMap, one that is not its pool's definition) in the same way.
func (w *Watcher) fleetSnapshotsWhole() []engine.Snapshot {
	by := byNamespace{}
	for _, s := range w.fleet {
		for _, obj := range s.ConfigMaps.GetStore().List() {
			if c, ok := obj.(*corev1.ConfigMap); ok {
				o := by.in(c.Namespace)
				o.cms = append(o.cms, c)
			}
		}
		for _, obj := range s.Pods.GetStore().List() {
			if p, ok := obj.(*corev1.Pod); ok {
				o := by.in(p.Namespace)
				o.pods = append(o.pods, p)
			}
		}
		for _, obj := range s.PVCs.GetStore().List() {
			if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
				o := by.in(c.Namespace)
				o.pvcs = append(o.pvcs, c)
			}
		}
		for _, obj := range s.Leases.GetStore().List() {
			if l, ok := obj.(*coordinationv1.Lease); ok {
				o := by.in(l.Namespace)
				o.leases = append(o.leases, l)
			}
		}
	}
	return by.snapshots()
}

// Snapshot returns one pool's objects from the caches. It fails with
// ErrNotSynced while the caches have not synced, so that an operation never
// acts on an empty cache. A fleet Watcher has no namespace of its own: use In.
func (w *Watcher) Snapshot(ctx context.Context, pool string) (engine.Snapshot, error) {
	if w.fleet != nil {
		return engine.Snapshot{Pool: pool}, errors.New("a fleet cache serves a namespace's pools through In(namespace)")
	}
	return w.withNodes(w.informers.Snapshot(ctx, engine.PoolRef{Namespace: w.namespace, Name: pool}))
}

// In is the cache as an engine.Reader of one namespace's pools (a fleet
// Watcher's reads go to the informer set that holds the namespace).
func (w *Watcher) In(namespace string) engine.Reader {
	return namespaceReader{w: w, namespace: namespace}
}

type namespaceReader struct {
	w         *Watcher
	namespace string
}

func (r namespaceReader) Snapshot(ctx context.Context, pool string) (engine.Snapshot, error) {
	return r.w.withNodes(r.snapshot(ctx, pool))
}

func (r namespaceReader) snapshot(ctx context.Context, pool string) (engine.Snapshot, error) {
	k := engine.PoolRef{Namespace: r.namespace, Name: pool}
	if r.w.fleet == nil {
		if r.namespace != r.w.namespace {
			return engine.Snapshot{Namespace: r.namespace, Pool: pool}, fmt.Errorf("the cache holds namespace %s, not %s", r.w.namespace, r.namespace)
		}
		return r.w.informers.Snapshot(ctx, k)
	}
	if len(r.w.namespaces) == 0 {
		return r.w.fleet[0].Snapshot(ctx, k)
	}
	for i, ns := range r.w.namespaces {
		if ns == r.namespace {
			return r.w.fleet[i].Snapshot(ctx, k)
		}
	}
	return engine.Snapshot{Namespace: r.namespace, Pool: pool}, fmt.Errorf("namespace %s is not one the dashboard watches", r.namespace)
}

// selected reports whether an object carries the pool label, or is a Lease
// of a pool by its name (engine.LeasePool), labelled or not. The list and
// watch already ask the server for the label (the Leases' keep the claim
// Leases); this also holds for clients that ignore label selectors, and for
// tombstones.
func (w *Watcher) selected(obj any) bool {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if l, ok := obj.(*coordinationv1.Lease); ok {
		pool, _ := engine.LeasePool(l)
		return pool != ""
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return w.selector.Matches(labels.Set(m.GetLabels()))
}

// signal records an event and makes a non-blocking send.
func (w *Watcher) signal() {
	w.events.Add(1)
	w.mu.Lock()
	w.lastEvent = w.now()
	if w.probeEvery <= 0 {
		w.refused = nil // no probe to clear it: the event is the only news
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
		w.signals.Add(1)
	default:
	}
}

func (w *Watcher) onWatchError(ctx context.Context, r *cache.Reflector, err error) {
	mapped := MapError(credentialsError(err))
	w.mu.Lock()
	w.lastErr, w.lastErrAt = mapped, w.now()
	var ce *CredentialsError
	if errors.As(mapped, &ce) {
		w.refused = mapped
	}
	w.mu.Unlock()
	select { // let the UI show the disconnection now
	case w.changed <- struct{}{}:
	default:
	}
	cache.DefaultWatchErrorHandler(ctx, r, err)
}
