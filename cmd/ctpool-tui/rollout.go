package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

func newRolloutCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "rollout",
		Short: "Show or resume a pool's rollout of a new image",
		Long: `When a pool's definition changes its members' source (apply --image, say),
the reconciler replaces the unclaimed members still on the earlier source in
waves: at most --max-unavailable members out of service at once (default 25%
of the size, at least 1), never so many that the free Ready members drop below
the spare (1 for a fixed pool). The members still on the earlier source serve
claims meanwhile. Claimed members are never touched: their release rebuilds
them from the current source.

A rollout whose new members fail, or are not Ready within --rollout-deadline
(default 5m), halts itself after 2 of them (or its whole first wave, when that
was smaller): no further member is replaced, and status, --once and the
dashboard say why in the members' own words. Apply an image (a fixed one, or
the earlier one: rolling back is an apply) to start a new rollout, or resume
this one.`,
		Example: "  ctpool-tui rollout status desk\n  ctpool-tui rollout resume desk",
	}
	c.AddCommand(&cobra.Command{
		Use:   "status POOL",
		Short: "Print the pool's rollout in one line (exit 3 when it is halted)",
		Args:  exactArgs(1, "POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pool := args[0]
			if err := validatePoolArg(pool); err != nil {
				return err
			}
			cs, _, ns, err := e.clientFor()
			if err != nil {
				return opErr(err)
			}
			snaps, err := onePool(cmd.Context(), cs, ns, pool)
			if err != nil {
				return opErr(err)
			}
			now := time.Now()
			v := engine.Observe(snaps[0], now)
			ro := render.Rollout(&v, now)
			if ro == nil {
				fmt.Fprintf(e.stdout, "%s: no rollout recorded for its current definition\n", pool)
				return nil
			}
			fmt.Fprintf(e.stdout, "%s: %s\n", pool, sanitize.Sanitize(render.RolloutText(pool, ro)))
			if ro.State == render.RolloutHalted {
				return &codeError{code: exitAttention} // said on stdout
			}
			return nil
		},
	})
	c.AddCommand(&cobra.Command{
		Use:   "resume POOL",
		Short: "Resume the pool's halted rollout, then reconcile once",
		Long: `Resume the pool's halted rollout, then reconcile once. The members that
failed before the resume are forgiven (the failing-member backoff rebuilds
them); new members built after it that fail halt the rollout again. A pool
whose rollout is not halted is an error, and nothing is written.`,
		Args: exactArgs(1, "POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pool := args[0]
			if err := validatePoolArg(pool); err != nil {
				return err
			}
			eng, _, err := e.engineFor()
			if err != nil {
				return opErr(err)
			}
			res, err := eng.ResumeRollout(cmd.Context(), pool)
			if errors.Is(err, engine.ErrNoHaltedRollout) {
				return opErr(err)
			}
			printReconcile(e.stdout, res)
			return opErr(err)
		},
	})
	return c
}
