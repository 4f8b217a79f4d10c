package demo

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"
)

func TestDemoLogsStreamAndStop(t *testing.T) {
	sim, err := New(Options{Namespace: "demo", Seed: 1, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sim.Step(ctx); err != nil {
		t.Fatal(err)
	}
	l := &Logs{Client: sim.Client(), Interval: 10 * time.Millisecond}
	sctx, stop := context.WithCancel(ctx)
	rc, err := l.Stream(sctx, "demo", "desk-1", false)
	if err != nil {
		t.Fatalf("stream desk-1: %v", err)
	}
	sc := bufio.NewScanner(rc)
	var lines []string
	for len(lines) < 8 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if !strings.Contains(lines[0], "canned log") || !strings.Contains(lines[7], "heartbeat") {
		t.Errorf("lines %q", lines)
	}
	stop()
	for sc.Scan() {
	}
	_ = rc.Close()
	if _, err := l.Stream(ctx, "demo", "desk-99", false); err == nil || !strings.Contains(err.Error(), "no Pod") {
		t.Errorf("missing member: %v", err)
	}
	if _, err := l.Stream(ctx, "demo", "gpu-1", false); err == nil || !strings.Contains(err.Error(), "sandboxd") {
		t.Errorf("sandboxd member: %v", err)
	}
}
