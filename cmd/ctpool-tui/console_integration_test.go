//go:build integration

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/kube/kubetest"
)

// console on the real control plane: a viewer is refused with the missing
// permission, a member of another pool or none is named, and the admin's
// request reaches the (absent) kubelet, i.e. the API server allowed it.
func TestIntegrationConsoleCommand(t *testing.T) {
	env := kubetest.Require(t)
	ns := env.Namespace
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	if code, out, errOut := runCmd(t, "-n", ns, "apply", "desk", "--image", "registry.example/desktop:1", "--size", "1",
		"--cpu", "100m", "--mem", "128Mi", "--disk", "1Gi"); code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	// Free is not enough (a Starting member is free): exec needs a Running Pod.
	env.WaitFor(t, 60*time.Second, "desk-1 Ready", func() (bool, error) {
		_, out, _ := runCmd(t, "-n", ns, "status", "desk", "-o", "json")
		return strings.Contains(out, `"ready": 1,`), nil
	})
	for _, tc := range []struct {
		kubeconfig string
		args       []string
		want       string
	}{
		{"viewer", []string{"console", "desk", "desk-1", "--", "true"}, "needs create pods/exec"},
		{"admin", []string{"console", "desk", "desk-7"}, "desk-7 has no Pod"},
		{"admin", []string{"console", "other", "desk-1"}, "not a member of pool other"},
		{"admin", []string{"console", "desk", "desk-1", "--", "true"}, "10250"}, // no kubelet answers on kwok
	} {
		t.Setenv("KUBECONFIG", filepath.Join(env.Dir, tc.kubeconfig+".kubeconfig"))
		code, _, errOut := runCmd(t, append([]string{"-n", ns, "--request-timeout", "10s"}, tc.args...)...)
		if code != exitError || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s %v: exit %d, stderr %q; want exit 1 and one line with %q", tc.kubeconfig, tc.args, code, errOut, tc.want)
		}
		if tc.kubeconfig == "admin" && strings.Contains(errOut, "forbidden") {
			t.Errorf("admin console refused: %s", errOut)
		}
	}
}
