package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// ReadMode says where a reconcile reads the pool from.
type ReadMode int

const (
	// ReadHybrid (the default) reads the informer cache and, when the cache
	// shows work to do on a member, reads fresh from the API server and
	// reconciles on that: no request for a pool in line, no action on a
	// stale view. For a minute after a list or watch failed (an API outage),
	// it reads fresh every time: the cache may not know of the work yet.
	ReadHybrid ReadMode = iota
	// ReadCache reconciles on the informer cache only.
	ReadCache
	// ReadFresh reads fresh from the API server on every reconcile (one Get
	// and three Lists), as the command-line reconcile does.
	ReadFresh
)

// Defaults of Options.
const (
	DefaultWorkers = 4
	DefaultResync  = 30 * time.Second
	DefaultSettle  = time.Second
)

// Options configure a Controller.
type Options struct {
	Client kubernetes.Interface
	// Namespace to reconcile; metav1.NamespaceAll ("") for every namespace.
	Namespace string
	// Pool, when set, limits the controller to this one pool of Namespace,
	// which it then reconciles on every resync even without a definition.
	Pool string
	// Workers reconcile different pools at once (default 4); one pool is
	// never reconciled by two workers at the same time.
	Workers int
	// Resync re-enqueues every pool this often (default 30s).
	Resync time.Duration
	// Settle delays the reconcile an event asks for, so that a burst of
	// events is one reconcile (default 1s; negative for none).
	Settle time.Duration
	Reads  ReadMode
	// RateLimiter spaces the retries of a failing pool (default: exponential
	// per pool from 500ms up to Resync, and 10/s with a burst of 100 overall).
	RateLimiter workqueue.TypedRateLimiter[engine.PoolRef]
	// Now is the engine's clock (default time.Now).
	Now func() time.Time
	// ClockID and ServerOffset are the engine's (engine.Engine): the name
	// of this machine's clock and the API server's clock ahead of it.
	ClockID      string
	ServerOffset func() (time.Duration, bool)
	// LeaderElection, when set, runs the workers only while this instance
	// holds the election Lease.
	LeaderElection *LeaderElection
	// Report is told of every reconcile (from the worker goroutines).
	Report func(k engine.PoolRef, res engine.ReconcileResult, err error, took time.Duration)
	// Recorder, when set, gets a Warning Event on the pool ConfigMap for each
	// failed step (see NewRecorder).
	Recorder record.EventRecorder
	// Logger receives the controller's structured log: start and stop,
	// caches, leadership, outages, failed reconciles (pool and step) and
	// every reconcile that changed something (pool, actions, duration); at
	// level -2 (verbosity 2) every reconcile.
	Logger *slog.Logger
	// Logf, when set and Logger is not, receives the same lines as text.
	Logf func(format string, a ...any)
}

// Controller reconciles every pool it sees. Build it with New, run it once
// with Run.
type Controller struct {
	opts    Options
	client  kubernetes.Interface
	set     *informerSet
	queue   workqueue.TypedRateLimitingInterface[engine.PoolRef]
	metrics *metrics

	started atomic.Bool
	synced  atomic.Bool
	leading atomic.Bool
	// unreachable is set while /livez probes fail.
	unreachable atomic.Bool
	elector     atomic.Pointer[leaderelection.LeaderElector]
	// seen remembers when future-stamped Leases were first seen.
	seen sightings
}

// New builds a Controller. Nothing is read until Run.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("controller: no client")
	}
	if opts.Pool != "" {
		if err := engine.ValidatePoolName(opts.Pool); err != nil {
			return nil, err
		}
		if opts.Namespace == "" {
			return nil, errors.New("controller: a single pool needs a namespace")
		}
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.Settle == 0 {
		opts.Settle = DefaultSettle
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = loggerFromLogf(opts.Logf)
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = DefaultRateLimiter(opts.Resync)
	}
	if le := opts.LeaderElection; le != nil {
		if err := le.complete(opts); err != nil {
			return nil, err
		}
	}
	c := &Controller{opts: opts, client: opts.Client}
	c.metrics = newMetrics(c)
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(opts.RateLimiter, workqueue.TypedRateLimitingQueueConfig[engine.PoolRef]{
		Name: queueName, MetricsProvider: c.metrics.queue,
	})
	c.set = newInformerSet(opts.Client, opts.Namespace, cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onAdd,
		UpdateFunc: c.onUpdate,
		DeleteFunc: c.onDelete,
	}, func() {
		// The pools are queued once the caches sync; a node's news after
		// that queues them again.
		if c.set.nodes.News() > 0 {
			c.enqueueAll()
		}
	}, opts.Logger)
	return c, nil
}

// DefaultRateLimiter retries a failing pool after 500ms, doubling up to max
// (at least a second), with an overall limit of 10 retries a second.
func DefaultRateLimiter(maxDelay time.Duration) workqueue.TypedRateLimiter[engine.PoolRef] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[engine.PoolRef](500*time.Millisecond, max(maxDelay, time.Second)),
		&workqueue.TypedBucketRateLimiter[engine.PoolRef]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Event handlers: they only enqueue the pool the object belongs to.

func (c *Controller) onAdd(obj any) { c.enqueueObject(obj) }

func (c *Controller) onUpdate(oldObj, newObj any) {
	c.enqueueObject(newObj)
	if o, ok := keyOf(oldObj); ok {
		if n, ok := keyOf(newObj); !ok || n != o {
			c.enqueue(o, c.opts.Settle) // relabelled: the old pool lost a member
		}
	}
}

func (c *Controller) onDelete(obj any) { c.enqueueObject(obj) }

func (c *Controller) enqueueObject(obj any) {
	if k, ok := keyOf(obj); ok {
		c.enqueue(k, c.opts.Settle)
	}
}

func (c *Controller) enqueue(k engine.PoolRef, after time.Duration) {
	if c.opts.Pool != "" && (k.Name != c.opts.Pool || k.Namespace != c.opts.Namespace) {
		return
	}
	if after > 0 {
		c.queue.AddAfter(k, after)
		return
	}
	c.queue.Add(k)
}

// enqueueAll is the resync: every pool with a definition (and the single
// pool, defined or not).
func (c *Controller) enqueueAll() {
	if c.opts.Pool != "" {
		c.queue.Add(engine.PoolRef{Namespace: c.opts.Namespace, Name: c.opts.Pool})
		return
	}
	for _, k := range c.set.pools() {
		c.queue.Add(k)
	}
}

// probed takes a /livez outcome: a failure makes the cache suspect (see
// ReadHybrid); the first answer after failures enqueues every pool, so that
// work missed during an outage is found at once, with fresh reads.
func (c *Controller) probed(err error) {
	if err != nil {
		c.set.watchFailed(time.Now())
		if !c.unreachable.Swap(true) {
			c.opts.Logger.Error("the API server is unreachable", "err", err)
		}
		return
	}
	if c.unreachable.Swap(false) {
		c.opts.Logger.Info("the API server answers again: reconciling every pool")
		c.enqueueAll()
	}
}

// Run starts the informers, waits for their caches, and reconciles until ctx
// ends (with leader election: only while leading). It returns nil when ctx
// ended, and ErrLeadershipLost when this instance lost the lead.
func (c *Controller) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("controller: already running")
	}
	defer c.queue.ShutDown()
	// The informers too end with Run (their watch errors are logged), and
	// Run waits for them.
	ctx, stopInformers := context.WithCancel(ctx)
	defer func() { stopInformers(); c.set.Shutdown() }()
	c.set.Start(ctx)
	// The probe ends with Run (also when the lead is lost and ctx lives on),
	// so nothing logs after Run returned.
	pctx, stopProbe := context.WithCancel(ctx)
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		kube.Probe(pctx, c.client, kube.DefaultProbeInterval, c.probed)
	}()
	defer func() { stopProbe(); <-probed }()
	c.opts.Logger.Info("waiting for the informer caches", "scope", c.scope())
	if !c.set.WaitForSync(ctx) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("controller: the informer caches did not sync")
	}
	c.synced.Store(true)
	if c.opts.Pool == "" {
		c.opts.Logger.Info("informer caches synced", "pools", len(c.set.pools()))
	} else {
		c.opts.Logger.Info("informer caches synced")
	}
	if c.opts.LeaderElection == nil {
		c.runWorkers(ctx)
		return nil
	}
	return c.runElected(ctx)
}

func (c *Controller) scope() string {
	switch {
	case c.opts.Pool != "":
		return "pool " + engine.PoolRef{Namespace: c.opts.Namespace, Name: c.opts.Pool}.String()
	case c.opts.Namespace == "":
		return "all namespaces"
	}
	return "namespace " + c.opts.Namespace
}

// runWorkers reconciles until ctx ends, then stops taking work and waits
// for the reconciles in flight (they see ctx cancelled: the engine abandons
// its step and unlocks its Leases with a context of its own).
func (c *Controller) runWorkers(ctx context.Context) {
	c.leading.Store(true)
	defer c.leading.Store(false)
	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	wg.Go(func() {
		t := time.NewTicker(c.opts.Resync)
		defer t.Stop()
		for {
			c.enqueueAll()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

// processNext reconciles one pool from the queue; false when the queue is
// shut down or ctx ended.
func (c *Controller) processNext(ctx context.Context) bool {
	k, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(k)
	if ctx.Err() != nil {
		return false
	}
	_, err := c.sync(ctx, k)
	switch {
	case err == nil, errors.Is(err, engine.ErrPoolNotFound) && c.opts.Pool == "":
		// Done, or no definition: a new one's event enqueues the pool again.
		c.queue.Forget(k)
	case ctx.Err() != nil:
	default:
		c.queue.AddRateLimited(k)
	}
	return true
}

// sync reconciles one pool and records its metrics.
func (c *Controller) sync(ctx context.Context, k engine.PoolRef) (engine.ReconcileResult, error) {
	start := time.Now()
	rd := &recordingReader{seen: &c.seen, now: c.opts.Now}
	var seen *engine.PoolView // the cached view, when the engine reconciles on it
	switch c.opts.Reads {
	case ReadFresh:
		rd.inner = kube.NewCluster(c.client, k.Namespace)
	case ReadCache:
		rd.inner = cacheReader{set: c.set, namespace: k.Namespace}
	default:
		snap, err := c.set.snapshot(ctx, k)
		if err != nil {
			err = fmt.Errorf("read pool %s: %w", k.Name, err)
			c.done(ctx, k, engine.ReconcileResult{}, err, nil, nil, start)
			return engine.ReconcileResult{}, err
		}
		c.seen.stamp(&snap, c.opts.Now())
		v := engine.Observe(snap, c.opts.Now())
		// A cache that lost its watch may not know of the work: read fresh
		// for a while after any list or watch failed (an API outage).
		if needsWork(v) || c.set.suspect(time.Now()) {
			rd.inner = kube.NewCluster(c.client, k.Namespace)
		} else {
			rd.first, rd.inner, seen = &snap, cacheReader{set: c.set, namespace: k.Namespace}, &v
		}
	}
	eng := &engine.Engine{
		Cluster:      &kube.Cluster{Client: c.client, Namespace: k.Namespace, Reader: rd},
		Namespace:    k.Namespace,
		Now:          c.opts.Now,
		ClockID:      c.opts.ClockID,
		ServerOffset: c.opts.ServerOffset,
	}
	res, err := eng.Reconcile(ctx, k.Name)
	if rd.reads != 1 {
		seen = nil // the engine read again: its last read is newer
	}
	c.done(ctx, k, res, err, rd.last, seen, start)
	return res, err
}

// done records a reconcile: the metrics are computed from the engine's last
// read (seen, when already observed) and the report is made.
func (c *Controller) done(ctx context.Context, k engine.PoolRef, res engine.ReconcileResult, err error, last *engine.Snapshot, seen *engine.PoolView, start time.Time) {
	took := time.Since(start)
	if ctx.Err() != nil {
		return // abandoned at shutdown: neither a result nor an error
	}
	c.metrics.record(k, res, err, last, seen, c.opts.Now(), took)
	c.logResult(k, res, err, took)
	c.recordFailures(res, err, last)
	if c.opts.Report != nil {
		c.opts.Report(k, res, err, took)
	}
}

// Synced reports whether the informer caches have synced.
func (c *Controller) Synced() bool { return c.synced.Load() }

// Leading reports whether this instance runs its workers (always true once
// synced without leader election).
func (c *Controller) Leading() bool { return c.leading.Load() }

// QueueLen is the number of pools waiting to be reconciled.
func (c *Controller) QueueLen() int { return c.queue.Len() }
