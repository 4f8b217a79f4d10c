//go:build e2e

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// kubeconfig is the plane's kubeconfig of an identity: admin, viewer or operator.
func kubeconfig(env *kubetest.Env, who string) string {
	return filepath.Join(env.Dir, who+".kubeconfig")
}

// ctl runs a command of the binary (not the dashboard) as the admin in the
// test's namespace and returns its output; it fails the test on a non-zero exit.
func ctl(t *testing.T, env *kubetest.Env, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"-n", env.Namespace}, args...)...)
	cmd.Env = childEnv([]string{"KUBECONFIG=" + kubeconfig(env, "admin")})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ctpool-tui %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// setupPool gives the test a namespace with pool desk of two Ready members,
// desk-1 claimed by alice@example.com.
func setupPool(t *testing.T) *kubetest.Env {
	t.Helper()
	env := kubetest.Require(t)
	ctl(t, env, "apply", "desk", "--image", "registry.example/desktop:1", "--size", "2",
		"--cpu", "100m", "--mem", "128Mi", "--disk", "1Gi")
	env.WaitFor(t, 60*time.Second, "both members of desk Ready", func() (bool, error) {
		return strings.Contains(ctl(t, env, "status", "desk", "-o", "json"), `"ready": 2,`), nil
	})
	// A claim works from the recorded status: the one apply recorded may
	// show the members still waiting for their PVCs, and a claim prefers a
	// member recorded Starting to one recorded Unschedulable, whichever
	// member that is. Record the pool as it is now (both Ready), as the
	// in-cluster reconciler would, so that alice's claim is decided by her
	// identity alone: desk-1.
	ctl(t, env, "reconcile", "desk")
	if got := strings.TrimSpace(ctl(t, env, "claim", "desk", "alice@example.com")); got != "desk-1" {
		t.Fatalf("claim gave %q, want desk-1", got)
	}
	return env
}
