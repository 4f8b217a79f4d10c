package tui

import (
	"fmt"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// maxErrorLines bounds the errors the dashboard lists for one pool.
const maxErrorLines = 8

// recordedErrors are the errors of the pool's last reconcile grouped by
// cause (a status written by an earlier version lists each one), at most
// maxErrorLines, the last saying how many more there are.
func recordedErrors(v *engine.PoolView) []string {
	lines, cut := engine.SummarizeErrors(v.Recorded.Errors, maxErrorLines)
	if n := cut + v.Recorded.ErrorsCut; n > 0 {
		lines = append(lines, fmt.Sprintf("… and %s", plural(n, "more error", "more errors")))
	}
	return lines
}
