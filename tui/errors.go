package tui

import (
	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// maxErrorLines bounds the errors the dashboard lists for one pool.
const maxErrorLines = render.MaxErrorLines

// recordedErrors are the errors of the pool's last reconcile grouped by
// cause, at most maxErrorLines (render.RecordedErrors).
func recordedErrors(v *engine.PoolView) []string { return render.RecordedErrors(v) }
