package main

import (
	"strings"
	"testing"
)

func TestReconcileControllerFlags(t *testing.T) {
	t.Setenv("KUBECONFIG", deadKubeconfig(t))
	cases := []struct {
		name      string
		args      []string
		code      int
		stderrHas string
	}{
		{"no pool and no --all", []string{"reconcile"}, exitUsage, "reconcile takes POOL (or --all)"},
		{"pool and --all", []string{"reconcile", "desk", "--all"}, exitUsage, "not both"},
		{"pool and -A", []string{"reconcile", "desk", "-A"}, exitUsage, "not both"},
		{"--leader-elect without --watch", []string{"reconcile", "--all", "--leader-elect"}, exitUsage, "--leader-elect goes with --watch"},
		{"--metrics-addr without --watch", []string{"reconcile", "desk", "--metrics-addr", ":0"}, exitUsage, "--metrics-addr goes with --watch"},
		{"zero workers", []string{"reconcile", "--all", "--watch", "--workers", "0"}, exitUsage, "--workers must be at least 1"},
		{"lease timings out of order", []string{"reconcile", "--all", "--watch", "--leader-elect", "--leader-elect-renew-deadline", "20s"}, exitUsage, "lease-duration"},
		{"bad metrics address", []string{"reconcile", "--all", "--watch", "--metrics-addr", "256.0.0.1:x"}, exitError, "--metrics-addr"},
		{"--all once, unreachable", []string{"reconcile", "--all", "--request-timeout", "2s"}, exitError, "list pools"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, errOut)
			}
			if !strings.Contains(errOut, tc.stderrHas) {
				t.Errorf("stderr %q lacks %q", errOut, tc.stderrHas)
			}
			if strings.Count(strings.TrimRight(errOut, "\n"), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", errOut)
			}
		})
	}
}

func TestHelpListsControllerFlags(t *testing.T) {
	code, out, _ := runCmd(t, "reconcile", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, f := range []string{"--all", "--all-namespaces", "--workers", "--leader-elect", "--leader-elect-namespace", "--metrics-addr", "--interval"} {
		if !strings.Contains(out, f) {
			t.Errorf("reconcile --help lacks %s", f)
		}
	}
	if code, out, _ := runCmd(t, "--help"); code != exitOK || !strings.Contains(out, "manifests") {
		t.Errorf("help lacks manifests (exit %d)", code)
	}
}
