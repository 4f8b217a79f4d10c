package demo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// DefaultNamespace is the namespace of the demo pools when Options.Namespace is empty.
const DefaultNamespace = "demo"

// FleetNamespaces are the namespaces a fleet demo adds (Options.Fleet).
var FleetNamespaces = []string{"demo-cad", "demo-kiosk"}

// Options configure a simulation.
type Options struct {
	// Namespace of the pools (DefaultNamespace when empty).
	Namespace string
	// Fleet adds the namespaces FleetNamespaces with pools of their own
	// (fleetPools), kept by the simulated reconciler, so that the fleet view
	// (ctpool-tui --demo -A) shows several namespaces.
	Fleet bool
	// Seed makes a run repeatable: the same seed and the same clock give the
	// same cluster.
	Seed int64
	// Now is the clock of every timestamp the simulation writes and of the
	// engine it drives (time.Now when nil).
	Now func() time.Time
	// Speed scales the pace: 1 is real time, 2 twice as fast (0 means 1).
	// Timestamps still come from Now; only the delays shrink.
	Speed float64
}

// tick is how often Run steps the simulation at Speed 1.
const tick = 500 * time.Millisecond

// Sim is a simulated cluster: a fake clientset that behaves enough like an
// API server for informers and the engine, and the controllers and people
// around it (scheduler, kubelets, volume provisioner, reconciler, users,
// an administrator and some trouble). It acts on pools only through
// engine.Engine over kube.NewCluster.
type Sim struct {
	opts   Options
	client *fake.Clientset
	api    *apiServer
	eng    *engine.Engine
	// engines of the fleet's other namespaces (Options.Fleet)
	engines map[string]*engine.Engine

	mu  sync.Mutex // serialises Step
	rng *rand.Rand
	now time.Time // the current step's time

	nodes    map[string]*nodeInfo
	pods     map[types.UID]*podSim
	pvcs     map[types.UID]*pvcSim
	users    []*user
	events   map[string]string // aggregation key -> Event name
	eventKey map[string]string // Event name -> aggregation key
	eventSeq int64

	reconcileAt map[string]time.Time
	userAt      time.Time
	faultAt     time.Time
	faultTurn   int
	pullFault   pullFault
	pullFaults  int
	crashes     int
	driftAt     time.Time
	driftWaits  int
	expireAt    time.Time
	maintAt     time.Time
	resizeAt    time.Time
	shrink      *shrink
	gcAt        time.Time

	errs []error // unexpected failures of the current step
}

// New builds the simulated cluster: a namespace, four nodes, a default
// StorageClass and the pools desk, gpu and kiosk, applied through the engine.
func New(opts Options) (*Sim, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Speed == 0 {
		opts.Speed = 1
	}
	if opts.Speed < 0 || math.IsNaN(opts.Speed) || math.IsInf(opts.Speed, 0) {
		return nil, fmt.Errorf("demo: speed %v must be a positive number", opts.Speed)
	}
	client, api := newClientset(opts.Now, opts.Seed)
	api.admit = admit
	s := &Sim{
		opts:        opts,
		client:      client,
		api:         api,
		rng:         rand.New(rand.NewPCG(uint64(opts.Seed), 0xc7_9001_de50)),
		nodes:       map[string]*nodeInfo{},
		pods:        map[types.UID]*podSim{},
		pvcs:        map[types.UID]*pvcSim{},
		events:      map[string]string{},
		eventKey:    map[string]string{},
		reconcileAt: map[string]time.Time{},
	}
	s.eng = &engine.Engine{
		Cluster:     kube.NewCluster(client, opts.Namespace),
		Namespace:   opts.Namespace,
		Now:         opts.Now,
		Concurrency: 1, // one member at a time keeps a run repeatable
		WaitTimeout: 30 * time.Second,
	}
	s.now = opts.Now()
	ctx := context.Background()
	if err := s.seedCluster(ctx); err != nil {
		return nil, fmt.Errorf("demo: seed cluster: %w", err)
	}
	if err := s.seedPools(ctx); err != nil {
		return nil, fmt.Errorf("demo: seed pools: %w", err)
	}
	s.seedUsers()
	s.userAt = s.after(time.Second, 2*time.Second)
	s.faultAt = s.after(8*time.Second, 12*time.Second)
	s.expireAt = s.after(15*time.Second, 22*time.Second)
	s.driftAt = s.after(25*time.Second, 30*time.Second)
	s.maintAt = s.after(33*time.Second, 40*time.Second)
	s.resizeAt = s.after(42*time.Second, 50*time.Second)
	s.gcAt = s.after(20*time.Second, 20*time.Second)
	return s, nil
}

// Client returns the clientset of the simulated cluster, for the dashboard's
// informers and its engine.
func (s *Sim) Client() kubernetes.Interface { return s.client }

// Run steps the simulation every half second (divided by Speed) until ctx is
// done, and then returns nil. A failed step does not stop it: what failed is
// retried by a later step, as a controller would, and engine failures show in
// the pool status the dashboard reads.
func (s *Sim) Run(ctx context.Context) error {
	interval := time.Duration(float64(tick) / s.opts.Speed)
	if interval < 10*time.Millisecond {
		interval = 10 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		_ = s.Step(ctx)
	}
}

// Step advances the simulation once, at the time Options.Now returns: the
// volume provisioner, the scheduler and the kubelets act on what they see,
// the reconciler runs on the pools that are due, and the users and the
// trouble makers act when their time has come. It returns the unexpected
// failures of the step (lost races with other writers are expected).
func (s *Sim) Step(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	s.now = s.opts.Now()
	s.errs = nil
	// The fake clientset records every action it serves; a long demo would
	// keep them all.
	s.client.ClearActions()

	ns := s.opts.Namespace
	if s.opts.Fleet {
		ns = metav1.NamespaceAll // the nodes run every namespace's Pods
	}
	pods, err := s.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("demo: list pods: %w", err)
	}
	pvcs, err := s.client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("demo: list PVCs: %w", err)
	}
	nodes, err := s.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("demo: list nodes: %w", err)
	}
	s.forget(ctx, pods.Items, pvcs.Items)
	s.provision(ctx, pvcs.Items)
	s.schedule(ctx, nodes.Items, pods.Items, pvcs.Items)
	s.runKubelets(ctx, pods.Items)

	pools, err := s.pools(ctx)
	if err != nil {
		return fmt.Errorf("demo: list pools: %w", err)
	}
	s.reconcile(ctx, pools)
	s.reconcileFleet(ctx)
	s.actUsers(ctx, pools)
	s.makeTrouble(ctx, pods.Items)
	s.collectEvents(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(s.errs...)
}

// note keeps an unexpected failure for Step's result.
func (s *Sim) note(what string, err error) {
	if err == nil || expected(err) {
		return
	}
	s.errs = append(s.errs, fmt.Errorf("demo: %s: %w", what, err))
}

// expected reports failures that come from racing other writers (the
// dashboard acts on the same objects) or from the state of the pools.
func expected(err error) bool {
	for _, e := range []error{
		engine.ErrConflict, engine.ErrNotFound, engine.ErrAlreadyExists,
		engine.ErrNoFreeMembers, engine.ErrPoolNotFound, engine.ErrNotHolder,
		engine.ErrMaintenance, engine.ErrClaimed, context.Canceled, context.DeadlineExceeded,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return apierrors.IsConflict(err) || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err)
}

// pools lists the defined pools (any pool, also ones the dashboard creates).
func (s *Sim) pools(ctx context.Context) ([]string, error) {
	refs, err := kube.ListDefinedPools(ctx, s.client, s.opts.Namespace)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.Name)
	}
	return out, nil
}

// reconcileEvery is the reconciler's interval per pool at Speed 1.
const reconcileEvery = 4 * time.Second

// reconcile runs engine.Reconcile on each pool whose turn has come.
func (s *Sim) reconcile(ctx context.Context, pools []string) {
	for i, p := range pools {
		at, ok := s.reconcileAt[p]
		if !ok {
			// Stagger the pools so the screen does not change all at once.
			at = s.now.Add(s.scale(time.Second + time.Duration(i)*1300*time.Millisecond))
			s.reconcileAt[p] = at
		}
		if s.now.Before(at) {
			continue
		}
		s.reconcileAt[p] = s.now.Add(s.scale(reconcileEvery))
		_, err := s.eng.Reconcile(ctx, p)
		s.note("reconcile "+p, err)
	}
	for p := range s.reconcileAt {
		if !contains(pools, p) && !strings.Contains(p, "/") {
			delete(s.reconcileAt, p)
		}
	}
}

// Namespaces are the namespaces of the simulated pools: the main one, and
// FleetNamespaces with Options.Fleet.
func (s *Sim) Namespaces() []string {
	if !s.opts.Fleet {
		return []string{s.opts.Namespace}
	}
	return append([]string{s.opts.Namespace}, FleetNamespaces...)
}

// engineIn is the engine of a namespace of the simulation.
func (s *Sim) engineIn(ns string) *engine.Engine {
	if ns == s.opts.Namespace {
		return s.eng
	}
	if e, ok := s.engines[ns]; ok {
		return e
	}
	e := *s.eng
	e.Cluster, e.Namespace = kube.NewCluster(s.client, ns), ns
	if s.engines == nil {
		s.engines = map[string]*engine.Engine{}
	}
	s.engines[ns] = &e
	return &e
}

// reconcileFleet reconciles the pools of the fleet's other namespaces
// (fleetPools) whose turn has come, as reconcile does the main ones.
func (s *Sim) reconcileFleet(ctx context.Context) {
	if !s.opts.Fleet {
		return
	}
	for i, p := range fleetPools() {
		key := p.namespace + "/" + p.name
		at, ok := s.reconcileAt[key]
		if !ok {
			at = s.now.Add(s.scale(2*time.Second + time.Duration(i)*900*time.Millisecond))
			s.reconcileAt[key] = at
		}
		if s.now.Before(at) {
			continue
		}
		s.reconcileAt[key] = s.now.Add(s.scale(reconcileEvery))
		_, err := s.engineIn(p.namespace).Reconcile(ctx, p.name)
		s.note("reconcile "+key, err)
	}
}

// after returns a time between lo and hi from now, scaled by the speed.
func (s *Sim) after(lo, hi time.Duration) time.Time {
	return s.now.Add(s.scale(s.between(lo, hi)))
}

// between returns a duration between lo and hi.
func (s *Sim) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

func (s *Sim) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) / s.opts.Speed)
}

// due reports whether t is set and has come.
func (s *Sim) due(t time.Time) bool { return !t.IsZero() && !s.now.Before(t) }

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
