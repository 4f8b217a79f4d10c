package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
	"github.com/ctpool-tui/ctpool-tui/tui"
)

// The dashboard of several clusters (--context a,b,c, --all-contexts): one
// Watcher per context, merged into one fleet whose namespaces are
// context/namespace (tui.Options.Contexts). Every action, capability
// question, Event read, log and console of a pool is routed to its own
// cluster's client and namespace, so an identity that is operator in one
// cluster and viewer in another is gated per cluster. A cluster that does
// not answer keeps its own state in the header and never freezes the
// others; one whose identity may not list the pools is shown forbidden and
// not watched.

// clusterConn is one cluster of the dashboard.
type clusterConn struct {
	name      string
	conn      *connection   // nil: the context could not be loaded
	w         *kube.Watcher // nil: not watched (forbidden, or no connection)
	forbidden error
	err       error // why conn is nil
	errAt     time.Time
}

// contextsSource is the dashboard's clusters: each one's connection and
// the merge of their Watchers (data: kube.Contexts).
type contextsSource struct {
	clusters []*clusterConn
	data     *kube.Contexts
}

// startContexts connects to each context, asks whether its identity may
// list where the dashboard reads (in parallel, 5s each), and starts a
// Watcher on each that may, until ctx ends.
func startContexts(ctx context.Context, e *env, df dashFlags, names []string, readOnly bool) (*contextsSource, error) {
	src := &contextsSource{}
	var wg sync.WaitGroup
	for _, name := range names {
		c := &clusterConn{name: name}
		src.clusters = append(src.clusters, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := e.forContext(name).connect(ctx, df, readOnly)
			if err != nil {
				c.err, c.errAt = err, time.Now()
				return
			}
			c.conn = conn
			check := conn.scope.namespaces
			if !conn.scope.fleet {
				check = []string{conn.namespace}
			}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = kube.CheckListable(cctx, conn.client, check)
			cancel()
			if errors.Is(err, engine.ErrForbidden) {
				c.forbidden = err
			}
		}()
	}
	wg.Wait()
	merged := make([]kube.ContextCluster, 0, len(src.clusters))
	for _, c := range src.clusters {
		if c.conn != nil && c.forbidden == nil {
			if c.conn.scope.fleet {
				c.w = kube.NewFleetWatcher(c.conn.client, c.conn.scope.namespaces)
			} else {
				c.w = kube.NewWatcher(c.conn.client, c.conn.namespace)
			}
			if err := c.w.Start(ctx); err != nil {
				return nil, fmt.Errorf("context %s: %w", c.name, err)
			}
		}
		merged = append(merged, kube.ContextCluster{Name: c.name, Watcher: c.w, Forbidden: c.forbidden, Err: c.err, ErrAt: c.errAt})
	}
	src.data = kube.NewContexts(ctx, merged)
	return src, nil
}

// contextsData is the merged clusters as the dashboard reads them
// (tui.ChangeSource and tui.ClusterSource).
type contextsData struct{ *kube.Contexts }

// Clusters is each cluster's health for the header.
func (d contextsData) Clusters() []tui.ClusterHealth {
	hs := d.Health()
	out := make([]tui.ClusterHealth, len(hs))
	for i, h := range hs {
		out[i] = tui.ClusterHealth(h)
	}
	return out
}

// in returns the cluster and namespace of a fleet namespace
// (context/namespace: the context is everything before the last "/").
func (s *contextsSource) in(ns string) (*clusterConn, string) {
	i := strings.LastIndexByte(ns, '/')
	if i < 0 {
		return nil, ns
	}
	for _, c := range s.clusters {
		if c.name == ns[:i] {
			return c, ns[i+1:]
		}
	}
	return nil, ns[i+1:]
}

// errNoCluster: a namespace of no cluster of the dashboard.
func errNoCluster(ns string) error { return fmt.Errorf("no connected cluster for %s", ns) }

// contextsOptions wires the dashboard of several clusters.
func contextsOptions(src *contextsSource, names []string, sc scope, readOnly bool) tui.Options {
	ns := "each context's"
	if sc.fleet {
		ns = sc.label()
	}
	opts := tui.Options{
		Context: strings.Join(names, ","), Namespace: ns, Fleet: true, Contexts: true, ReadOnly: readOnly,
		ContextNames: names, Namespaces: sc.namespaces,
		Now: time.Now, Data: contextsData{src.data}, Events: contextsEvents{src}, Logs: contextsLogs{src},
	}
	if readOnly {
		return opts
	}
	opts.ActionsIn = func(ns string) tui.Actions {
		c, real := src.in(ns)
		if c == nil || c.conn == nil || c.w == nil {
			return nil
		}
		return cachedClaims(engineIn(c.conn, real), c.w.In(real))
	}
	opts.AccessIn = func(ns string) tui.Access {
		c, real := src.in(ns)
		if c == nil || c.conn == nil {
			return noAccess{errNoCluster(ns)}
		}
		return &kube.Access{Client: c.conn.client, Namespace: real}
	}
	opts.Console = contextsConsole{src}
	return opts
}

type contextsEvents struct{ src *contextsSource }

func (r contextsEvents) Events(ctx context.Context, ns, kind, name string) ([]corev1.Event, error) {
	c, real := r.src.in(ns)
	if c == nil || c.conn == nil {
		return nil, errNoCluster(ns)
	}
	return (&kube.Events{Client: c.conn.client}).Events(ctx, real, kind, name)
}

type contextsLogs struct{ src *contextsSource }

func (r contextsLogs) Stream(ctx context.Context, ns, pod string, previous bool) (io.ReadCloser, error) {
	c, real := r.src.in(ns)
	if c == nil || c.conn == nil {
		return nil, errNoCluster(ns)
	}
	return (&kube.Logs{Client: c.conn.client}).Stream(ctx, real, pod, previous)
}

type contextsConsole struct{ src *contextsSource }

func (r contextsConsole) Console(ctx context.Context, ns, pod string, in io.Reader, out, errOut io.Writer) error {
	c, real := r.src.in(ns)
	if c == nil || c.conn == nil || c.conn.cfg == nil {
		return errNoCluster(ns)
	}
	return auditedConsole{Exec: &kube.Exec{Config: c.conn.cfg, Client: c.conn.client}, audit: engineIn(c.conn, real).Audit}.
		Console(ctx, real, pod, in, out, errOut)
}

// noAccess answers every capability question with its error.
type noAccess struct{ err error }

func (n noAccess) Capabilities(context.Context, []engine.Action) ([]engine.Capability, error) {
	return nil, n.err
}

// runContextsDashboard runs the dashboard of several clusters.
func runContextsDashboard(ctx context.Context, e *env, df dashFlags, names []string, theme themes.Theme) error {
	sc, err := df.scope.resolve(e)
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	src, err := startContexts(sctx, e, df, names, df.readonly)
	if err != nil {
		return opErr(err)
	}
	opts := contextsOptions(src, names, sc, df.readonly)
	opts.StopData = stop
	opts.Theme, opts.NoColor = theme, os.Getenv("NO_COLOR") != ""
	err = tui.Run(ctx, opts)
	src.reportRefused(e.stderr)
	return opErr(err)
}

// reportRefused names each cluster whose read-only client refused a write
// (none should: the keys that write are not bound in read-only mode).
func (s *contextsSource) reportRefused(w io.Writer) {
	for _, c := range s.clusters {
		if c.conn != nil && c.conn.readOnly != nil && c.conn.readOnly.Refused() > 0 {
			fmt.Fprintf(w, "read-only: context %s: %d write requests were refused\n", c.name, c.conn.readOnly.Refused())
		}
	}
}
