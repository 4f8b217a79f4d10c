package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// logFlags choose where the program's structured logs go. One logger for
// the whole program: log/slog, with client-go's klog routed into it.
type logFlags struct {
	verbosity int
	format    string
	file      string
}

func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.IntVarP(&l.verbosity, "v", "v", 0, "log verbosity as in Kubernetes components: 0 start, stop, leadership, outages, failures and changes; 2 every reconcile; 4 and up client-go's own")
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json (one JSON object a line)")
	fs.StringVar(&l.file, "log-file", "", "write logs to this file; the dashboard's screen never shows log lines, so without it the dashboard logs nothing")
}

// levelFor maps a Kubernetes verbosity to a slog level: V(n) is level -n.
func levelFor(v int) slog.Level { return slog.Level(-v) }

// setup builds the program's logger: to stderr, or to --log-file, or (for
// the dashboard, which owns the terminal) nowhere without --log-file. It
// becomes slog's default, and klog (client-go's reflectors, leader
// election) writes through it at the same verbosity. The returned func
// closes the file.
func (l *logFlags) setup(stderr io.Writer, screen bool) (*slog.Logger, func(), error) {
	if l.verbosity < 0 {
		return nil, nil, usageErr("-v must not be negative")
	}
	out, closeFn := stderr, func() {}
	switch {
	case l.file != "":
		f, err := os.OpenFile(l.file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, &codeError{code: exitError, err: fmt.Errorf("--log-file: %w", err)}
		}
		out, closeFn = f, func() { _ = f.Close() }
	case screen:
		out = io.Discard
	}
	opts := &slog.HandlerOptions{Level: levelFor(l.verbosity)}
	var h slog.Handler
	switch l.format {
	case "text":
		h = slog.NewTextHandler(out, opts)
	case "json":
		h = slog.NewJSONHandler(out, opts)
	default:
		closeFn()
		return nil, nil, usageErr("--log-format %q: want text or json", l.format)
	}
	logger := slog.New(h)
	slog.SetDefault(logger)
	routeKlog(logger, l.verbosity)
	return logger, closeFn, nil
}

// routeKlog sends klog's output through logger, at verbosity v. klog's
// logger is process-wide and read by client-go at any time, so it is set
// once, to a handler that forwards to the current one.
func routeKlog(logger *slog.Logger, v int) {
	klogHandler.set(logger.Handler())
	klogOnce.Do(func() {
		klog.SetSlogLogger(slog.New(klogHandler))
	})
	klogLevel.Lock()
	defer klogLevel.Unlock()
	if klogLevel.v != v {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("v", strconv.Itoa(v))
		klogLevel.v = v
	}
}

var (
	klogOnce    sync.Once
	klogHandler = &switchHandler{}
	klogLevel   struct {
		sync.Mutex
		v int
	}
)

// switchHandler forwards to a handler that can be replaced at any time.
// The handlers that WithAttrs and WithGroup return keep those calls, in
// order, and apply them to the current handler on each record.
type switchHandler struct {
	cur  atomic.Pointer[slog.Handler]
	ops  []func(slog.Handler) slog.Handler
	root *switchHandler
}

func (s *switchHandler) set(h slog.Handler) { s.cur.Store(&h) }

func (s *switchHandler) handler() slog.Handler {
	r := s
	if s.root != nil {
		r = s.root
	}
	p := r.cur.Load()
	if p == nil {
		return slog.DiscardHandler
	}
	h := *p
	for _, op := range s.ops {
		h = op(h)
	}
	return h
}

func (s *switchHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return s.handler().Enabled(ctx, l)
}

func (s *switchHandler) Handle(ctx context.Context, r slog.Record) error {
	return s.handler().Handle(ctx, r)
}

func (s *switchHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return s.with(func(h slog.Handler) slog.Handler { return h.WithAttrs(as) })
}

func (s *switchHandler) WithGroup(name string) slog.Handler {
	return s.with(func(h slog.Handler) slog.Handler { return h.WithGroup(name) })
}

func (s *switchHandler) with(op func(slog.Handler) slog.Handler) *switchHandler {
	root := s.root
	if root == nil {
		root = s
	}
	return &switchHandler{ops: append(append([]func(slog.Handler) slog.Handler(nil), s.ops...), op), root: root}
}

// discardLogger logs nothing (the default until the flags are parsed).
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
