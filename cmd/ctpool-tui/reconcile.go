package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

func newReconcileCmd(e *env) *cobra.Command {
	var (
		watchMode bool
		interval  time.Duration
	)
	c := &cobra.Command{
		Use:   "reconcile POOL",
		Short: "Bring a pool in line with its definition",
		Long: `Bring a pool in line with its definition: create missing members, start
stopped ones, replace unclaimed drifted or failed ones, delete unclaimed ones
above the size, and record the status. A claimed member is never destroyed.

With --watch it reconciles on every --interval and soon after a change to the
pool's objects, retries failures with backoff, survives API outages, and exits
0 on SIGINT/SIGTERM after finishing or abandoning (and unlocking) its step.`,
		Example: `  ctpool-tui reconcile desk
  ctpool-tui reconcile desk --watch --interval 30s`,
		Args: exactArgs(1, "POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pool := args[0]
			if err := validatePoolArg(pool); err != nil {
				return err
			}
			if interval <= 0 {
				return usageErr("--interval must be positive")
			}
			eng, ns, err := e.engineFor()
			if err != nil {
				return opErr(err)
			}
			if !watchMode {
				res, err := eng.Reconcile(cmd.Context(), pool)
				printReconcile(e.stdout, res)
				return opErr(err)
			}
			changes, err := e.watchChanges(cmd.Context(), ns)
			if err != nil {
				return opErr(err)
			}
			return watchLoop(cmd.Context(), e, eng, pool, interval, changes)
		},
	}
	c.Flags().BoolVar(&watchMode, "watch", false, "keep reconciling until interrupted")
	c.Flags().DurationVar(&interval, "interval", 30*time.Second, "time between reconciles in --watch mode")
	return c
}

// watchLoop reconciles on each interval and soon after a change, backing off
// after failures, until ctx is cancelled (then it returns nil: exit 0).
func watchLoop(ctx context.Context, e *env, eng *engine.Engine, pool string, interval time.Duration, changes <-chan struct{}) error {
	const debounce = time.Second
	backoff := time.Duration(0)
	for {
		res, err := eng.Reconcile(ctx, pool)
		if ctx.Err() != nil {
			fmt.Fprintf(e.stderr, "%s stopping: interrupted\n", stamp(eng))
			return nil
		}
		next := interval
		if err != nil {
			fmt.Fprintf(e.stderr, "%s error: %s\n", stamp(eng), oneLine(err.Error()))
			if !errors.As(err, new(*engine.StepError)) {
				// The API server could not be read: back off 1s, 2s, 4s ... up to the interval.
				backoff = min(max(2*backoff, time.Second), interval)
				next = backoff
			}
		} else {
			backoff = 0
		}
		if res.Done() > 0 || res.StatusWritten || err == nil && len(res.Actions) > 0 {
			fmt.Fprintf(e.stdout, "%s ", stamp(eng))
			printReconcile(e.stdout, res)
		}
		timer := time.NewTimer(next)
		select {
		case <-ctx.Done():
			timer.Stop()
			fmt.Fprintf(e.stderr, "%s stopping: interrupted\n", stamp(eng))
			return nil
		case <-timer.C:
		case <-changes:
			timer.Stop()
			// Let a burst of changes settle before reconciling again.
			settle := time.NewTimer(debounce)
			select {
			case <-ctx.Done():
				settle.Stop()
				return nil
			case <-settle.C:
			}
			drain(changes)
		}
	}
}

func drain(c <-chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func stamp(eng *engine.Engine) string { return eng.Now().Format(time.RFC3339) }
