// Command peers measures the dashboard against k9s on one pool of many
// members on a running plane (make bench-peers): each tool runs in its own
// tmux pseudo-terminal at a fixed size, the two alternating, and for each
// run it reports
//
//   - first screen: from the start of the process until the screen is
//     complete (ctpool-tui: the pool's row shows every member, Ready, with
//     its claims, and the header says live; k9s: the pods view's title shows
//     the namespace's pod count);
//   - RSS after the idle window (VmRSS of /proc/PID/status), and the CPU
//     time (utime+stime of /proc/PID/stat) spent over that window with
//     nothing changing, the window starting at the first screen;
//   - a claim: a member's claim Lease (what the engine's claim creates,
//     engine.ClaimLease) made with kubectl create, and the wall time until
//     the screen shows it (ctpool-tui: the pool's CLAIMED count; k9s: the
//     count in the title of its leases view, which it is switched to, and
//     shows in full, before the claim), from kubectl's return (the Lease
//     exists; the 1 s target) and from its start, and the tool's CPU time
//     from kubectl's start until then.
//
// The pool is made first when it is not there yet: the objects the engine
// creates (engine.BuildConfigMap, BuildPod, BuildPVC; a claim Lease,
// engine.ClaimLease, on every second member), on kwok nodes added for the
// purpose (PEERS_PODS_PER_NODE each), and the run waits until every Pod is
// Running and Ready and every PVC Bound. The pool stays for the next run
// (-cleanup removes it and the nodes).
//
// Every setting has an environment variable (PEERS_MEMBERS, PEERS_IDLE,
// PEERS_ROUNDS, ...; see -h). It prints a table of the medians with each
// ratio and its target, and exits 1 when a target is missed.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

type config struct {
	members, rounds, podsPerNode, cols, rows int
	idle, startTimeout, claimTimeout         time.Duration
	setupTimeout                             time.Duration
	namespace, pool                          string
	ctpool, k9s, kubectl, kubeconfig         string
	cleanup, setupOnly                       bool
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
		fatalf("%s=%q is not a number", name, v)
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fatalf("%s=%q is not a duration: %v", name, v, err)
		}
		return d
	}
	return def
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "peers: "+format+"\n", args...)
	os.Exit(2)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s peers: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func main() {
	home, _ := os.UserHomeDir()
	var c config
	flag.IntVar(&c.members, "members", envInt("PEERS_MEMBERS", 10000), "members of the pool (PEERS_MEMBERS)")
	flag.IntVar(&c.rounds, "rounds", envInt("PEERS_ROUNDS", 2), "runs of each tool, alternating (PEERS_ROUNDS)")
	flag.IntVar(&c.podsPerNode, "pods-per-node", envInt("PEERS_PODS_PER_NODE", 1000), "pod capacity of each kwok node added (PEERS_PODS_PER_NODE)")
	flag.IntVar(&c.cols, "cols", envInt("PEERS_COLS", 120), "terminal columns (PEERS_COLS)")
	flag.IntVar(&c.rows, "rows", envInt("PEERS_ROWS", 40), "terminal rows (PEERS_ROWS)")
	flag.DurationVar(&c.idle, "idle", envDuration("PEERS_IDLE", 60*time.Second), "idle window after the first screen (PEERS_IDLE)")
	flag.DurationVar(&c.startTimeout, "start-timeout", envDuration("PEERS_START_TIMEOUT", 5*time.Minute), "longest wait for a first screen (PEERS_START_TIMEOUT)")
	flag.DurationVar(&c.claimTimeout, "claim-timeout", envDuration("PEERS_CLAIM_TIMEOUT", time.Minute), "longest wait for a claim on screen (PEERS_CLAIM_TIMEOUT)")
	flag.DurationVar(&c.setupTimeout, "setup-timeout", envDuration("PEERS_SETUP_TIMEOUT", 90*time.Minute), "longest wait for the pool to be Ready (PEERS_SETUP_TIMEOUT)")
	flag.StringVar(&c.namespace, "namespace", envString("PEERS_NAMESPACE", "ctpool-peers"), "namespace of the pool (PEERS_NAMESPACE)")
	flag.StringVar(&c.pool, "pool", envString("PEERS_POOL", "desk"), "the pool's name (PEERS_POOL)")
	flag.StringVar(&c.ctpool, "ctpool-tui", envString("PEERS_CTPOOL_TUI", "bin/ctpool-tui"), "the ctpool-tui binary (PEERS_CTPOOL_TUI)")
	flag.StringVar(&c.k9s, "k9s", envString("PEERS_K9S", filepath.Join(home, ".cache/ctpool-tui/peers/v0.50.16/k9s")), "the k9s binary (PEERS_K9S)")
	flag.StringVar(&c.kubectl, "kubectl", envString("PEERS_KUBECTL", "kubectl"), "the kubectl binary (PEERS_KUBECTL)")
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "the plane's kubeconfig (KUBECONFIG)")
	flag.BoolVar(&c.cleanup, "cleanup", false, "delete the pool, its namespace and the nodes added, then exit")
	flag.BoolVar(&c.setupOnly, "setup-only", false, "make the pool and wait until it is Ready, then exit")
	flag.Parse()
	if c.kubeconfig == "" {
		fatalf("set KUBECONFIG to the plane's kubeconfig (make cluster-up prints it)")
	}
	for _, bin := range []*string{&c.ctpool, &c.k9s, &c.kubectl} {
		if c.setupOnly || c.cleanup {
			break
		}
		if bin == &c.k9s && os.Getenv("PEERS_TOOLS") == "ctpool-tui" {
			continue
		}
		p, err := exec.LookPath(*bin)
		if err != nil {
			fatalf("%v", err)
		}
		*bin, _ = filepath.Abs(p)
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		fatalf("tmux is needed for the pseudo-terminals: %v", err)
	}
	ctx := context.Background()
	client := newClient(c.kubeconfig)
	if c.cleanup {
		cleanup(ctx, client, c)
		return
	}
	ensurePool(ctx, client, c)
	if c.setupOnly {
		return
	}

	tools := []tool{ctpoolTool(c), k9sTool(c)}
	if only := os.Getenv("PEERS_TOOLS"); only != "" { // a run of one of them (ctpool-tui or k9s), to try the setup
		var some []tool
		for _, t := range tools {
			if strings.Contains(","+only+",", ","+t.name+",") {
				some = append(some, t)
			}
		}
		tools = some
	}
	results := map[string][]run{}
	for r := range c.rounds {
		for i := range tools {
			t := tools[(i+r)%len(tools)] // alternate which goes first
			res, err := measure(ctx, client, c, t, r)
			if err != nil {
				fatalf("%s, round %d: %v", t.name, r+1, err)
			}
			logf("%s round %d: first screen %v, RSS %.1f MiB, idle CPU %v, claim %v wall %v CPU",
				t.name, r+1, res.first.Round(time.Millisecond), res.rssMiB, res.idleCPU, res.claimWall.Round(time.Millisecond), res.claimCPU)
			results[t.name] = append(results[t.name], res)
		}
	}
	if !report(os.Stdout, c, results) {
		os.Exit(1)
	}
}

func newClient(kubeconfig string) *kubernetes.Clientset {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 2000, 4000 // the setup's writes, not a tool's
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fatalf("client: %v", err)
	}
	return client
}

// ---------------------------------------------------------------------------
// The pool.

func poolSpec(c config) engine.Spec {
	s := engine.Spec{Image: "ghcr.io/example/desktop:2", CPU: "1m", Memory: "1Mi", Disk: "1Gi", Size: c.members}
	s.Default()
	return s
}

// claimed reports whether member i is claimed at rest: every second one.
func claimed(i int) bool { return i%2 == 0 }

func claims(c config) int { return c.members / 2 }

const nodePrefix = "ctpool-peers-"

// parallel runs fn(1..n) on workers goroutines; it returns the first error.
func parallel(workers, n int, fn func(i int) error) error {
	var next atomic.Int64
	var first error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ensureNodes adds nodes until the plane's schedulable pod capacity holds
// the pool. They are Ready from the start and kwok does not manage them
// (no kwok.x-k8s.io/node annotation): on a small shared machine kwok
// brings Pods up and binds volumes at a few objects a second, so the
// setup writes the statuses kwok's stages write itself (startPods,
// bindVolumes). A node of ours that kwok manages (an older run) is taken
// from it.
func ensureNodes(ctx context.Context, client kubernetes.Interface, c config) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalf("list nodes: %v", err)
	}
	capacity, ours := 0, 0
	for _, n := range nodes.Items {
		if len(n.Spec.Taints) > 0 {
			continue // the virtual nodes take only Pods that tolerate them
		}
		capacity += int(n.Status.Allocatable.Pods().Value())
		if !strings.HasPrefix(n.Name, nodePrefix) {
			continue
		}
		ours++
		if _, managed := n.Annotations[kwokNode]; managed {
			patch := []byte(`{"metadata":{"annotations":{"` + kwokNode + `":null}}}`)
			if _, err := client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				fatalf("take node %s from kwok: %v", n.Name, err)
			}
			logf("node %s taken from kwok", n.Name)
		}
	}
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		fatalf("list pods: %v", err)
	}
	other := 0
	for _, p := range pods.Items {
		if p.Namespace != c.namespace {
			other++
		}
	}
	need := c.members + other + 100 // a margin for the tests of the plane
	for capacity < need {
		name := fmt.Sprintf("%s%02d", nodePrefix, ours)
		ours++
		q := resource.MustParse(strconv.Itoa(c.podsPerNode))
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"),
			corev1.ResourcePods: q, corev1.ResourceEphemeralStorage: resource.MustParse("10Ti")}
		now := metav1.Now()
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
					"node-role.kubernetes.io/worker": "", "type": "peers"}},
			Status: corev1.NodeStatus{Allocatable: res, Capacity: res, Phase: corev1.NodeRunning,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
					Message: "ready (written by testdata/peers)", LastHeartbeatTime: now, LastTransitionTime: now}},
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: name}},
				NodeInfo:  corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux", KubeletVersion: "peers"}},
		}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); ignoreExists(err) != nil {
			fatalf("create node %s: %v", name, err)
		}
		logf("added node %s (%d pods)", name, c.podsPerNode)
		capacity += c.podsPerNode
	}
}

const kwokNode = "kwok.x-k8s.io/node"

// startPods writes the status kwok's pod-ready stage writes on each Pod
// bound to one of our nodes that is not Running and Ready yet: what a
// kubelet reports once the container runs.
func startPods(ctx context.Context, client kubernetes.Interface, c config, pods []corev1.Pod) error {
	var todo []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp == nil && strings.HasPrefix(p.Spec.NodeName, nodePrefix) && !podReady(p) {
			todo = append(todo, p)
		}
	}
	return parallel(32, len(todo), func(i int) error {
		p := todo[i-1].DeepCopy()
		now := metav1.Now()
		started := true
		ip := fmt.Sprintf("10.%d.%d.%d", 200+i/65536, (i/256)%256, i%256)
		p.Status = corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}},
			PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now, QOSClass: corev1.PodQOSGuaranteed,
		}
		for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
		}
		for _, ctr := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: ctr.Name, Image: ctr.Image, ImageID: ctr.Image, Ready: true, Started: &started,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
		}
		_, err := client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // read again at the next round
		}
		return err
	})
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// bindVolumes provisions and binds a volume for each PVC that is not
// Bound, as kwok's pvc-provision and pv-bind stages do: a PersistentVolume
// pvc-<uid> claimed by it, the PVC's volumeName and binding annotations,
// and both statuses Bound.
func bindVolumes(ctx context.Context, client kubernetes.Interface, pvcs []corev1.PersistentVolumeClaim) error {
	var todo []*corev1.PersistentVolumeClaim
	for i := range pvcs {
		if pvcs[i].DeletionTimestamp == nil && pvcs[i].Status.Phase != corev1.ClaimBound {
			todo = append(todo, &pvcs[i])
		}
	}
	return parallel(32, len(todo), func(i int) error {
		pvc := todo[i-1].DeepCopy()
		name := "pvc-" + string(pvc.UID)
		if pvc.Spec.VolumeName != "" {
			name = pvc.Spec.VolumeName
		}
		mode := corev1.PersistentVolumeFilesystem
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "kwok.x-k8s.io/volume"}},
			Spec: corev1.PersistentVolumeSpec{
				AccessModes: pvc.Spec.AccessModes, Capacity: pvc.Spec.Resources.Requests,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, VolumeMode: &mode,
				ClaimRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace,
					Name: pvc.Name, UID: pvc.UID},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/kwok-local-path-provisioner/" + name}},
			},
		}
		if pvc.Spec.StorageClassName != nil {
			pv.Spec.StorageClassName = *pvc.Spec.StorageClassName
		}
		if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return fmt.Errorf("create PV %s: %w", name, err)
		}
		if pvc.Spec.VolumeName == "" {
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			for k, v := range map[string]string{"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
				"volume.beta.kubernetes.io/storage-provisioner": "kwok.x-k8s.io/volume", "volume.kubernetes.io/storage-provisioner": "kwok.x-k8s.io/volume"} {
				pvc.Annotations[k] = v
			}
			pvc.Spec.VolumeName = name
			updated, err := client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return nil // read again at the next round
			}
			if err != nil {
				return fmt.Errorf("bind PVC %s: %w", pvc.Name, err)
			}
			pvc = updated
		}
		pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
			Capacity: pvc.Spec.Resources.Requests}
		if _, err := client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil &&
			!apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("PVC %s status: %w", pvc.Name, err)
		}
		status := []byte(`{"status":{"phase":"Bound"}}`)
		if _, err := client.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil &&
			!apierrors.IsNotFound(err) {
			return fmt.Errorf("PV %s status: %w", name, err)
		}
		return nil
	})
}

// ensurePool makes the pool of c.members members with its claims, removes
// what a larger pool or an interrupted run left, and waits until every Pod
// is Running and Ready and every PVC Bound.
func ensurePool(ctx context.Context, client kubernetes.Interface, c config) {
	start := time.Now()
	ensureNodes(ctx, client, c)
	ns, pool, spec := c.namespace, c.pool, poolSpec(c)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); ignoreExists(err) != nil {
		fatalf("create namespace: %v", err)
	}
	cm := engine.BuildConfigMap(ns, pool, spec)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		old, err := client.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			fatalf("read the pool: %v", err)
		}
		old.Data[engine.KeySpec] = cm.Data[engine.KeySpec]
		if _, err := client.CoreV1().ConfigMaps(ns).Update(ctx, old, metav1.UpdateOptions{}); err != nil {
			fatalf("update the pool: %v", err)
		}
	} else if err != nil {
		fatalf("create the pool: %v", err)
	}

	// What is there already, and what must go: members above the size, and
	// claims of members not claimed at rest (an interrupted measurement).
	sel := metav1.ListOptions{LabelSelector: labels.Set{engine.LabelPool: pool}.String(), ResourceVersion: "0"}
	have := map[string]bool{}
	pods, err := client.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		fatalf("list pods: %v", err)
	}
	pvcs, err := client.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
	if err != nil {
		fatalf("list PVCs: %v", err)
	}
	leases, err := client.CoordinationV1().Leases(ns).List(ctx, sel)
	if err != nil {
		fatalf("list leases: %v", err)
	}
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	index := func(name string) int { n, _ := engine.MemberIndex(pool, name); return n }
	for _, p := range pods.Items {
		if index(p.Name) > c.members {
			_ = client.CoreV1().Pods(ns).Delete(ctx, p.Name, del)
		} else {
			have["pod/"+p.Name] = true
		}
	}
	for _, p := range pvcs.Items {
		if index(p.Name) > c.members {
			_ = client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, p.Name, del)
		} else {
			have["pvc/"+p.Name] = true
		}
	}
	for _, l := range leases.Items {
		member := l.Labels[engine.LabelMember]
		if n := index(member); n > c.members || !claimed(n) {
			_ = client.CoordinationV1().Leases(ns).Delete(ctx, l.Name, del)
		} else {
			have["lease/"+member] = true
		}
	}

	now := time.Now()
	var made atomic.Int64
	stop := progress("objects created", &made)
	err = parallel(32, c.members, func(i int) error {
		name := engine.MemberName(pool, i)
		pvc := engine.BuildPVC(ns, pool, i, spec)
		if !have["pvc/"+pvc.Name] {
			if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); ignoreExists(err) != nil {
				return fmt.Errorf("create PVC %s: %w", pvc.Name, err)
			}
			made.Add(1)
		}
		if !have["pod/"+name] {
			if _, err := client.CoreV1().Pods(ns).Create(ctx, engine.BuildPod(ns, pool, i, spec), metav1.CreateOptions{}); ignoreExists(err) != nil {
				return fmt.Errorf("create Pod %s: %w", name, err)
			}
			made.Add(1)
		}
		if claimed(i) && !have["lease/"+name] {
			l := engine.ClaimLease(ns, pool, name, fmt.Sprintf("user%d@example.com", i), now.Add(-time.Duration(i)*time.Second))
			if _, err := client.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); ignoreExists(err) != nil {
				return fmt.Errorf("create Lease of %s: %w", name, err)
			}
			made.Add(1)
		}
		return nil
	})
	stop()
	if err != nil {
		fatalf("%v", err)
	}

	// Every Pod Running and Ready, every PVC Bound, nothing else left.
	deadline := time.Now().Add(c.setupTimeout)
	for {
		ready, bound, total, err := poolState(ctx, client, c, true)
		if err != nil {
			logf("reading the pool: %v (asking again)", err)
		} else {
			if ready == c.members && bound == c.members && total == c.members {
				break
			}
			logf("pool %s/%s: %d of %d Pods Running and Ready, %d PVCs Bound (%d Pods in all)", ns, pool, ready, c.members, bound, total)
		}
		if time.Now().After(deadline) {
			fatalf("the pool was not Ready within %v (PEERS_SETUP_TIMEOUT)", c.setupTimeout)
		}
		time.Sleep(5 * time.Second) // the poll interval of a wait on a deadline
	}
	logf("pool %s/%s: %d members Ready, %d claimed, in %v", ns, pool, c.members, claims(c), time.Since(start).Round(time.Second))
}

// progress logs a counter every 5 seconds until stopped.
func progress(what string, n *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				logf("%d %s", n.Load(), what)
			}
		}
	}()
	return func() { close(done) }
}

// poolState counts the pool's Pods Running and Ready and its PVCs Bound;
// with work, it first starts the Pods and binds the volumes that wait.
func poolState(ctx context.Context, client kubernetes.Interface, c config, work bool) (ready, bound, total int, err error) {
	sel := metav1.ListOptions{LabelSelector: labels.Set{engine.LabelPool: c.pool}.String()}
	pods, err := client.CoreV1().Pods(c.namespace).List(ctx, sel)
	if err != nil {
		return 0, 0, 0, err
	}
	pvcs, err := client.CoreV1().PersistentVolumeClaims(c.namespace).List(ctx, sel)
	if err != nil {
		return 0, 0, 0, err
	}
	if work {
		if err := bindVolumes(ctx, client, pvcs.Items); err != nil {
			return 0, 0, 0, err
		}
		if err := startPods(ctx, client, c, pods.Items); err != nil {
			return 0, 0, 0, err
		}
		return poolState(ctx, client, c, false)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		total++
		if podReady(&p) {
			ready++
		}
	}
	for _, p := range pvcs.Items {
		if p.Status.Phase == corev1.ClaimBound && p.DeletionTimestamp == nil {
			bound++
		}
	}
	return ready, bound, total, nil
}

// cleanup deletes the pool's objects at once (no kubelet confirms the
// Pods' deletion on our nodes; the PVCs' protection finalizer is taken
// off), its volumes, the namespace and the nodes added.
func cleanup(ctx context.Context, client kubernetes.Interface, c config) {
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	ns := c.namespace
	for _, err := range []error{
		ignoreNotFound(client.CoreV1().Pods(ns).DeleteCollection(ctx, del, metav1.ListOptions{})),
		ignoreNotFound(client.CoreV1().PersistentVolumeClaims(ns).DeleteCollection(ctx, del, metav1.ListOptions{})),
		ignoreNotFound(client.CoordinationV1().Leases(ns).DeleteCollection(ctx, del, metav1.ListOptions{})),
	} {
		if err != nil {
			fatalf("delete the pool's objects: %v", err)
		}
	}
	pvcs, err := client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalf("list PVCs: %v", err)
	}
	unprotect := []byte(`{"metadata":{"finalizers":null}}`)
	_ = parallel(32, len(pvcs.Items), func(i int) error {
		_, _ = client.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, pvcs.Items[i-1].Name, types.MergePatchType, unprotect, metav1.PatchOptions{})
		return nil
	})
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalf("list PVs: %v", err)
	}
	var ours []string
	for _, pv := range pvs.Items {
		if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns {
			ours = append(ours, pv.Name)
		}
	}
	_ = parallel(32, len(ours), func(i int) error {
		_ = client.CoreV1().PersistentVolumes().Delete(ctx, ours[i-1], del)
		_, _ = client.CoreV1().PersistentVolumes().Patch(ctx, ours[i-1], types.MergePatchType, unprotect, metav1.PatchOptions{})
		return nil
	})
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
		fatalf("delete namespace %s: %v", ns, err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalf("list nodes: %v", err)
	}
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, nodePrefix) {
			if err := client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
				fatalf("delete node %s: %v", n.Name, err)
			}
		}
	}
	logf("the pool's objects, %d volumes, namespace %s and the nodes %s* deleted", len(ours), ns, nodePrefix)
}

// ---------------------------------------------------------------------------
// The tools.

type tool struct {
	name string
	argv []string
	env  []string
	// firstScreen: the screen is complete.
	firstScreen func(screen string) bool
	// toClaims switches to the view of the claims (keys sent), or nil.
	toClaims []string
	// claimsShown: the screen shows n claims.
	claimsShown func(screen string, n int) bool
}

// poolRow matches the pool's row of the pools view: POOL BACKEND IMAGE
// SIZE READY CLAIMED FREE.
func poolRow(pool string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^[^\n]*\s` + regexp.QuoteMeta(pool) + `\s+\S+\s+\S+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)`)
}

func ctpoolTool(c config) tool {
	row := poolRow(c.pool)
	counts := func(screen string) (size, ready, claimed int, ok bool) {
		m := row.FindStringSubmatch(screen)
		if m == nil {
			return 0, 0, 0, false
		}
		size, _ = strconv.Atoi(m[1])
		ready, _ = strconv.Atoi(m[2])
		claimed, _ = strconv.Atoi(m[3])
		return size, ready, claimed, true
	}
	live := func(screen string) bool {
		first, _, _ := strings.Cut(screen, "\n")
		return strings.Contains(first, "live")
	}
	return tool{
		name: "ctpool-tui",
		argv: []string{c.ctpool, "-n", c.namespace},
		firstScreen: func(screen string) bool {
			size, ready, cl, ok := counts(screen)
			return ok && live(screen) && size == c.members && ready == c.members && cl == claims(c)
		},
		claimsShown: func(screen string, n int) bool {
			_, _, cl, ok := counts(screen)
			return ok && cl == n
		},
	}
}

// thousands writes n as k9s does in a title (10,000).
func thousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func k9sTool(c config) tool {
	title := func(screen, kind string, n int) bool {
		for _, line := range strings.Split(strings.ToLower(screen), "\n") {
			if strings.Contains(line, kind+"("+c.namespace+")["+thousands(n)+"]") {
				return true
			}
		}
		return false
	}
	return tool{
		name: "k9s",
		argv: []string{c.k9s, "-n", c.namespace, "-c", "pods"},
		firstScreen: func(screen string) bool {
			return title(screen, "pods", c.members)
		},
		toClaims: []string{":leases", "Enter"},
		claimsShown: func(screen string, n int) bool {
			return title(screen, "leases", n)
		},
	}
}

// k9sHome is a fresh configuration for k9s: its defaults, without the
// check for a newer release (the plane has no network to ask).
func k9sHome(dir string) ([]string, error) {
	conf := filepath.Join(dir, "config", "k9s")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(conf, "config.yaml"), []byte("k9s:\n  skipLatestRevCheck: true\n"), 0o644); err != nil {
		return nil, err
	}
	return []string{"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"XDG_DATA_HOME=" + filepath.Join(dir, "data"), "XDG_CACHE_HOME=" + filepath.Join(dir, "cache")}, nil
}

// ---------------------------------------------------------------------------
// One run.

type run struct {
	first              time.Duration
	rssMiB             float64
	idleCPU            time.Duration
	claimWall          time.Duration
	claimCPU           time.Duration
	kubectl            time.Duration
	claimsBeforeScreen time.Duration // k9s: from the switch to the leases view until it is shown
}

// pane is a tmux session of its own server (socket), one per run.
type pane struct {
	socket, name string
	pid          int
}

func (p *pane) tmux(args ...string) ([]byte, error) {
	out, err := exec.Command("tmux", append([]string{"-L", p.socket}, args...)...).Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		err = fmt.Errorf("tmux %s: %v: %s", args[0], err, bytes.TrimSpace(ee.Stderr))
	}
	return out, err
}

func (p *pane) screen() string {
	out, err := p.tmux("capture-pane", "-p", "-t", p.name)
	if err != nil {
		return ""
	}
	return string(out)
}

// waitScreen polls the screen every 20ms until cond holds or the timeout.
func (p *pane) waitScreen(timeout time.Duration, cond func(string) bool) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		s := p.screen()
		if cond(s) {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("not on screen within %v; the screen:\n%s", timeout, s)
		}
		time.Sleep(20 * time.Millisecond) // the poll interval of a wait on a deadline
	}
}

// stop ends the tool and the tmux server, and waits for the tool's exit.
func (p *pane) stop() {
	_, _ = p.tmux("kill-server")
	deadline := time.Now().Add(10 * time.Second)
	for alive(p.pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the poll interval of a wait on a deadline
	}
	if alive(p.pid) {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

var clockTick = func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if n, perr := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && perr == nil && n > 0 {
		return float64(n)
	}
	return 100
}()

// cpu is the process's user and system CPU time so far.
func cpu(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+2:])) // from field 3, state
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return time.Duration((utime + stime) / clockTick * float64(time.Second))
}

// rss is the process's resident set in MiB.
func rss(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func measure(ctx context.Context, client kubernetes.Interface, c config, t tool, round int) (run, error) {
	var res run
	dir, err := os.MkdirTemp("", "ctpool-peers-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	env := []string{"KUBECONFIG=" + c.kubeconfig}
	if t.name == "k9s" {
		home, err := k9sHome(dir)
		if err != nil {
			return res, err
		}
		env = append(env, home...)
	}
	p := &pane{socket: fmt.Sprintf("ctpool-peers-%d-%d", os.Getpid(), round), name: "peers"}
	args := []string{"-f", "/dev/null", "new-session", "-d", "-s", p.name, "-x", strconv.Itoa(c.cols), "-y", strconv.Itoa(c.rows),
		"env"}
	args = append(append(args, env...), t.argv...)
	logf("%s round %d: starting %s", t.name, round+1, strings.Join(t.argv, " "))
	start := time.Now()
	if _, err := p.tmux(args...); err != nil {
		return res, err
	}
	defer p.stop()
	out, err := p.tmux("display-message", "-p", "-t", p.name, "#{pane_pid}")
	if err != nil {
		return res, err
	}
	if p.pid, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		return res, fmt.Errorf("pane pid %q: %v", out, err)
	}

	shown, err := p.waitScreen(c.startTimeout, t.firstScreen)
	if err != nil {
		return res, fmt.Errorf("first screen: %w", err)
	}
	res.first = shown.Sub(start)

	// The idle window: nothing changes in the pool.
	cpu0 := cpu(p.pid)
	time.Sleep(c.idle) // the window measured, not a wait for a condition
	res.idleCPU = cpu(p.pid) - cpu0
	res.rssMiB = rss(p.pid)
	if !alive(p.pid) {
		return res, fmt.Errorf("the tool exited; the screen:\n%s", p.screen())
	}

	// The claim.
	if t.toClaims != nil {
		switched := time.Now()
		if _, err := p.tmux(append([]string{"send-keys", "-t", p.name}, t.toClaims...)...); err != nil {
			return res, err
		}
		at, err := p.waitScreen(c.startTimeout, func(s string) bool { return t.claimsShown(s, claims(c)) })
		if err != nil {
			return res, fmt.Errorf("the claims view: %w", err)
		}
		res.claimsBeforeScreen = at.Sub(switched)
	}
	member := engine.MemberName(c.pool, 2*round+1) // not claimed at rest
	lease := engine.ClaimLease(c.namespace, c.pool, member, "peers@example.com", time.Now())
	lease.TypeMeta = metav1.TypeMeta{APIVersion: coordinationv1.SchemeGroupVersion.String(), Kind: "Lease"}
	manifest, err := json.Marshal(lease)
	if err != nil {
		return res, err
	}
	defer func() {
		zero := int64(0)
		if err := client.CoordinationV1().Leases(c.namespace).Delete(ctx, lease.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); ignoreNotFound(err) != nil {
			logf("removing the claim %s: %v", lease.Name, err)
		}
	}()
	cpu1 := cpu(p.pid)
	claimStart := time.Now()
	kubectl := exec.Command(c.kubectl, "--kubeconfig", c.kubeconfig, "create", "-f", "-")
	kubectl.Stdin = bytes.NewReader(manifest)
	if out, err := kubectl.CombinedOutput(); err != nil {
		return res, fmt.Errorf("kubectl create the claim: %v: %s", err, out)
	}
	res.kubectl = time.Since(claimStart)
	at, err := p.waitScreen(c.claimTimeout, func(s string) bool { return t.claimsShown(s, claims(c)+1) })
	if err != nil {
		return res, fmt.Errorf("the claim: %w", err)
	}
	res.claimWall = at.Sub(claimStart)
	res.claimCPU = cpu(p.pid) - cpu1
	return res, nil
}

// ---------------------------------------------------------------------------
// The report.

func median(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func report(w io.Writer, c config, results map[string][]run) bool {
	figure := func(tool string, f func(run) float64) (float64, string) {
		var vs []float64
		var each []string
		for _, r := range results[tool] {
			vs = append(vs, f(r))
			each = append(each, strconv.FormatFloat(f(r), 'f', 0, 64))
		}
		return median(vs), strings.Join(each, " ")
	}
	rows := []struct {
		what, unit string
		f          func(run) float64
		maxRatio   float64 // 0: no ratio target
		maxOurs    float64 // 0: no bound on ctpool-tui's figure
	}{
		{"first complete screen", "ms", func(r run) float64 { return ms(r.first) }, 0.3, 0},
		{fmt.Sprintf("RSS after %v idle", c.idle), "MiB", func(r run) float64 { return r.rssMiB }, 0.35, 0},
		{fmt.Sprintf("CPU over %v idle", c.idle), "ms", func(r run) float64 { return ms(r.idleCPU) }, 0.25, 0},
		{"claim on screen, after kubectl returned", "ms", func(r run) float64 { return ms(r.claimWall - r.kubectl) }, 0, 1000},
		{"claim on screen, from kubectl's start", "ms", func(r run) float64 { return ms(r.claimWall) }, 0, 0},
		{"CPU to show the claim", "ms", func(r run) float64 { return ms(r.claimCPU) }, 0, 0},
		{"kubectl create of the claim", "ms", func(r run) float64 { return ms(r.kubectl) }, 0, 0},
	}
	fmt.Fprintf(w, "\nctpool-tui vs k9s: one pool of %d members (%d objects) in %s, %dx%d, %d rounds each (medians; each run in brackets)\n",
		c.members, 1+2*c.members+claims(c), c.namespace, c.cols, c.rows, c.rounds)
	fmt.Fprintf(w, "  %-44s %-24s %-24s %-8s %-14s %s\n", "", "ctpool-tui", "k9s", "ratio", "target", "")
	ok := true
	for _, row := range rows {
		ours, oursEach := figure("ctpool-tui", row.f)
		theirs, theirsEach := figure("k9s", row.f)
		ratio := "-"
		if theirs > 0 {
			ratio = fmt.Sprintf("%.2fx", ours/theirs)
		}
		target, verdict := "", ""
		switch {
		case row.maxRatio > 0:
			target = fmt.Sprintf("<= %.2fx", row.maxRatio)
			verdict = "PASS"
			if theirs <= 0 || ours/theirs > row.maxRatio {
				verdict, ok = "FAIL", false
			}
		case row.maxOurs > 0:
			target = fmt.Sprintf("<= %.0f %s", row.maxOurs, row.unit)
			verdict = "PASS"
			for _, r := range results["ctpool-tui"] {
				if row.f(r) > row.maxOurs {
					verdict, ok = "FAIL", false
				}
			}
		default:
			verdict = "info"
		}
		fmt.Fprintf(w, "  %-44s %-24s %-24s %-8s %-14s %s\n", row.what+" ("+row.unit+")",
			fmt.Sprintf("%.0f [%s]", ours, oursEach), fmt.Sprintf("%.0f [%s]", theirs, theirsEach), ratio, target, verdict)
	}
	var k9sSwitch []float64
	for _, r := range results["k9s"] {
		k9sSwitch = append(k9sSwitch, ms(r.claimsBeforeScreen))
	}
	fmt.Fprintf(w, "  (k9s is switched to its leases view before the claim; it showed the %d claims %.0f ms after the switch, median)\n",
		claims(c), median(k9sSwitch))
	return ok
}
