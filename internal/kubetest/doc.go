// Package kubetest connects integration tests to the local control plane of
// testdata/cluster (a real etcd, kube-apiserver, kube-scheduler and
// kube-controller-manager, with kwok playing the nodes).
//
// A test calls Require first:
//
//	env := kubetest.Require(t)
//	pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{})
//
// Require finds the plane through CTPOOL_TEST_CLUSTER_DIR (default
// /tmp/ctpool-tui-cluster), skips the test when the plane is not running (or
// fails it when CI is set), and gives the test a fresh namespace that is
// deleted when the test ends. ConfigAs returns the rest config of the plane's
// restricted identities, "viewer" (read only) and "operator" (the permissions
// of vdi-ct-pools.md), and WaitFor polls a condition with a deadline.
//
// Start the plane with `make cluster-up` (testdata/cluster/up), or wrap a
// command with testdata/cluster/with-cluster, which starts and stops it:
//
//	testdata/cluster/with-cluster go test -tags integration ./...
//
// The plane has four nodes: node-a and node-b (4 CPU, 8Gi memory, 110 pods
// each), vk-sandbox-0 (label sandbox.cocoonstack.io/runtime=sandboxd, taint
// virtual-kubelet.io/provider=sandboxd:NoSchedule) and vk-cocoon-0 (label
// cocoonstack.io/pool=default, taint virtual-kubelet.io/provider=cocoon:NoSchedule),
// 16 CPU and 32Gi each. Scheduled Pods become Running and Ready within about a
// second, deleted Pods disappear, and PVCs of the default StorageClass
// "standard" become Bound.
//
// kwok serves the kubelet API (exec, logs) of node-a, node-b and vk-cocoon-0,
// not of vk-sandbox-0. ServeMember gives a Running member Pod its own exec
// directory and log files, and AppendLog writes log lines kwok serves
// (testdata/cluster/README.md says how, and where kwok differs from a kubelet):
//
//	m := env.ServeMember(t, "desk-1") // exec runs in m.Dir; the log is m.Log
//	kubetest.AppendLog(t, m.Log, "stdout", "a line")
//
// It also holds the helpers that tests of several packages share, with or
// without the plane: SyncBuffer, a buffer that goroutines write and the test
// reads, and TableCell, a member's cell in a table printed by status or
// --once.
package kubetest
