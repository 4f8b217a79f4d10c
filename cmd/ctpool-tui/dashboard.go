package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/kube/demo"
	"github.com/ctpool-tui/ctpool-tui/themes"
	"github.com/ctpool-tui/ctpool-tui/tui"
)

// connection is what the dashboard paths need from the cluster.
type connection struct {
	client    kubernetes.Interface
	namespace string
	context   string
	host      string
	readOnly  *kube.ReadOnlyGuard
	demo      bool
	cfg       *rest.Config // nil for the demo
}

// connect builds the client: the simulated cluster with --demo, otherwise the
// kubeconfig's, refusing every write in read-only modes.
func (e *env) connect(ctx context.Context, df dashFlags, readOnly bool) (*connection, error) {
	if df.demo {
		ns := ""
		if e.opts.Flags.Namespace != nil {
			ns = *e.opts.Flags.Namespace
		}
		sim, err := demo.New(demo.Options{Namespace: ns, Seed: time.Now().UnixNano(), Now: time.Now})
		if err != nil {
			return nil, fmt.Errorf("start the demo cluster: %w", err)
		}
		go func() { _ = sim.Run(ctx) }()
		if ns == "" {
			ns = demo.DefaultNamespace
		}
		return &connection{client: sim.Client(), namespace: ns, context: "demo (simulated)", host: "demo", demo: true}, nil
	}
	ns, err := e.opts.Namespace()
	if err != nil {
		return nil, err
	}
	cfg, err := e.opts.RESTConfig()
	if err != nil {
		return nil, err
	}
	c := &connection{namespace: ns, context: e.opts.ContextName(), host: cfg.Host, cfg: cfg}
	if readOnly {
		cfg, c.readOnly = kube.ReadOnly(cfg)
	}
	if c.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

func runDashboard(ctx context.Context, e *env, df dashFlags, stdin io.Reader) error {
	if df.output != "table" && df.output != "wide" && df.output != "json" {
		return usageErr("-o must be table, wide or json (got %q)", df.output)
	}
	if !df.once && (df.output != "table" || df.pool != "") {
		return usageErr("-o and --pool go with --once")
	}
	if df.once && df.readonly {
		return usageErr("--once never writes; leave out --readonly")
	}
	theme, err := themes.ByName(df.theme)
	if err != nil {
		return usageErr("%v", err)
	}
	if df.pool != "" {
		if err := validatePoolArg(df.pool); err != nil {
			return err
		}
	}
	if df.once {
		return runOnce(ctx, e, df)
	}
	if !isTerminal(stdin) || !isTerminal(e.stdout) {
		return usageErr("the dashboard needs a terminal; for scripts use --once (table or -o json)")
	}
	conn, err := e.connect(ctx, df, df.readonly)
	if err != nil {
		return opErr(err)
	}
	watcher := kube.NewWatcher(conn.client, conn.namespace)
	if err := watcher.Start(ctx); err != nil {
		return opErr(err)
	}
	opts := dashboardOptions(conn, watcher, df.readonly)
	opts.Theme, opts.NoColor = theme, os.Getenv("NO_COLOR") != ""
	var audit func(context.Context, engine.AuditEntry)
	if !df.readonly {
		eng := e.dashboardEngine(conn)
		opts.Actions, audit = cachedClaims(eng, watcher), eng.Audit
	}
	consoleAndLogs(&opts, conn, df.readonly, audit)
	err = tui.Run(ctx, opts)
	if conn.readOnly != nil && conn.readOnly.Refused() > 0 {
		fmt.Fprintf(e.stderr, "read-only: %d write requests were refused\n", conn.readOnly.Refused())
	}
	return opErr(err)
}

// dashboardOptions wires the dashboard's reads: the pools, the Events, the
// nodes and, unless read-only, what the user may do.
func dashboardOptions(conn *connection, data tui.DataSource, readOnly bool) tui.Options {
	opts := tui.Options{
		Context: conn.context, Namespace: conn.namespace, ReadOnly: readOnly, Now: time.Now, Data: data,
		Events: &kube.Events{Client: conn.client}, Nodes: &kube.Nodes{Client: conn.client}, Demo: conn.demo,
	}
	if !readOnly && !conn.demo {
		opts.Access = accessAdapter{&kube.Access{Client: conn.client, Namespace: conn.namespace}}
	}
	return opts
}

// accessAdapter turns kube.Access's capabilities into the dashboard's.
type accessAdapter struct{ a *kube.Access }

func (a accessAdapter) Capabilities(ctx context.Context, actions []engine.Action) ([]tui.Capability, error) {
	caps, err := a.a.Capabilities(ctx, actions)
	if err != nil {
		return nil, err
	}
	out := make([]tui.Capability, 0, len(caps))
	for _, c := range caps {
		tc := tui.Capability{Action: c.Action, Allowed: c.Allowed}
		if c.Missing != nil {
			tc.Missing = c.Missing.String()
		}
		out = append(out, tc)
	}
	return out, nil
}

// dashboardEngine is the engine behind the dashboard's actions: fresh reads,
// audit Events naming the caller, and the API server's word on force-release.
func (e *env) dashboardEngine(conn *connection) *engine.Engine {
	eng := &engine.Engine{Cluster: kube.NewCluster(conn.client, conn.namespace), Namespace: conn.namespace, Now: time.Now}
	aud := auditor(conn.client, conn.namespace)
	if conn.demo {
		aud = &kube.Auditor{Client: conn.client, Namespace: conn.namespace, Actor: "demo-admin"}
	} else {
		eng.Authorize = (&kube.Access{Client: conn.client, Namespace: conn.namespace}).Authorize
	}
	eng.Audit = aud.Record
	return eng
}

// dashboardActions is the dashboard's engine with claims (key a) decided on
// the informer cache the screen shows: a claim then costs three requests (the
// Lease create, a fresh List of the pool's Leases that makes concurrent claims
// by one identity converge, and the PVC annotation) instead of four reads
// more. The Lease
// create stays the authority: a member the cache shows free but someone has
// just claimed answers AlreadyExists and the claim moves on to the next free
// member. Everything else (reconcile, release, resize, delete) reads fresh.
type dashboardActions struct {
	*engine.Engine
	claims *engine.Engine
}

func (d dashboardActions) Claim(ctx context.Context, pool, identity string) (engine.ClaimResult, error) {
	return d.claims.Claim(ctx, pool, identity)
}

// cachedClaims returns eng's actions with claims read from cache.
func cachedClaims(eng *engine.Engine, cache engine.Reader) tui.Actions {
	claims := *eng
	if kc, ok := eng.Cluster.(*kube.Cluster); ok {
		cc := *kc
		cc.Reader = cache
		claims.Cluster = &cc
	}
	return dashboardActions{Engine: eng, claims: &claims}
}

// runOnce prints the state once: exit 0 all well, 3 attention, 1 unreadable.
func runOnce(ctx context.Context, e *env, df dashFlags) error {
	conn, err := e.connect(ctx, df, true)
	if err != nil {
		return opErr(err)
	}
	timeout := 10 * time.Second
	if e.opts.Flags.Timeout != nil {
		if d, err := time.ParseDuration(*e.opts.Flags.Timeout); err == nil && d > 0 {
			timeout = d
		}
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if conn.demo {
		// Let the simulation reach a first steady picture.
		waitDemo(rctx, conn)
	}
	snaps, err := kube.ListPools(rctx, conn.client, conn.namespace)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || rctx.Err() != nil {
			err = fmt.Errorf("no answer within %s", timeout)
		}
		return &codeError{code: exitError, err: fmt.Errorf("cannot read namespace %s at %s: %w", conn.namespace, conn.host, err)}
	}
	now := time.Now()
	views := engine.ObserveAll(snaps, now)
	code := tui.RenderOnce(e.stdout, views, tui.OnceOptions{
		Format: df.output, Pool: df.pool, Namespace: conn.namespace, Context: conn.context, Now: now,
	})
	if code != 0 {
		return &codeError{code: code}
	}
	return nil
}

func waitDemo(ctx context.Context, conn *connection) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		snaps, err := kube.ListPools(ctx, conn.client, conn.namespace)
		if err == nil {
			views := engine.ObserveAll(snaps, time.Now())
			ready := len(views) > 0
			for _, v := range views {
				ready = ready && v.Status.Ready > 0
			}
			if ready {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
