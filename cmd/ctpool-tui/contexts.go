package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// contexts returns the kubeconfig contexts of several contexts
// (--context a,b,c, --all-contexts), or nil for kubectl's one context.
func (df dashFlags) contexts(e *env) ([]string, error) {
	named := ""
	if e.opts.Flags.Context != nil {
		named = *e.opts.Flags.Context
	}
	if df.allContexts {
		if named != "" {
			return nil, usageErr("--all-contexts reads every context; leave out --context")
		}
		if df.demo {
			return nil, usageErr("--demo is one simulated cluster; leave out --all-contexts")
		}
		names, err := e.opts.Contexts()
		if err != nil {
			return nil, opErr(err)
		}
		return names, nil
	}
	list, err := kube.ParseContexts(named)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if list != nil && df.demo {
		return nil, usageErr("--demo is one simulated cluster; leave out --context a,b,c")
	}
	return list, nil
}

// forContext is the env of one cluster of a fleet of contexts.
func (e *env) forContext(name string) *env {
	return &env{opts: e.opts.ForContext(name), stdout: e.stdout, stderr: e.stderr, log: e.log, settings: e.settings}
}

// readContext reads the pools of one cluster once, with the dashboard's
// scope (-n or the context's namespace, -A, --namespaces), within timeout.
func readContext(ctx context.Context, e *env, df dashFlags, name string, timeout time.Duration) render.ContextViews {
	cv := render.ContextViews{Context: name, State: render.ContextLive}
	conn, err := e.forContext(name).connect(ctx, df, true)
	if err != nil {
		cv.State, cv.Err = render.ContextUnreachable, err
		return cv
	}
	cv.Namespace, cv.Fleet, cv.Namespaces = conn.namespace, conn.scope.fleet, conn.scope.namespaces
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	snaps, err := conn.listPools(rctx)
	switch {
	case err == nil:
		cv.Views = engine.ObserveAll(snaps, time.Now())
	case errors.Is(err, engine.ErrForbidden):
		cv.State, cv.Err = render.ContextForbidden, err
	default:
		if errors.Is(err, context.DeadlineExceeded) || rctx.Err() != nil {
			err = fmt.Errorf("no answer within %s", timeout)
		}
		cv.State, cv.Err = render.ContextUnreachable, fmt.Errorf("cannot read %s at %s: %w", conn.where(), conn.host, err)
	}
	return cv
}

// runOnceContexts prints the pools of several contexts once, each read in
// parallel so that one cluster that does not answer delays the others by
// no more than the timeout, and exits with the worst code of all: 1 when a
// cluster could not be read (each named on stderr), else 3 for attention.
func runOnceContexts(ctx context.Context, e *env, df dashFlags, names []string) error {
	timeout := onceTimeout(e)
	clusters := make([]render.ContextViews, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clusters[i] = readContext(ctx, e, df, name, timeout)
		}()
	}
	wg.Wait()
	out, flush := asciiOut(e.stdout, df)
	code := render.RenderContexts(out, clusters, render.OnceOptions{Format: df.output, Pool: df.pool, Now: time.Now(), ASCII: df.ascii || asciiTerminal(os.Getenv)})
	flush()
	var bad []string
	for _, c := range clusters {
		if c.Err != nil {
			fmt.Fprintf(e.stderr, "context %s: %s: %s\n", c.Context, c.State, oneLine(c.Err.Error()))
			bad = append(bad, c.Context)
		}
	}
	if len(bad) > 0 {
		return &codeError{code: exitError, err: fmt.Errorf("%d of %d contexts could not be read: %s", len(bad), len(names), strings.Join(bad, ", "))}
	}
	if code != 0 {
		return &codeError{code: code}
	}
	return nil
}

// onceTimeout is --request-timeout when set, else 10s: how long --once
// waits for a cluster's answer.
func onceTimeout(e *env) time.Duration {
	timeout := 10 * time.Second
	if e.opts.Flags.Timeout != nil {
		if d, err := time.ParseDuration(*e.opts.Flags.Timeout); err == nil && d > 0 {
			timeout = d
		}
	}
	return timeout
}
