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

// contextsSource merges the clusters' Watchers (tui.DataSource and
// tui.ClusterSource).
type contextsSource struct {
	clusters []*clusterConn
	ch       chan struct{}
}

// startContexts connects to each context, asks whether its identity may
// list where the dashboard reads (in parallel, 5s each), and starts a
// Watcher on each that may, until ctx ends.
func startContexts(ctx context.Context, e *env, df dashFlags, names []string, readOnly bool) (*contextsSource, error) {
	src := &contextsSource{ch: make(chan struct{}, 1)}
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
	for _, c := range src.clusters {
		if c.conn == nil || c.forbidden != nil {
			continue
		}
		if c.conn.scope.fleet {
			c.w = kube.NewFleetWatcher(c.conn.client, c.conn.scope.namespaces)
		} else {
			c.w = kube.NewWatcher(c.conn.client, c.conn.namespace)
		}
		if err := c.w.Start(ctx); err != nil {
			return nil, fmt.Errorf("context %s: %w", c.name, err)
		}
		go src.forward(ctx, c.w.Changed())
	}
	return src, nil
}

// forward passes a cluster's change signals on (at most one pending).
func (s *contextsSource) forward(ctx context.Context, ch <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			select {
			case s.ch <- struct{}{}:
			default:
			}
		}
	}
}

func (s *contextsSource) Changed() <-chan struct{} { return s.ch }

// Snapshots are every watched cluster's, each namespace named
// context/namespace.
func (s *contextsSource) Snapshots() []engine.Snapshot {
	var out []engine.Snapshot
	for _, c := range s.clusters {
		if c.w == nil {
			continue
		}
		for _, snap := range c.w.Snapshots() {
			snap.Namespace = c.name + "/" + snap.Namespace
			out = append(out, snap)
		}
	}
	return out
}

// TakeChanges is every watched cluster's (tui.ChangeSource), each pool's
// namespace named context/namespace as in Snapshots; all when one cluster
// must be read whole (the others' are taken too: the whole read that
// follows sees them).
func (s *contextsSource) TakeChanges() (all bool, pools []engine.PoolChanges) {
	for _, c := range s.clusters {
		if c.w == nil {
			continue
		}
		whole, changed := c.w.TakeChanges()
		all = all || whole
		for _, pc := range changed {
			pc.Namespace = c.name + "/" + pc.Namespace
			pools = append(pools, pc)
		}
	}
	if all {
		return true, nil
	}
	return false, pools
}

// ReadChanges reads a change from its cluster's cache.
func (s *contextsSource) ReadChanges(pc engine.PoolChanges) engine.PoolUpdate {
	c, ns := s.in(pc.Namespace)
	if c == nil || c.w == nil {
		// Not a cluster's: nothing of it is cached, as a Watcher reads a
		// namespace it does not watch.
		return engine.PoolUpdate{Definition: pc.Definition, Members: map[string]engine.MemberObjects{}}
	}
	pc.Namespace = ns
	return c.w.ReadChanges(pc)
}

// Synced: every watched cluster is synced or has an error (a cluster that
// does not answer never holds the others' first picture back).
func (s *contextsSource) Synced() bool {
	for _, c := range s.clusters {
		if c.w == nil || c.w.Synced() {
			continue
		}
		if at, err := c.w.LastWatchError(); err == nil || at.IsZero() {
			return false
		}
	}
	return true
}

// LastSync is the latest of the clusters'.
func (s *contextsSource) LastSync() time.Time {
	var last time.Time
	for _, c := range s.clusters {
		if c.w != nil && c.w.LastSync().After(last) {
			last = c.w.LastSync()
		}
	}
	return last
}

// LastWatchError is an error only when no cluster answers: the header then
// says disconnected; otherwise each cluster's own state is on its line.
func (s *contextsSource) LastWatchError() (time.Time, error) {
	var (
		latest time.Time
		errs   []error
	)
	for _, c := range s.clusters {
		if c.w == nil {
			continue
		}
		at, err := c.w.LastWatchError()
		if at.IsZero() || at.Before(c.w.LastSync()) {
			return time.Time{}, nil // this one is live
		}
		if at.After(latest) {
			latest = at
		}
		errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
	}
	if len(errs) == 0 {
		return time.Time{}, nil
	}
	return latest, errors.Join(errs...)
}

// Clusters is each cluster's health for the header.
func (s *contextsSource) Clusters() []tui.ClusterHealth {
	out := make([]tui.ClusterHealth, 0, len(s.clusters))
	for _, c := range s.clusters {
		h := tui.ClusterHealth{Context: c.name, Forbidden: c.forbidden}
		switch {
		case c.w != nil:
			h.Synced, h.LastSync = c.w.Synced(), c.w.LastSync()
			h.ErrAt, h.Err = c.w.LastWatchError()
		case c.err != nil:
			h.ErrAt, h.Err = c.errAt, c.err
		}
		out = append(out, h)
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
		Now: time.Now, Data: src, Events: contextsEvents{src}, Logs: contextsLogs{src},
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
