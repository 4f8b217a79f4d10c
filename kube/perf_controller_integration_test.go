//go:build integration && perf

package kube_test

// The in-cluster reconciler at scale (issue 18, item 6): `ctpool-tui
// reconcile --all --watch` (and -A) as the Deployment runs it, a binary in a
// process of its own, over many pools of 10 members. Its requests go through
// a counting proxy; its memory and CPU are read from /proc.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// The sizes of the controller runs. The full size is the (1,000
// pools of 10 members, a minute of rest, 100 deletions); the environment
// may shrink it for a quick run (CI, a busy machine).
const (
	controllerPoolSize = 10
	// controllerNamespaces is the number of namespaces of the -A run.
	controllerNamespaces = 10
)

// controllerScale is the size of one controller run.
type controllerScale struct {
	pools     int           // CTPOOL_PERF_CONTROLLER_POOLS (1000)
	idle      time.Duration // CTPOOL_PERF_CONTROLLER_IDLE (1m): the window at rest
	deletions int           // CTPOOL_PERF_CONTROLLER_DELETIONS (100)
}

func controllerScaleFromEnv(t testing.TB) controllerScale {
	t.Helper()
	s := controllerScale{pools: 1000, idle: time.Minute, deletions: 100}
	if v := os.Getenv("CTPOOL_PERF_CONTROLLER_POOLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < controllerNamespaces || n%controllerNamespaces != 0 {
			t.Fatalf("CTPOOL_PERF_CONTROLLER_POOLS=%q: want a multiple of %d", v, controllerNamespaces)
		}
		s.pools = n
	}
	if v := os.Getenv("CTPOOL_PERF_CONTROLLER_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("CTPOOL_PERF_CONTROLLER_IDLE=%q: want a positive duration", v)
		}
		s.idle = d
	}
	if v := os.Getenv("CTPOOL_PERF_CONTROLLER_DELETIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CTPOOL_PERF_CONTROLLER_DELETIONS=%q: want at least 1", v)
		}
		s.deletions = n
	}
	return s
}

// countingProxy forwards plain HTTP to the API server with the plane's
// credentials and counts the requests by "VERB resource", a watch as
// "WATCH resource". The reconciler under test talks to it alone.
type countingProxy struct {
	URL    string
	mu     sync.Mutex
	byKind map[string]int
}

func startCountingProxy(t testing.TB, cfg *rest.Config) *countingProxy {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(rest.CopyConfig(cfg)) // TLS and the bearer token of the plane's admin
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{byKind: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = tr
	rp.FlushInterval = -1 // watches stream
	// Its errors are the watches the reconciler ends when it stops.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb := r.Method
		if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
			verb = "WATCH"
		}
		res := resourceOf(r.URL.Path)
		if strings.HasSuffix(r.URL.Path, "/leases/"+controller.LeaseName) {
			res = electionLease
		}
		p.mu.Lock()
		p.byKind[verb+" "+res]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	p.URL = "http://" + l.Addr().String()
	return p
}

// counts returns the counts so far.
func (p *countingProxy) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.byKind))
	for k, v := range p.byKind {
		out[k] = v
	}
	return out
}

// electionLease is how countingProxy names the leader election's Lease.
const electionLease = "leases(election)"

// restRequests are the requests of after not in before, by kind: all of
// them but the watches, and those a reconcile makes (neither the /livez
// probe nor the leader election's Lease).
func restRequests(before, after map[string]int) (all, reconcile int, kinds map[string]int) {
	kinds = map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			kinds[k] = d
			if strings.HasPrefix(k, "WATCH ") {
				continue
			}
			all += d
			if k != "GET /livez" && !strings.HasSuffix(k, " "+electionLease) {
				reconcile += d
			}
		}
	}
	return all, reconcile, kinds
}

// proxyKubeconfig writes a kubeconfig that sends everything through p.
func proxyKubeconfig(t testing.TB, p *countingProxy) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxy.kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster:
    server: %s
users:
- name: proxy
  user: {}
contexts:
- name: proxy
  context: {cluster: proxy, user: proxy}
current-context: proxy
`, p.URL)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// bigNode is a kwok node with room for every member Pod of a run (the
// plane's two ordinary nodes have 110 Pods each).
const bigNode = "ctpool-perf-controller-node"

// addBigNode creates bigNode (kwok makes it Ready) and removes it at the end.
func addBigNode(t testing.TB, env *kubetest.Env, pods int) {
	t.Helper()
	ctx := context.Background()
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods: *resource.NewQuantity(int64(pods), resource.DecimalSI), corev1.ResourceEphemeralStorage: resource.MustParse("10Ti"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        bigNode,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": bigNode,
				"kubernetes.io/os": "linux", "type": "kwok"},
		},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res,
			NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"}},
	}
	_ = env.Client.CoreV1().Nodes().Delete(ctx, bigNode, metav1.DeleteOptions{}) // one left by an interrupted run
	env.WaitFor(t, time.Minute, "no node "+bigNode, func() (bool, error) {
		_, err := env.Client.CoreV1().Nodes().Get(ctx, bigNode, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if _, err := env.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", bigNode, err)
	}
	t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), bigNode, metav1.DeleteOptions{}) })
	env.WaitFor(t, time.Minute, "node "+bigNode+" Ready", func() (bool, error) {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, bigNode, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// reconcilerProcess is `ctpool-tui reconcile ... --watch` running.
type reconcilerProcess struct {
	cmd      *exec.Cmd
	log      string // its stderr
	metrics  string // URL of its /metrics
	exited   chan error
	stopOnce sync.Once
}

var metricsAddr = regexp.MustCompile(`serving /metrics.* addr=(\S+)`)

// startReconciler runs the binary with the Deployment's flags (--watch
// --leader-elect --metrics-addr), scope and GOMEMLIMIT, through the
// counting proxy.
func startReconciler(t testing.TB, bin, kubeconfig, namespace string, allNamespaces bool) *reconcilerProcess {
	t.Helper()
	args := []string{"reconcile", "--all", "--watch", "--leader-elect", "--metrics-addr", "127.0.0.1:0",
		"--kubeconfig", kubeconfig, "--namespace", namespace}
	if allNamespaces {
		args = append(args, "--all-namespaces", "--leader-elect-namespace", namespace)
	}
	logPath := filepath.Join(t.TempDir(), "reconciler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "GOMEMLIMIT="+controller.MemoryLimitSoft)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", strings.Join(args, " "), err)
	}
	_ = logFile.Close()
	p := &reconcilerProcess{cmd: cmd, log: logPath, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })
	deadline := time.After(time.Minute)
	for p.metrics == "" {
		select {
		case err := <-p.exited:
			p.exited <- err
			t.Fatalf("the reconciler exited: %v\n%s", err, p.tail())
		case <-deadline:
			t.Fatalf("the reconciler did not serve /metrics within a minute\n%s", p.tail())
		case <-time.After(50 * time.Millisecond): // the log has no event to wait on
		}
		if m := metricsAddr.FindStringSubmatch(p.tail()); m != nil {
			p.metrics = "http://" + m[1] + "/metrics"
		}
	}
	return p
}

// stop ends the reconciler with SIGTERM, as Kubernetes does (once).
func (p *reconcilerProcess) stop(t testing.TB) {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
			t.Errorf("the reconciler did not stop within 30s of SIGTERM\n%s", p.tail())
		}
	})
}

// tail is the end of the reconciler's log.
func (p *reconcilerProcess) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// memory reads VmRSS, VmHWM (the peak) and RssAnon (the RSS but the
// mapped files: heap and stacks) of the process, in bytes.
func (p *reconcilerProcess) memory(t testing.TB) (rss, peak, anon int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		case "RssAnon:":
			anon = kb << 10
		}
	}
	return rss, peak, anon
}

// cpuTime is the CPU time (user and system) the process used so far.
func (p *reconcilerProcess) cpuTime(t testing.TB) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64) // field 14 of proc(5)
	stime, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return time.Duration(utime+stime) * time.Second / time.Duration(clockTicks(t))
}

var (
	clkTckOnce sync.Once
	clkTck     int64
)

// clockTicks is the kernel's USER_HZ (getconf CLK_TCK).
func clockTicks(t testing.TB) int64 {
	clkTckOnce.Do(func() {
		out, err := exec.Command("getconf", "CLK_TCK").Output()
		if err == nil {
			clkTck, _ = strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		}
	})
	if clkTck <= 0 {
		t.Fatal("getconf CLK_TCK gave no clock rate")
	}
	return clkTck
}

// scrape sums the reconciler's metric series by name (labels dropped),
// keeping only the series whose labels contain every filter.
func (p *reconcilerProcess) scrape(name string, filters ...string) (float64, error) {
	resp, err := http.Get(p.metrics)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		keep := true
		for _, f := range filters {
			keep = keep && strings.Contains(line, f)
		}
		if !keep {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, sc.Err()
}

// poolRef names a pool of a run.
type poolRef struct{ ns, pool string }

// controllerFigures are the figures of one controller run.
type controllerFigures struct {
	pools, members  int
	readyMembers    int           // the members of the pools with provisioned PVCs
	fill            time.Duration // from the reconciler's start to every member Ready and the queue empty
	rssRest, rssMax int64
	anonRest        int64 // RssAnon at rest
	heapRest        int64 // the Go heap in use at rest (go_memstats_heap_inuse_bytes)
	idle            time.Duration
	cpuIdle         time.Duration // CPU time used over idle
	restAll         int           // requests over idle, watches left out
	restReconcile   int           // ... nor the /livez probe and the election Lease
	restKinds       map[string]int
	ready           []time.Duration // Pod deleted -> a new Pod of the member Ready
}

func (f controllerFigures) perMinute(n int) float64 { return float64(n) / f.idle.Minutes() }

func (f controllerFigures) millicores() float64 {
	return float64(f.cpuIdle) / float64(f.idle) * 1000
}

// unprovisioned is a StorageClass nothing provisions: the PVCs of its
// members stay Pending, and so do their Pods (Unschedulable).
const unprovisioned = "ctpool-perf-none"

// controllerAtScale defines pools of 10 members spread over namespaces,
// starts the reconciler on them (-A when there are several namespaces),
// waits until it has every member as it should be, then measures it at rest
// over scale.idle and times scale.deletions Pod deletions until the member's
// new Pod is Ready, one after the other.
//
// The plane's kwok binds about 1.5 PVCs a second (its stage controller
// writes a volume and three patches per claim, one at a time), so 10,000
// members would take two hours to be Ready. Only the first pools, enough
// for the deletions, use the plane's default StorageClass; the others use
// one nothing provisions, so that their members stay Pending,
// Unschedulable. The reconciler holds and watches the same 10,000 Pods,
// PVCs and Leases-to-be either way; at rest, no member changes.
func controllerAtScale(t testing.TB, envs []*kubetest.Env, scale controllerScale) controllerFigures {
	t.Helper()
	ctx := context.Background()
	env := envs[0]
	f := controllerFigures{pools: scale.pools, members: scale.pools * controllerPoolSize}
	addBigNode(t, env, f.members+100)
	// The members go before the namespaces and the node (the test's context
	// still lives), so that the next run starts on a quiet plane; the
	// reconciler stops first.
	var rp *reconcilerProcess
	defer func() {
		if rp != nil {
			rp.stop(t)
		}
		for _, e := range envs {
			clearNamespaceWithin(t, e, 15*time.Minute)
		}
	}()

	writer := newPerfClientQPS(t, env, unlimitedQPS, unlimitedBurst)
	readyPools := min((scale.deletions+controllerPoolSize-1)/controllerPoolSize, scale.pools)
	f.readyMembers = readyPools * controllerPoolSize
	perNS := scale.pools / len(envs)
	var refs []poolRef
	for i := range perNS {
		for _, e := range envs { // the ready pools spread over the namespaces
			refs = append(refs, poolRef{e.Namespace, fmt.Sprintf("p%04d", i)})
		}
	}
	parallel(32, len(refs), func(i int) {
		r := refs[i]
		spec := perfSpec(controllerPoolSize)
		if i >= readyPools {
			spec.StorageClass = unprovisioned
		}
		if _, err := writer.client.CoreV1().ConfigMaps(r.ns).Create(ctx, engine.BuildConfigMap(r.ns, r.pool, spec), metav1.CreateOptions{}); err != nil {
			t.Errorf("define %s/%s: %v", r.ns, r.pool, err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	// Built as the Dockerfile builds it: its text pages count in the RSS.
	bin := filepath.Join(t.TempDir(), "ctpool-tui")
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", bin, "github.com/ctpool-tui/ctpool-tui/cmd/ctpool-tui")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build ctpool-tui: %v\n%s", err, out)
	}
	proxy := startCountingProxy(t, env.Config)
	start := time.Now()
	rp = startReconciler(t, bin, proxyKubeconfig(t, proxy), env.Namespace, len(envs) > 1)
	// Converged: the members of the ready pools Ready and the others
	// Unschedulable as the reconciler last saw them, and no pool waiting in
	// its queue. The deadline is a guard, not a target.
	env.WaitFor(t, 45*time.Minute, fmt.Sprintf("%d members Ready and %d Unschedulable", f.readyMembers, f.members-f.readyMembers), func() (bool, error) {
		ready, err := rp.scrape("ctpool_pool_members", `state="ready"`)
		if err != nil {
			return false, nil // between scrapes
		}
		unsched, err := rp.scrape("ctpool_pool_members", `state="unschedulable"`)
		if err != nil {
			return false, nil
		}
		depth, err := rp.scrape("ctpool_workqueue_depth")
		return err == nil && int(ready) == f.readyMembers && int(ready+unsched) == f.members && depth == 0, nil
	})
	f.fill = time.Since(start)
	t.Logf("%d pools of %d members in %d namespaces (%d members Ready, the others Unschedulable) %v after the reconciler started",
		scale.pools, controllerPoolSize, len(envs), f.readyMembers, f.fill.Round(time.Second))

	// At rest: the events of the last members' readiness have been
	// reconciled (the queue is empty); what the reconciler does from now on
	// is its idle cost.
	before := proxy.counts()
	cpu0 := rp.cpuTime(t)
	idleStart := time.Now()
	idle := time.NewTimer(scale.idle)
	<-idle.C // a measurement window, not a wait for a condition
	f.idle = time.Since(idleStart)
	f.cpuIdle = rp.cpuTime(t) - cpu0
	f.restAll, f.restReconcile, f.restKinds = restRequests(before, proxy.counts())
	f.rssRest, f.rssMax, f.anonRest = rp.memory(t)
	if heap, err := rp.scrape("go_memstats_heap_inuse_bytes"); err == nil {
		f.heapRest = int64(heap)
	} else {
		t.Errorf("scrape the reconciler's heap: %v", err)
	}

	f.ready = podDeletionsToReady(t, writer, refs[:readyPools], scale.deletions)
	return f
}

// podDeletionsToReady deletes n member Pods of refs one after the other
// (member 1 of every pool, then member 2, ...), each once the last is back, and times
// each from the delete to a new Pod of the member Ready, as a watch of every
// member Pod of the plane tells.
func podDeletionsToReady(t testing.TB, pc *perfClient, refs []poolRef, n int) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := pc.client.CoreV1().Pods(metav1.NamespaceAll)
	sel := metav1.ListOptions{LabelSelector: engine.LabelPool}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: engine.LabelPool, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel.LabelSelector
			return pods.Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Stop()
	type waiting struct {
		key    string
		oldUID types.UID
		ready  chan time.Time
	}
	var (
		mu  sync.Mutex
		cur *waiting
	)
	go func() {
		for ev := range rw.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) || !pooltest.PodReady(p) {
				continue
			}
			at := time.Now()
			mu.Lock()
			if w := cur; w != nil && w.key == p.Namespace+"/"+p.Name && p.UID != w.oldUID {
				w.ready <- at
				cur = nil
			}
			mu.Unlock()
		}
	}()
	zero := int64(0)
	var out []time.Duration
	for i := range n {
		r := refs[i%len(refs)]
		name := engine.MemberName(r.pool, i/len(refs)%controllerPoolSize+1)
		old, err := pc.client.CoreV1().Pods(r.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("deletion %d: read Pod %s/%s: %v", i, r.ns, name, err)
		}
		w := &waiting{key: r.ns + "/" + name, oldUID: old.UID, ready: make(chan time.Time, 1)}
		mu.Lock()
		cur = w
		mu.Unlock()
		start := time.Now()
		err = pc.client.CoreV1().Pods(r.ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
			Preconditions: &metav1.Preconditions{UID: &old.UID}})
		if err != nil {
			t.Fatalf("deletion %d: delete Pod %s/%s: %v", i, r.ns, name, err)
		}
		select {
		case at := <-w.ready:
			out = append(out, at.Sub(start))
		case <-time.After(2 * time.Minute): // a guard against a hang, not a measurement
			t.Fatalf("deletion %d: member %s/%s not Ready again within 2 minutes", i, r.ns, name)
		}
	}
	return out
}

func logController(t testing.TB, f controllerFigures) {
	t.Logf("reconciler over %d pools (%d members, %d Ready): filled in %v; at rest over %v: RSS %.1f MiB (peak %.1f MiB; anonymous %.1f MiB; Go heap in use %.1f MiB), CPU %.1f millicores, %.1f requests/min (%.1f from reconciles): %s",
		f.pools, f.members, f.readyMembers, f.fill.Round(time.Second), f.idle.Round(time.Second), mib(f.rssRest), mib(f.rssMax), mib(f.anonRest), mib(f.heapRest), f.millicores(),
		f.perMinute(f.restAll), f.perMinute(f.restReconcile), formatKinds(f.restKinds))
	t.Logf("Pod deleted -> member Ready again, over %d deletions: p50 %v p95 %v", len(f.ready),
		percentile(f.ready, 50).Round(time.Millisecond), percentile(f.ready, 95).Round(time.Millisecond))
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// controllerEnvs makes the namespaces of a run: one, or controllerNamespaces for -A.
func controllerEnvs(t testing.TB, allNamespaces bool) []*kubetest.Env {
	t.Helper()
	n := 1
	if allNamespaces {
		n = controllerNamespaces
	}
	envs := make([]*kubetest.Env, n)
	for i := range envs {
		envs[i] = kubetest.Require(t)
	}
	return envs
}

// TestIntegrationPerfControllerAtRest: a small run (20 pools, 10 s at rest,
// 10 deletions) that checks what is not a timing: the reconciler converges,
// and at rest no reconcile makes a request (the /livez probe and the
// election Lease aside).
func TestIntegrationPerfControllerAtRest(t *testing.T) {
	envs := controllerEnvs(t, false)
	f := controllerAtScale(t, envs, controllerScale{pools: 20, idle: 10 * time.Second, deletions: 10})
	logController(t, f)
	if f.restReconcile > 0 {
		t.Errorf("at rest, the reconciler made %d requests besides its probe and election Lease: %s", f.restReconcile, formatKinds(f.restKinds))
	}
}

// BenchmarkIntegrationPerfController: item 6 of issue 18 at the size of
// controllerScaleFromEnv, in one namespace and over controllerNamespaces
// with -A.
func BenchmarkIntegrationPerfController(b *testing.B) {
	scale := controllerScaleFromEnv(b)
	for _, tc := range []struct {
		name string
		all  bool
	}{{"namespace", false}, {"all-namespaces", true}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				f := controllerAtScale(b, controllerEnvs(b, tc.all), scale)
				logController(b, f)
				b.ReportMetric(float64(f.members), "members")
				b.ReportMetric(f.fill.Seconds(), "s-fill")
				b.ReportMetric(mib(f.rssRest), "MiB-rss-rest")
				b.ReportMetric(mib(f.rssMax), "MiB-rss-peak")
				b.ReportMetric(mib(f.heapRest), "MiB-heap-rest")
				b.ReportMetric(mib(f.anonRest), "MiB-rss-anon-rest")
				b.ReportMetric(f.millicores(), "mcpu-idle")
				b.ReportMetric(f.perMinute(f.restAll), "req/min-rest")
				b.ReportMetric(f.perMinute(f.restReconcile), "req/min-reconcile")
				b.ReportMetric(ms(percentile(f.ready, 50)), "ready-p50-ms")
				b.ReportMetric(ms(percentile(f.ready, 95)), "ready-p95-ms")
			}
		})
	}
}
