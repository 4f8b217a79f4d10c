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

// The dashboard of several contexts (--context a,b,c, --all-contexts): one
// Watcher per context, merged by kube.Contexts, each pool carrying its
// context (tui.Options.Contexts). Every action, capability question, Event
// read, log and console of a pool is routed by that context to its own
// client and namespace (contextsReach), so an identity that is operator in
// one context and viewer in another is gated per context. A context that
// does not answer keeps its own state in the header and never freezes the
// others; one whose identity may not list the pools is shown forbidden and
// not watched.

// contextConn is one context of the dashboard.
type contextConn struct {
	name      string
	conn      *connection   // nil: the context could not be loaded
	w         *kube.Watcher // nil: not watched (forbidden, or no connection)
	forbidden error
	err       error // why conn is nil
	// readOnly: its client refuses every write (--readonly, or the
	// settings list it read-only), and nothing that writes is wired.
	readOnly bool
	errAt    time.Time
}

// contextsSource is the dashboard's contexts: each one's connection and
// the merge of their Watchers (data: kube.Contexts).
type contextsSource struct {
	contexts []*contextConn
	data     *kube.Contexts
}

// startContexts connects to each context, asks whether its identity may
// list where the dashboard reads (in parallel, 5s each), and starts a
// Watcher on each that may, until ctx ends.
func startContexts(ctx context.Context, e *env, df dashFlags, names []string, readOnly bool) (*contextsSource, error) {
	src := &contextsSource{}
	var wg sync.WaitGroup
	for _, name := range names {
		c := &contextConn{name: name, readOnly: readOnly || df.readOnlyIn[name]}
		src.contexts = append(src.contexts, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := e.forContext(name).connect(ctx, df, c.readOnly)
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
	merged := make([]kube.WatchedContext, 0, len(src.contexts))
	for _, c := range src.contexts {
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
		merged = append(merged, kube.WatchedContext{Name: c.name, Watcher: c.w, Forbidden: c.forbidden, Err: c.err, ErrAt: c.errAt})
	}
	src.data = kube.NewContexts(ctx, merged)
	return src, nil
}

// byName returns the context of this name, or nil.
func (s *contextsSource) byName(kctx string) *contextConn {
	for _, c := range s.contexts {
		if c.name == kctx {
			return c
		}
	}
	return nil
}

// errNoCluster: a namespace of a context the dashboard has no connection to.
func errNoCluster(kctx, ns string) error {
	return fmt.Errorf("no connected cluster for %s/%s", kctx, ns)
}

// contextsOptions wires the dashboard of several contexts.
func contextsOptions(src *contextsSource, names []string, sc scope, readOnly bool) tui.Options {
	ns := "each context's"
	if sc.fleet {
		ns = sc.label()
	}
	var roIn []string
	for _, c := range src.contexts {
		if c.readOnly && !readOnly {
			roIn = append(roIn, c.name)
		}
	}
	return tui.Options{
		Context: strings.Join(names, ","), Namespace: ns, Fleet: true, Contexts: true, ReadOnly: readOnly,
		ReadOnlyContexts: roIn, ContextNames: names, Namespaces: sc.namespaces,
		Now: time.Now, Data: src.data, Resolver: contextsReach{src: src, readOnly: readOnly},
	}
}

// contextsReach is the Resolver of the dashboard of several contexts:
// every read and action of a pool goes to its context's client, in its
// namespace; read-only, nothing that writes is wired.
type contextsReach struct {
	src      *contextsSource
	readOnly bool
}

// Actions builds the engine of a namespace of a context on use.
func (r contextsReach) Actions(kctx, ns string) tui.Actions {
	c := r.src.byName(kctx)
	if r.readOnly || c == nil || c.readOnly || c.conn == nil || c.w == nil {
		return nil
	}
	return cachedClaims(engineIn(c.conn, ns), c.w.In(ns))
}

// Access asks the context's API server (a context with no connection
// answers its error).
func (r contextsReach) Access(kctx, ns string) tui.Access {
	if r.readOnly {
		return nil
	}
	c := r.src.byName(kctx)
	switch {
	case c != nil && c.readOnly:
		return nil
	case c == nil || c.conn == nil:
		return noAccess{errNoCluster(kctx, ns)}
	}
	return &kube.Access{Client: c.conn.client, Namespace: ns}
}

// Events reads the Events of a context.
func (r contextsReach) Events(kctx string) tui.EventSource {
	c := r.src.byName(kctx)
	if c == nil || c.conn == nil {
		return noCluster{kctx}
	}
	return &kube.Events{Client: c.conn.client}
}

// Logs streams the logs of a context's members.
func (r contextsReach) Logs(kctx string) tui.LogSource {
	c := r.src.byName(kctx)
	if c == nil || c.conn == nil {
		return noCluster{kctx}
	}
	return &kube.Logs{Client: c.conn.client}
}

// Console runs the consoles of a context's members, audited in the
// member's namespace.
func (r contextsReach) Console(kctx string) tui.ConsoleRunner {
	if r.readOnly {
		return nil
	}
	c := r.src.byName(kctx)
	switch {
	case c != nil && c.readOnly:
		return nil
	case c == nil || c.conn == nil || c.conn.cfg == nil:
		return noCluster{kctx}
	}
	conn := c.conn
	return auditedConsole{Exec: &kube.Exec{Config: conn.cfg, Client: conn.client},
		auditIn: func(ns string) func(context.Context, engine.AuditEntry) { return engineIn(conn, ns).Audit }}
}

// noCluster answers every read of a context that is not connected with
// errNoCluster.
type noCluster struct{ context string }

func (n noCluster) Events(_ context.Context, ns, _, _ string) ([]corev1.Event, error) {
	return nil, errNoCluster(n.context, ns)
}

func (n noCluster) Stream(_ context.Context, ns, _ string, _ bool) (io.ReadCloser, error) {
	return nil, errNoCluster(n.context, ns)
}

func (n noCluster) Console(_ context.Context, ns, _ string, _ io.Reader, _, _ io.Writer) error {
	return errNoCluster(n.context, ns)
}

// noAccess answers every capability question with its error.
type noAccess struct{ err error }

func (n noAccess) Capabilities(context.Context, []engine.Action) ([]engine.Capability, error) {
	return nil, n.err
}

// runContextsDashboard runs the dashboard of several contexts.
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
	setDisplay(&opts, theme, df.ascii, os.Getenv, e.stdout)
	e.setSettings(&opts, df)
	err = tui.Run(ctx, opts)
	src.reportRefused(e.stderr)
	return opErr(err)
}

// reportRefused names each context whose read-only client refused a write
// (none should: the keys that write are not bound in read-only mode).
func (s *contextsSource) reportRefused(w io.Writer) {
	for _, c := range s.contexts {
		if c.conn != nil && c.conn.readOnly != nil && c.conn.readOnly.Refused() > 0 {
			fmt.Fprintf(w, "read-only: context %s: %d write requests were refused\n", c.name, c.conn.readOnly.Refused())
		}
	}
}
