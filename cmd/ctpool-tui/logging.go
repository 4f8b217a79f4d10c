package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

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

// routeKlog sends klog's output through logger, at verbosity v.
func routeKlog(logger *slog.Logger, v int) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", strconv.Itoa(v))
	klog.SetSlogLogger(logger)
}

// discardLogger logs nothing (the default until the flags are parsed).
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
