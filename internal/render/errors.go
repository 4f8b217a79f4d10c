package render

import (
	"fmt"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// MaxErrorLines bounds the errors listed for one pool.
const MaxErrorLines = 8

// RecordedErrors are the errors of the pool's last reconcile grouped by
// cause (a status written by an earlier version lists each one), at most
// MaxErrorLines, the last saying how many more there are.
func RecordedErrors(v *engine.PoolView) []string {
	lines, cut := engine.SummarizeErrors(v.Recorded.Errors, MaxErrorLines)
	if n := cut + v.Recorded.ErrorsCut; n > 0 {
		lines = append(lines, fmt.Sprintf("… and %s", Plural(n, "more error", "more errors")))
	}
	return lines
}
