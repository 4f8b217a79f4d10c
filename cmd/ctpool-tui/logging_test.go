package main

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// klog (client-go's reflectors and leader election) writes through the
// program's logger, in its format and at its verbosity, and follows the
// logger of the latest setup. klog is global: informers that other tests
// of this package left running may log into these buffers meanwhile, so the
// buffers are locked and the checks look for their own lines.
func TestKlogFollowsTheProgramsLogger(t *testing.T) {
	var first, second kubetest.SyncBuffer
	l := logFlags{format: "json"}
	if _, _, err := l.setup(&first, false); err != nil {
		t.Fatal(err)
	}
	klog.ErrorS(nil, "watch failed", "resource", "pods")
	klog.V(2).InfoS("not at verbosity 0")
	l2 := logFlags{format: "text", verbosity: 2}
	if _, _, err := l2.setup(&second, false); err != nil {
		t.Fatal(err)
	}
	klog.V(2).InfoS("now at verbosity 2", "pool", "desk")
	found := false
	for _, line := range strings.Split(strings.TrimSpace(first.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("first logger wrote a line that is not JSON: %q (%v)", line, err)
		}
		found = found || (m["msg"] == "watch failed" && m["resource"] == "pods")
	}
	if !found {
		t.Fatalf("first logger got %q", first.String())
	}
	if !strings.Contains(second.String(), `msg="now at verbosity 2" pool=desk`) || strings.Contains(first.String()+second.String(), "not at verbosity 0") {
		t.Fatalf("second logger got %q, first %q", second.String(), first.String())
	}
	// The dashboard's screen never gets a line.
	var screen kubetest.SyncBuffer
	l3 := logFlags{format: "text"}
	logger, _, err := l3.setup(&screen, true)
	if err != nil {
		t.Fatal(err)
	}
	logger.Error("an error the screen must not show")
	klog.ErrorS(nil, "neither this")
	if screen.String() != "" {
		t.Fatalf("the screen got %q", screen.String())
	}
	if _, _, err := (&logFlags{format: "xml"}).setup(&screen, false); err == nil {
		t.Fatal("--log-format xml accepted")
	}
	slog.SetDefault(slog.New(slog.DiscardHandler))
}
