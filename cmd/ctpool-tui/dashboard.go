package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
	"github.com/ctpool-tui/ctpool-tui/tui"
)

// connection is what the dashboard paths need from the cluster.
type connection struct {
	client    kubernetes.Interface
	namespace string // "" for a fleet
	scope     scope
	context   string
	host      string
	readOnly  *kube.ReadOnlyGuard
	demo      bool
	cfg       *rest.Config // nil for the demo
	// warning is the API server's version when newer than ctpool-tui
	// is tested against ("" when not); the caller shows it.
	warning string
}

// warn prints the connection's warning, if any, on stderr.
func (c *connection) warn(e *env) {
	if c.warning != "" {
		fmt.Fprintln(e.stderr, "warning: "+oneLine(c.warning))
	}
}

// connect builds the client: the simulated cluster with --demo, otherwise the
// kubeconfig's, refusing every write in read-only modes.
func (e *env) connect(ctx context.Context, df dashFlags, readOnly bool) (*connection, error) {
	sc, err := df.scope.resolve(e)
	if err != nil {
		return nil, err
	}
	if df.demo {
		ns := ""
		if e.opts.Flags.Namespace != nil {
			ns = *e.opts.Flags.Namespace
		}
		client, ns, err := startDemo(ctx, ns, sc.fleet)
		if err != nil {
			return nil, err
		}
		return &connection{client: client, namespace: ns, scope: sc, context: "demo (simulated)", host: "demo", demo: true}, nil
	}
	ns := ""
	if !sc.fleet {
		if ns, err = e.opts.Namespace(); err != nil {
			return nil, err
		}
	}
	cfg, err := e.opts.RESTConfig()
	if err != nil {
		return nil, err
	}
	c := &connection{namespace: ns, scope: sc, context: e.opts.ContextName(), host: cfg.Host, cfg: cfg}
	if readOnly {
		cfg, c.readOnly = kube.ReadOnly(cfg)
	}
	if c.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	// An API server older than the range is refused here, before any
	// informer starts: a clear error, never a blank dashboard.
	if c.warning, err = e.checkServer(ctx, c.client); err != nil {
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
	if _, err := df.scope.resolve(e); err != nil {
		return err
	}
	names, err := df.contexts(e)
	if err != nil {
		return err
	}
	if names != nil && df.once {
		return runOnceContexts(ctx, e, df, names)
	}
	if df.once {
		return runOnce(ctx, e, df)
	}
	if !isTerminal(stdin) || !isTerminal(e.stdout) {
		return usageErr("the dashboard needs a terminal; for scripts use --once (table or -o json)")
	}
	e.readOnlyContexts(&df, names)
	if names != nil {
		return runContextsDashboard(ctx, e, df, names, theme)
	}
	conn, err := e.connect(ctx, df, df.readonly)
	if err != nil {
		return opErr(err)
	}
	conn.warn(e)
	if conn.scope.fleet {
		if err := checkFleet(ctx, conn); err != nil {
			return opErr(err)
		}
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	opts, err := scopeOptions(sctx, conn, df.readonly)
	if err != nil {
		return opErr(err)
	}
	opts.StopData, opts.Scoper = stop, dashScoper{conn: conn, readOnly: df.readonly}
	setDisplay(&opts, theme, df.ascii, os.Getenv, e.stdout)
	e.setSettings(&opts, df)
	err = tui.Run(ctx, opts)
	if conn.readOnly != nil && conn.readOnly.Refused() > 0 {
		fmt.Fprintf(e.stderr, "read-only: %d write requests were refused\n", conn.readOnly.Refused())
	}
	return opErr(err)
}

// setDisplay sets how the dashboard draws on the terminal out (and copies
// to its clipboard, OSC 52): the theme,
// no colour with NO_COLOR, the renderer (for the adaptive theme, the
// terminal's background: asked, or under tmux and screen read from
// COLORFGBG), and ASCII glyphs where Unicode cannot be trusted.
func setDisplay(opts *tui.Options, theme themes.Theme, ascii bool, getenv func(string) string, out io.Writer) {
	opts.Theme, opts.NoColor, opts.ASCII = theme, getenv("NO_COLOR") != "", ascii || asciiTerminal(getenv)
	opts.Clipboard = osc52(out, getenv)
	if !opts.NoColor {
		opts.Renderer = themes.TerminalRenderer(out, theme, getenv)
	}
}

// dashboardOptions wires the dashboard of one cluster: the pools and the
// nodes (its Resolver: clusterReach).
func dashboardOptions(conn *connection, data tui.DataSource, readOnly bool) tui.Options {
	return tui.Options{
		Context: conn.context, Namespace: conn.namespace, ReadOnly: readOnly, Now: time.Now, Data: data,
		Nodes: &kube.Nodes{Client: conn.client}, Demo: conn.demo,
	}
}

// clusterReach is the Resolver of the dashboard of one cluster (one
// namespace, or the fleet of its namespaces): the Events and logs of its
// client and, unless read-only, the console and, per namespace, the engine
// and what the user may do there (the demo asks nothing: it is all
// allowed).
type clusterReach struct {
	events  tui.EventSource
	logs    tui.LogSource
	console tui.ConsoleRunner                  // nil: none (read-only, the demo)
	actions func(namespace string) tui.Actions // nil: read-only
	access  func(namespace string) tui.Access  // nil: not asked
}

func (c clusterReach) Actions(_, namespace string) tui.Actions {
	if c.actions == nil {
		return nil
	}
	return c.actions(namespace)
}

func (c clusterReach) Access(_, namespace string) tui.Access {
	if c.access == nil {
		return nil
	}
	return c.access(namespace)
}

func (c clusterReach) Events(string) tui.EventSource    { return c.events }
func (c clusterReach) Logs(string) tui.LogSource        { return c.logs }
func (c clusterReach) Console(string) tui.ConsoleRunner { return c.console }

// newClusterReach reaches the connection's cluster. In one namespace the
// engine is built once, on w (actions may be nil: read-only); in the fleet
// actions builds the engine of each namespace on use, and the console
// audits in the member's namespace.
func newClusterReach(conn *connection, readOnly bool, actions func(namespace string) tui.Actions, audit func(namespace string) func(context.Context, engine.AuditEntry)) clusterReach {
	r := clusterReach{events: &kube.Events{Client: conn.client}, logs: &kube.Logs{Client: conn.client}}
	if conn.demo {
		r.logs = demoLogs(conn.client)
	}
	if readOnly {
		return r
	}
	r.actions = actions
	if !conn.demo {
		r.access = func(namespace string) tui.Access { return &kube.Access{Client: conn.client, Namespace: namespace} }
	}
	if !conn.demo && conn.cfg != nil {
		r.console = auditedConsole{Exec: &kube.Exec{Config: conn.cfg, Client: conn.client}, auditIn: audit}
	}
	return r
}

// engineIn is the engine behind the dashboard's actions on the pools of
// namespace ns (a fleet builds one for each action, in the namespace of the
// action's pool): fresh reads, audit Events naming the caller, and the API
// server's word on force-release.
func engineIn(conn *connection, ns string) *engine.Engine {
	eng := kube.StampClocks(&engine.Engine{Cluster: kube.NewCluster(conn.client, ns), Namespace: ns, Now: time.Now}, conn.cfg)
	aud := auditor(conn.client, ns)
	if conn.demo {
		aud = &kube.Auditor{Client: conn.client, Namespace: ns, Actor: "demo-admin"}
	} else {
		eng.Authorize = (&kube.Access{Client: conn.client, Namespace: ns}).Authorize
	}
	eng.Audit = aud.Record
	return eng
}

// scopeOptions starts the informers of the connection's namespace, or of
// its fleet (-A, --namespaces: one informer set, cluster-wide or per
// namespace named, and every action, audit Event, log and console in its
// pool's own namespace), until ctx ends, and wires the dashboard on them.
func scopeOptions(ctx context.Context, conn *connection, readOnly bool) (tui.Options, error) {
	if conn.scope.fleet {
		w := kube.NewFleetWatcher(conn.client, conn.scope.namespaces)
		if err := w.Start(ctx); err != nil {
			return tui.Options{}, err
		}
		return fleetOptions(conn, w, readOnly), nil
	}
	w := kube.NewWatcher(conn.client, conn.namespace)
	if err := w.Start(ctx); err != nil {
		return tui.Options{}, err
	}
	opts := dashboardOptions(conn, w, readOnly)
	var actions func(string) tui.Actions
	audit := func(string) func(context.Context, engine.AuditEntry) { return nil }
	if !readOnly {
		eng := engineIn(conn, conn.namespace)
		dash := cachedClaims(eng, w)
		actions = func(string) tui.Actions { return dash }
		audit = func(string) func(context.Context, engine.AuditEntry) { return eng.Audit }
	}
	opts.Resolver = newClusterReach(conn, readOnly, actions, audit)
	return opts, nil
}

// dashScoper switches the dashboard to another namespace or to every
// namespace (`:ns NAME`, `:ns all`). It first asks whether the identity may
// list there, so that a refusal is one line in the status area, not a
// screen that never syncs.
type dashScoper struct {
	conn     *connection
	readOnly bool
}

func (s dashScoper) Scope(ctx context.Context, namespace string) (tui.Scope, error) {
	c := *s.conn
	c.namespace, c.scope = namespace, scope{}
	check := []string{namespace}
	if namespace == "" {
		c.scope, check = scope{fleet: true}, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err := kube.CheckListable(cctx, c.client, check)
	cancel()
	if err != nil {
		return tui.Scope{}, err
	}
	o, err := scopeOptions(ctx, &c, s.readOnly)
	if err != nil {
		return tui.Scope{}, err
	}
	return tui.Scope{Namespace: o.Namespace, Fleet: o.Fleet, Data: o.Data, Resolver: o.Resolver}, nil
}

// checkFleet asks, before any informer starts, whether the identity may
// list the pool objects where the fleet reads: informers that are refused
// would retry forever behind an empty screen.
func checkFleet(ctx context.Context, conn *connection) error {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err := kube.CheckListable(cctx, conn.client, conn.scope.namespaces)
	if err != nil && cctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("no answer from %s within 15s", conn.host)
	}
	return err
}

// fleetOptions wires the fleet dashboard: its reads and logs, and unless
// read-only the engine, the capabilities and the console audit of each
// namespace, built on first use.
func fleetOptions(conn *connection, w *kube.Watcher, readOnly bool) tui.Options {
	opts := dashboardOptions(conn, w, readOnly)
	opts.Fleet, opts.Namespace, opts.Namespaces = true, conn.scope.label(), conn.scope.namespaces
	opts.Resolver = newClusterReach(conn, readOnly,
		func(ns string) tui.Actions { return cachedClaims(engineIn(conn, ns), w.In(ns)) },
		func(ns string) func(context.Context, engine.AuditEntry) { return engineIn(conn, ns).Audit })
	return opts
}

// dashboardActions is the dashboard's engine with claims (key a) decided on
// the informer cache the screen shows: a claim then costs three requests (the
// Lease create, a fresh List of the pool's Leases that makes concurrent claims
// by one identity converge, and the PVC annotation) instead of four reads
// more. The Lease
// create stays the authority: a member the cache shows free but someone has
// just claimed answers AlreadyExists and the claim moves on to the next free
// member. Everything else (reconcile, force-release, resize, delete) reads fresh.
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
	conn.warn(e)
	timeout := onceTimeout(e)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if conn.demo {
		// Let the simulation reach a first steady picture.
		waitDemo(rctx, conn)
	}
	snaps, err := conn.listPools(rctx)
	if err != nil {
		var lf *kube.ListForbiddenError
		switch {
		case errors.As(err, &lf):
			return &codeError{code: exitError, err: err}
		case errors.Is(err, context.DeadlineExceeded) || rctx.Err() != nil:
			err = fmt.Errorf("no answer within %s", timeout)
		}
		return &codeError{code: exitError, err: fmt.Errorf("cannot read %s at %s: %w", conn.where(), conn.host, err)}
	}
	for i := range snaps {
		kube.ReadIsolation(rctx, conn.client, &snaps[i]) // isolated pools only
	}
	now := time.Now()
	views := engine.ObserveAll(snaps, now)
	out, flush := asciiOut(e.stdout, df)
	defer flush()
	code := render.RenderOnce(out, views, render.OnceOptions{
		Format: df.output, Pool: df.pool, Namespace: conn.namespace, Context: conn.context, Now: now,
		Fleet: conn.scope.fleet, Namespaces: conn.scope.namespaces, ASCII: df.ascii || asciiTerminal(os.Getenv),
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
		snaps, err := conn.listPools(ctx)
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

// listPools reads the pools once: of the namespace, or of the fleet.
func (c *connection) listPools(ctx context.Context) ([]engine.Snapshot, error) {
	if c.scope.fleet {
		return kube.ListFleet(ctx, c.client, c.scope.namespaces)
	}
	return kube.ListPools(ctx, c.client, c.namespace)
}

// where names what the connection reads ("namespace vdi", "all namespaces").
func (c *connection) where() string {
	switch {
	case !c.scope.fleet:
		return "namespace " + c.namespace
	case len(c.scope.namespaces) == 0:
		return "all namespaces"
	}
	return "namespaces " + strings.Join(c.scope.namespaces, ", ")
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
