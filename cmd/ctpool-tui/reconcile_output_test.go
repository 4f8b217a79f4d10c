package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// A stale Lease only removed is printed as what it is, never as a start.
func TestPrintReconcileCountsUnlocks(t *testing.T) {
	var b bytes.Buffer
	printReconcile(&b, engine.ReconcileResult{Actions: []engine.MemberAction{
		{Step: engine.StepUnlock, Member: "desk-1"},
		{Step: engine.StepStart, Member: "desk-2"},
	}})
	out := b.String()
	if !strings.Contains(out, "reconcile: 1 started, 1 unlocked (stale lease removed);") {
		t.Fatalf("output %q", out)
	}
}
