package main

import (
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/kube/controller/alerts"
)

func runAlerts(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCmd(t, append([]string{"alerts"}, args...)...)
	if code != exitOK {
		t.Fatalf("alerts %v: exit %d: %s", args, code, errOut)
	}
	return out
}

// TestAlertsPrintsThePackages: with the default thresholds the command prints
// what package alerts builds (its golden tests pin that).
func TestAlertsPrintsThePackages(t *testing.T) {
	th := alerts.DefaultThresholds()
	for _, tc := range []struct {
		args  []string
		build func() ([]byte, error)
	}{
		{[]string{"-n", "vdi"}, func() ([]byte, error) { return alerts.RulesYAML(th, "vdi", false) }},
		{[]string{"-n", "vdi", "--rules-only"}, func() ([]byte, error) { return alerts.RulesYAML(th, "vdi", true) }},
		{[]string{"--grafana"}, func() ([]byte, error) { return alerts.Dashboard(th) }},
	} {
		want, err := tc.build()
		if err != nil {
			t.Fatal(err)
		}
		if got := runAlerts(t, tc.args...); got != string(want) {
			t.Errorf("alerts %v differs from package alerts' output:\n%s\n%s", tc.args, got, want)
		}
	}
}

func TestAlertsThresholdFlags(t *testing.T) {
	out := runAlerts(t, "-n", "vdi", "--rules-only", "--forecast-minutes", "10", "--stale-reconcile", "90s",
		"--exhausted-for", "7m", "--exhausted-fixed-for", "1h30m", "--unschedulable-for", "1h", "--leader-absent-for", "45s")
	for _, want := range []string{"< 600)", "> 90\n", "for: 1m30s\n", "for: 7m\n", "for: 1h30m\n", "for: 1h\n", "for: 45s\n", "the threshold is 10 minutes"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestAlertsFlagsValidated(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--exhausted-for", "0s"}, "--exhausted-for must be a positive duration"},
		{[]string{"--exhausted-fixed-for", "-1m"}, "--exhausted-fixed-for must be a positive duration"},
		{[]string{"--forecast-for", "0"}, "--forecast-for must be a positive duration"},
		{[]string{"--unschedulable-for", "-15m"}, "--unschedulable-for must be a positive duration"},
		{[]string{"--maintenance-stale-for", "0s"}, "--maintenance-stale-for must be a positive duration"},
		{[]string{"--leader-absent-for", "0s"}, "--leader-absent-for must be a positive duration"},
		{[]string{"--stale-reconcile", "-10m"}, "--stale-reconcile must be a positive duration"},
		{[]string{"--stale-reconcile", "1500us"}, "--stale-reconcile must be a whole number of milliseconds"},
		{[]string{"--forecast-minutes", "0"}, "--forecast-minutes must be a positive number"},
		{[]string{"--forecast-minutes", "-5", "--grafana"}, "--forecast-minutes must be a positive number"},
		{[]string{"--rules-only", "--grafana"}, "give one"},
		{[]string{"--exhausted-for", "soon"}, "invalid argument \"soon\" for \"--exhausted-for\""},
		{[]string{"extra"}, "unknown command"},
	} {
		code, out, errOut := runCmd(t, append([]string{"alerts", "-n", "vdi"}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("alerts %v: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", tc.args, code, out, errOut, exitUsage, tc.want)
		}
	}
}
