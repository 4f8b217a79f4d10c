package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// NetworkPolicyEnforcer is the component of the plane that enforces
// NetworkPolicy on the real node (testdata/cluster/node.sh, netpol_up).
const NetworkPolicyEnforcer = "ctpool-netpol"

// RequireNetworkPolicy skips the test (fails it when CI is set) unless the
// plane's real node runs and its NetworkPolicy enforcer is alive.
func (e *Env) RequireNetworkPolicy(t testing.TB) {
	t.Helper()
	e.RequireNode(t)
	if _, err := os.Stat(filepath.Join(e.Dir, "netpol-enabled")); err != nil {
		unavailable(t, fmt.Sprintf("the plane in %s enforces no NetworkPolicy on its real node (up logs why: no iptables-nft, no br_netfilter)", e.Dir))
	}
	b, err := os.ReadFile(filepath.Join(e.Dir, NetworkPolicyEnforcer+".pid"))
	pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || perr != nil {
		unavailable(t, fmt.Sprintf("no pid file of %s in %s", NetworkPolicyEnforcer, e.Dir))
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), NetworkPolicyEnforcer) {
		unavailable(t, fmt.Sprintf("%s (pid %d) does not run; start it with testdata/cluster/up", NetworkPolicyEnforcer, pid))
	}
}

// ExecIn runs command in the first container of any Pod (not only a
// member's), as the admin, within timeout, and returns its standard output
// and error output; err is non-nil for a non-zero exit.
func (e *Env) ExecIn(ctx context.Context, namespace, pod string, timeout time.Duration, command ...string) (string, string, error) {
	req := e.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(e.Config, "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out, errOut bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), err
}
