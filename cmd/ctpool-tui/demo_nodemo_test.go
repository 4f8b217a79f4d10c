//go:build nodemo

package main

import (
	"strings"
	"testing"
)

// A build without the simulator (the container image's) refuses --demo with
// one clear line, on every surface that offers it (make test-nodemo).
func TestNoDemoBuildRefusesDemo(t *testing.T) {
	for _, args := range [][]string{
		{"--demo", "--once"},
		{"--demo", "--once", "-o", "json"},
	} {
		code, out, errOut := runCmd(t, args...)
		if code == exitOK || out != "" || !strings.Contains(errOut, "has no demo (built with -tags nodemo") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("ctpool-tui %s in a nodemo build: exit %d, stdout %q, stderr %q; want a failure and one line that says so",
				strings.Join(args, " "), code, out, errOut)
		}
	}
}

// With no cluster at all, a nodemo build does not suggest the --demo it lacks.
func TestNoDemoBuildNoClusterHint(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	code, _, errOut := runCmd(t, "--once")
	if code != exitError || !strings.Contains(errOut, "no cluster configured") ||
		strings.Contains(errOut, "try --demo") || !strings.Contains(errOut, "this build has no --demo") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
