package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// reconcileFlags are the flags of reconcile.
type reconcileFlags struct {
	watch, all, allNamespaces bool
	interval                  time.Duration
	workers                   int
	metricsAddr               string
	leaderElect               bool
	leNamespace               string
	leaseDuration             time.Duration
	renewDeadline             time.Duration
	retryPeriod               time.Duration
}

func newReconcileCmd(e *env) *cobra.Command {
	var f reconcileFlags
	c := &cobra.Command{
		Use:   "reconcile POOL | --all",
		Short: "Bring a pool (or every pool) in line with its definition",
		Long: `Bring a pool in line with its definition: create missing members, start
stopped ones, replace unclaimed drifted or failed ones, delete unclaimed ones
above the size, and record the status. A claimed member is never destroyed.

--all reconciles every pool of the namespace (-A: of every namespace).

With --watch it keeps reconciling from shared informers: soon after a change to
a pool's ConfigMap, Pods, PVCs or Leases, and every --interval; failures are
retried with backoff, and --workers pools are reconciled at once, so one slow
pool never blocks the others. On SIGINT/SIGTERM it stops taking work, finishes
or abandons (and unlocks) its step, gives up the leadership and exits 0.

In the cluster (see "ctpool-tui manifests"), run several replicas with
--leader-elect: only the holder of the Lease ctpool-tui-reconciler (in
--leader-elect-namespace) writes; the others stand by. A leader that cannot
renew its Lease stops writing at once and exits 1, to be restarted as a
candidate. --metrics-addr serves /metrics (Prometheus), /healthz and /readyz.`,
		Example: `  ctpool-tui reconcile desk
  ctpool-tui reconcile desk --watch --interval 30s
  ctpool-tui reconcile --all --watch -n vdi --metrics-addr :9090
  ctpool-tui reconcile -A --watch --leader-elect --leader-elect-namespace vdi-system`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.all || f.allNamespaces {
				if len(args) != 0 {
					return usageErr("reconcile takes POOL or --all, not both; see --help")
				}
				return nil
			}
			return exactArgs(1, "POOL (or --all)")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.allNamespaces {
				f.all = true
			}
			pool := ""
			if len(args) == 1 {
				pool = args[0]
				if err := validatePoolArg(pool); err != nil {
					return err
				}
			}
			if err := f.validate(); err != nil {
				return err
			}
			if !f.watch {
				if pool == "" {
					return reconcileAllOnce(cmd.Context(), e, f.allNamespaces)
				}
				eng, _, err := e.engineFor()
				if err != nil {
					return opErr(err)
				}
				stop := e.showProgress(eng)
				res, err := eng.Reconcile(cmd.Context(), pool)
				stop()
				if !unreadableStatus(err) {
					printReconcile(e.stdout, res)
				}
				return opErr(err)
			}
			return runController(cmd.Context(), e, f, pool)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&f.watch, "watch", false, "keep reconciling until interrupted")
	fl.DurationVar(&f.interval, "interval", 30*time.Second, "with --watch: the resync period (every pool is reconciled this often)")
	fl.BoolVar(&f.all, "all", false, "every pool of the namespace")
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "every pool of every namespace (implies --all)")
	fl.IntVar(&f.workers, "workers", controller.DefaultWorkers, "with --watch: pools reconciled at once")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "with --watch: serve /metrics, /healthz and /readyz on this address (e.g. :9090; empty: off)")
	fl.BoolVar(&f.leaderElect, "leader-elect", false, "with --watch: reconcile only while holding the Lease "+controller.LeaseName)
	fl.StringVar(&f.leNamespace, "leader-elect-namespace", "", "namespace of the election Lease (default: the namespace)")
	fl.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", controller.DefaultLeaseDuration, "how long a candidate waits before taking over a Lease that is not renewed")
	fl.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", controller.DefaultRenewDeadline, "how long the leader retries renewing before it gives up (and exits 1)")
	fl.DurationVar(&f.retryPeriod, "leader-elect-retry-period", controller.DefaultRetryPeriod, "time between tries to acquire or renew the Lease")
	return c
}

func (f *reconcileFlags) validate() error {
	if f.interval <= 0 {
		return usageErr("--interval must be positive")
	}
	if !f.watch {
		for name, set := range map[string]bool{
			"--leader-elect": f.leaderElect, "--metrics-addr": f.metricsAddr != "",
			"--workers": f.workers != controller.DefaultWorkers,
		} {
			if set {
				return usageErr("%s goes with --watch", name)
			}
		}
	}
	if f.workers <= 0 {
		return usageErr("--workers must be at least 1")
	}
	if f.leaderElect && !(f.retryPeriod > 0 && f.retryPeriod < f.renewDeadline && f.renewDeadline < f.leaseDuration) {
		return usageErr("want 0 < --leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration")
	}
	return nil
}

// runController runs the reconciler of one pool, a namespace or every
// namespace until ctx ends (exit 0) or the leadership is lost (exit 1).
func runController(ctx context.Context, e *env, f reconcileFlags, pool string) error {
	cs, cfg, ns, err := e.clientFor()
	if err != nil {
		return opErr(err)
	}
	scope := ns
	if f.allNamespaces {
		scope = metav1.NamespaceAll
	}
	log := e.logger()
	where := "namespace " + ns
	switch {
	case pool != "":
		where = "pool " + ns + "/" + pool
	case f.allNamespaces:
		where = "every namespace"
	}
	// Every reconcile that changes something, every failure (with its pool
	// and step), leadership and outages are logged by the controller.
	rec, stopEvents := controller.NewRecorder(cs, kube.Instance())
	defer stopEvents()
	opts := controller.Options{
		Client: cs, Namespace: scope, Pool: pool, Workers: f.workers, Resync: f.interval,
		Logger: log, Recorder: rec, ClockID: kube.ClockID(), ServerOffset: kube.ServerClockOf(cfg.Host).Offset,
	}
	if pool != "" {
		// One pool: read it fresh on every interval, so that a cache left
		// stale by an API outage can never hide work from this loop.
		opts.Reads = controller.ReadFresh
	}
	if f.leaderElect {
		leNS := f.leNamespace
		if leNS == "" {
			leNS = ns
		}
		opts.LeaderElection = &controller.LeaderElection{
			Namespace: leNS, LeaseDuration: f.leaseDuration, RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod,
		}
	}
	ctrl, err := controller.New(opts)
	if err != nil {
		return opErr(err)
	}
	if f.metricsAddr != "" {
		l, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			return opErr(fmt.Errorf("--metrics-addr: %w", err))
		}
		sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		served := make(chan error, 1)
		go func() { served <- ctrl.Serve(sctx, l) }()
		defer func() { stop(); <-served }()
		log.Info("serving /metrics, /healthz and /readyz", "addr", l.Addr().String())
	}
	log.Info("starting the reconciler", "scope", where, "workers", f.workers, "interval", f.interval, "leaderElect", f.leaderElect)
	err = ctrl.Run(ctx)
	switch {
	case ctx.Err() != nil:
		log.Info("stopping: interrupted")
	case err != nil:
		log.Error("stopping", "err", err)
	default:
		log.Info("stopping")
	}
	if errors.Is(err, controller.ErrLeadershipLost) {
		return &codeError{code: exitError, err: err}
	}
	return opErr(err)
}

// reconcileAllOnce reconciles every defined pool of the namespace (or of
// every namespace) once, one line each; exit 1 when any failed.
func reconcileAllOnce(ctx context.Context, e *env, allNamespaces bool) error {
	cs, cfg, ns, err := e.clientFor()
	if err != nil {
		return opErr(err)
	}
	if allNamespaces {
		ns = metav1.NamespaceAll
	}
	keys, err := kube.ListDefinedPools(ctx, cs, ns)
	if err != nil {
		return opErr(fmt.Errorf("list pools: %w", err))
	}
	if len(keys) == 0 {
		fmt.Fprintln(e.stdout, "no pools")
		return nil
	}
	var failed []string
	for _, k := range keys {
		eng := kube.StampClocks(&engine.Engine{Cluster: kube.NewCluster(cs, k.Namespace), Namespace: k.Namespace, Now: time.Now}, cfg)
		stop := e.showProgress(eng)
		res, err := eng.Reconcile(ctx, k.Name)
		stop()
		if !unreadableStatus(err) {
			fmt.Fprintf(e.stdout, "%s ", k)
			printReconcile(e.stdout, res)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %s\n", k, oneLine(err.Error()))
			failed = append(failed, k.String())
		}
	}
	if len(failed) > 0 {
		return &codeError{code: exitError, err: fmt.Errorf("%d of %d pools failed: %s", len(failed), len(keys), strings.Join(failed, ", "))}
	}
	return nil
}
