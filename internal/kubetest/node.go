package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The plane's real node (testdata/cluster/node.sh): a kubelet and containerd
// on this host, and what a pool needs to reach it.
const (
	RealNode = "node-real"
	// RealNodeRuntimeClass schedules a member onto the real node (its
	// RuntimeClass carries the node selector and the toleration).
	RealNodeRuntimeClass = "ctpool-node"
	// RealNodeStorageClass provisions hostPath volumes the real node mounts.
	RealNodeStorageClass = "node-local"
	// Images imported into the node's containerd (testdata/cluster/images):
	// a merged-/usr Debian root and a busybox root with real /bin, /sbin and
	// /lib. Their entrypoint, desktop-entrypoint, appends a line to
	// /var/log/desktop-boots at each start.
	ImageDebian     = "ctpool.test/desktop-debian:1"
	ImageBusybox    = "ctpool.test/desktop-busybox:1"
	ImageEntrypoint = "/usr/local/bin/desktop-entrypoint"
	// ImageCrash's entrypoint exits 2 at once (with --init: CrashLoopBackOff);
	// ImageMissing is on no node and in no registry the node can reach.
	ImageCrash   = "ctpool.test/desktop-crash:1"
	ImageMissing = "ctpool.test/desktop-missing:1"
)

// RequireNode skips the test (fails it when CI is set) unless the plane runs
// its real node and the node is Ready.
func (e *Env) RequireNode(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(e.Dir, "node-enabled")); err != nil {
		unavailable(t, fmt.Sprintf("the plane in %s runs no real node (up logs why: not root, no runc, CTPOOL_CLUSTER_NODE=0)", e.Dir))
	}
	n, err := e.Client.CoreV1().Nodes().Get(t.Context(), RealNode, metav1.GetOptions{})
	if err != nil {
		unavailable(t, fmt.Sprintf("node %s: %v", RealNode, err))
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return
		}
	}
	unavailable(t, fmt.Sprintf("node %s is not Ready", RealNode))
}
