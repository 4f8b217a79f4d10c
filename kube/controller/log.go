package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// logResult logs one reconcile: a failure with its pool and steps, a change
// with its actions and duration, and (at verbosity 2) a pool in line.
func (c *Controller) logResult(k engine.PoolRef, res engine.ReconcileResult, err error, took time.Duration) {
	log := c.opts.Logger
	pool := slog.String("pool", k.String())
	if err != nil {
		log.Error("reconcile failed", pool, slog.String("step", strings.Join(failedSteps(res), ",")),
			slog.Duration("duration", took), slog.String("err", err.Error()))
		return
	}
	if res.Done() > 0 {
		log.Info("reconciled", pool, slog.String("actions", actionSummary(res)), slog.Duration("duration", took))
		return
	}
	log.Log(context.Background(), slog.Level(-2), "in line", pool, slog.Duration("duration", took))
}

// failedSteps names the steps that failed ("read" when the pool could not be
// read at all).
func failedSteps(res engine.ReconcileResult) []string {
	seen := map[string]bool{}
	for _, a := range res.Actions {
		if a.Err != nil {
			seen[a.Step.String()] = true
		}
	}
	if len(seen) == 0 {
		return []string{engine.StepRead.String()}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// actionSummary counts the actions done by step: "2 create, 1 replace".
func actionSummary(res engine.ReconcileResult) string {
	counts, skipped := res.Counts()
	var parts []string
	for _, s := range engine.MemberSteps {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", skipped))
	}
	return strings.Join(parts, ", ")
}

// loggerFromLogf adapts a printf-style function (tests pass t.Logf) to a
// logger; nil logs nothing.
func loggerFromLogf(logf func(string, ...any)) *slog.Logger {
	if logf == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(logfWriter(logf), &slog.HandlerOptions{Level: slog.Level(-2)}))
}

type logfWriter func(string, ...any)

func (w logfWriter) Write(p []byte) (int, error) {
	w("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
