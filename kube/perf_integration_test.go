//go:build integration && perf

// Performance runs fill the shared plane with hundreds of Pods, so they carry
// the perf tag and run alone (make bench-integration), never beside the
// other integration tests.
package kube_test

// Performance measurements of issue 7 on the real control plane. Each
// measurement is one function used twice: by a TestIntegrationPerf* test,
// which logs the exact figures and asserts only generous margins (the plane
// shares two cores with whatever else runs), and by a
// BenchmarkIntegrationPerf* benchmark, which reports the same figures in
// `go test -bench` form for hack/benchreport (`make bench-integration`).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// requestCounter counts the API requests that leave a client (by "VERB
// resource"), the most that were in flight at once, and the mean number in
// flight over time.
type requestCounter struct {
	mu       sync.Mutex
	byKind   map[string]int
	total    int
	inFlight int
	peak     int
	// area is the integral of inFlight over time since since, up to last.
	area        float64 // request-seconds
	since, last time.Time
}

func newRequestCounter() *requestCounter { return &requestCounter{byKind: map[string]int{}} }

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		key := req.Method + " " + resourceOf(req.URL.Path)
		c.mu.Lock()
		c.total++
		c.byKind[key]++
		c.advance(time.Now())
		c.inFlight++
		c.peak = max(c.peak, c.inFlight)
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.advance(time.Now())
			c.inFlight--
			c.mu.Unlock()
		}()
		return rt.RoundTrip(req)
	})
}

// advance adds the requests in flight since the last change to the area.
func (c *requestCounter) advance(now time.Time) {
	if !c.last.IsZero() {
		c.area += float64(c.inFlight) * now.Sub(c.last).Seconds()
	}
	c.last = now
}

// reset zeroes the counts and returns what they were.
func (c *requestCounter) reset() (total, peak int, byKind map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total, peak, byKind = c.total, c.peak, c.byKind
	c.total, c.peak, c.byKind = 0, c.inFlight, map[string]int{}
	now := time.Now()
	c.advance(now)
	c.area, c.since = 0, now
	return total, peak, byKind
}

// meanInFlight is the mean number of requests in flight since the last reset.
func (c *requestCounter) meanInFlight() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.advance(now)
	if c.since.IsZero() || !now.After(c.since) {
		return 0
	}
	return c.area / now.Sub(c.since).Seconds()
}

func formatKinds(byKind map[string]int) string {
	keys := make([]string, 0, len(byKind))
	for k := range byKind {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, byKind[k])
	}
	return strings.Join(parts, " ")
}

// resourceOf turns /api/v1/namespaces/ns/pods/name into "pods" (and a
// subresource into "pods/status").
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" {
			rest := parts[i+2:]
			switch len(rest) {
			case 0:
				return "namespaces"
			case 1, 2:
				return rest[0]
			default:
				return rest[0] + "/" + rest[2]
			}
		}
	}
	return path
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingLimiter is client-go's token bucket (rate.Limiter with qps and
// burst, as flowcontrol.NewTokenBucketRateLimiter builds it) that also
// counts the requests it made wait and for how long.
type countingLimiter struct {
	lim       *rate.Limiter
	qps       float32
	throttled atomic.Int64
	waited    atomic.Int64 // nanoseconds
}

func newCountingLimiter(qps float32, burst int) *countingLimiter {
	return &countingLimiter{lim: rate.NewLimiter(rate.Limit(qps), burst), qps: qps}
}

func (l *countingLimiter) TryAccept() bool { return l.lim.Allow() }
func (l *countingLimiter) Stop()           {}
func (l *countingLimiter) QPS() float32    { return l.qps }
func (l *countingLimiter) Accept()         { _ = l.Wait(context.Background()) }

func (l *countingLimiter) Wait(ctx context.Context) error {
	r := l.lim.Reserve()
	d := r.Delay()
	if d <= 0 {
		return nil
	}
	l.throttled.Add(1)
	l.waited.Add(int64(d))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	}
}

func (l *countingLimiter) reset() (throttled int64, waited time.Duration) {
	return l.throttled.Swap(0), time.Duration(l.waited.Swap(0))
}

// perfClient is a client configured as ctpool-tui configures its own
// (kube.Options.RESTConfig: protobuf, the default QPS and burst), with a
// request counter and a counting rate limiter.
type perfClient struct {
	client  kubernetes.Interface
	config  *rest.Config
	reqs    *requestCounter
	limiter *countingLimiter
}

func newPerfClient(t testing.TB, env *kubetest.Env) *perfClient {
	return newPerfClientQPS(t, env, kube.DefaultQPS, kube.DefaultBurst)
}

func newPerfClientQPS(t testing.TB, env *kubetest.Env, qps float32, burst int) *perfClient {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst = qps, burst
	pc := &perfClient{reqs: newRequestCounter(), limiter: newCountingLimiter(cfg.QPS, cfg.Burst)}
	cfg.RateLimiter = pc.limiter
	cfg.WrapTransport = pc.reqs.wrap
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pc.client, pc.config = client, cfg
	return pc
}

// perfSpec is a pool spec whose members ask for little, so that many fit on
// the plane's two ordinary nodes (110 Pods each); the rest stay Pending.
func perfSpec(size int) engine.Spec {
	s := engine.Spec{Image: pooltest.Image, CPU: "1m", Memory: "1Mi", Disk: "1Gi", Size: size}
	s.Default()
	return s
}

// clearNamespace force-deletes every Pod, PVC, Lease and pool ConfigMap of
// the namespace and waits until they and the PersistentVolumes bound to them
// are gone, so that the next measurement starts on a quiet plane. Once the
// Pods are gone it takes the PVCs' protection finalizer off itself, rather
// than wait for the controller to check each PVC in turn.
func clearNamespace(t testing.TB, env *kubetest.Env) {
	t.Helper()
	clearNamespaceWithin(t, env, 3*time.Minute)
}

// clearNamespaceWithin is clearNamespace with the deadline of each of its
// two waits (thousands of members take longer than hundreds).
func clearNamespaceWithin(t testing.TB, env *kubetest.Env, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	c, ns := env.Client, env.Namespace
	start := time.Now()
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	// A collection delete of hundreds of objects on a busy plane can outlast
	// the request's deadline; it is asked again until nothing is left.
	env.WaitFor(t, timeout, "no Pods in "+ns, func() (bool, error) {
		for _, err := range []error{
			c.CoreV1().Pods(ns).DeleteCollection(ctx, del, metav1.ListOptions{}),
			c.CoreV1().PersistentVolumeClaims(ns).DeleteCollection(ctx, del, metav1.ListOptions{}),
			c.CoordinationV1().Leases(ns).DeleteCollection(ctx, del, metav1.ListOptions{}),
			c.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, del, metav1.ListOptions{LabelSelector: engine.LabelPool}),
		} {
			if err != nil {
				t.Logf("clear namespace %s: %v (asking again)", ns, err)
				return false, nil
			}
		}
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
	// The Pods are gone: take the protection finalizers off the PVCs and
	// their volumes, and delete the volumes, rather than wait for the
	// controllers to get through them one at a time.
	unprotect := []byte(`{"metadata":{"finalizers":null}}`)
	env.WaitFor(t, timeout, "no PVCs or their volumes in "+ns, func() (bool, error) {
		pvcs, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pvs, err := c.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var bound []string
		for _, pv := range pvs.Items {
			if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns {
				bound = append(bound, pv.Name)
			}
		}
		if len(pvcs.Items)+len(bound) == 0 {
			return true, nil
		}
		parallel(16, len(pvcs.Items), func(i int) {
			_, _ = c.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, pvcs.Items[i].Name, types.MergePatchType, unprotect, metav1.PatchOptions{})
		})
		parallel(16, len(bound), func(i int) {
			_ = c.CoreV1().PersistentVolumes().Delete(ctx, bound[i], del)
			_, _ = c.CoreV1().PersistentVolumes().Patch(ctx, bound[i], types.MergePatchType, unprotect, metav1.PatchOptions{})
		})
		return false, nil
	})
	t.Logf("cleared namespace %s in %v", ns, time.Since(start).Round(time.Millisecond))
}

// parallel runs fn(0..n-1) on workers goroutines.
func parallel(workers, n int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// ---------------------------------------------------------------------------
// Target 5: reconcile throughput.

// throughputRun is one timed fill of a pool.
type throughputRun struct {
	elapsed   time.Duration
	requests  int
	peak      int
	mean      float64 // requests in flight, over time
	throttled int64
	waited    time.Duration
	kinds     map[string]int
}

func (r throughputRun) String() string {
	return fmt.Sprintf("%v, %d requests (peak %d in flight, mean %.1f), %d throttled for %v",
		r.elapsed.Round(time.Millisecond), r.requests, r.peak, r.mean, r.throttled, r.waited.Round(time.Millisecond))
}

// bareCreate creates the PVC and the Pod of members 1..n of a pool, the
// objects the engine would build, with a plain client-go loop: workers take
// the next object from a queue and create it.
func bareCreate(t testing.TB, pc *perfClient, ns, pool string, n, workers int) throughputRun {
	t.Helper()
	spec := perfSpec(n)
	type obj struct {
		pvc *corev1.PersistentVolumeClaim
		pod *corev1.Pod
	}
	queue := make(chan obj, 2*n)
	for i := 1; i <= n; i++ {
		queue <- obj{pvc: engine.BuildPVC(ns, pool, i, spec)}
		queue <- obj{pod: engine.BuildPod(ns, pool, i, spec)}
	}
	close(queue)
	pc.reqs.reset()
	pc.limiter.reset()
	ctx := context.Background()
	var (
		mu       sync.Mutex
		failures int
		firstErr error
	)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for o := range queue {
				var err error
				if o.pvc != nil {
					_, err = pc.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, o.pvc, metav1.CreateOptions{})
				} else {
					_, err = pc.client.CoreV1().Pods(ns).Create(ctx, o.pod, metav1.CreateOptions{})
				}
				if err != nil {
					mu.Lock()
					if failures++; firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	run := throughputRun{elapsed: time.Since(start), mean: pc.reqs.meanInFlight()}
	run.requests, run.peak, run.kinds = pc.reqs.reset()
	run.throttled, run.waited = pc.limiter.reset()
	if failures > 0 {
		t.Fatalf("bare loop: %d creates failed, first: %v", failures, firstErr)
	}
	return run
}

// engineScale defines an empty pool and times the engine's Resize to n.
func engineScale(t testing.TB, pc *perfClient, ns, pool string, n, concurrency int) throughputRun {
	t.Helper()
	ctx := context.Background()
	eng := &engine.Engine{Cluster: kube.NewCluster(pc.client, ns), Namespace: ns, Now: time.Now, Concurrency: concurrency}
	if _, err := eng.Apply(ctx, pool, perfSpec(0)); err != nil {
		t.Fatalf("apply %s with size 0: %v", pool, err)
	}
	pc.reqs.reset()
	pc.limiter.reset()
	start := time.Now()
	res, err := eng.Resize(ctx, pool, n)
	run := throughputRun{elapsed: time.Since(start), mean: pc.reqs.meanInFlight()}
	run.requests, run.peak, run.kinds = pc.reqs.reset()
	run.throttled, run.waited = pc.limiter.reset()
	if err != nil {
		t.Fatalf("resize %s to %d: %v", pool, n, err)
	}
	if res.Done() != n {
		t.Fatalf("resize %s to %d: %d members done", pool, n, res.Done())
	}
	return run
}

// bareFill sends, for members 1..n of a pool, the 4 writes the engine sends
// to fill it, in the engine's order and with the objects it builds: the
// member's reconciler Lease created, its PVC, its Pod, the Lease deleted
// (with the resourceVersion the create returned, as the engine does). A
// plain client-go loop: workers take the next member and send its 4 writes
// one after the other.
func bareFill(t testing.TB, pc *perfClient, ns, pool string, n, workers int) throughputRun {
	t.Helper()
	spec := perfSpec(n)
	queue := make(chan int, n)
	for i := 1; i <= n; i++ {
		queue <- i
	}
	close(queue)
	pc.reqs.reset()
	pc.limiter.reset()
	ctx := context.Background()
	var (
		mu       sync.Mutex
		failures int
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		if failures++; firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range queue {
				name := engine.MemberName(pool, i)
				l, err := pc.client.CoordinationV1().Leases(ns).Create(ctx, engine.ReconcilerLease(ns, pool, name, time.Now()), metav1.CreateOptions{})
				if err != nil {
					fail(err)
					continue
				}
				if _, err := pc.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, engine.BuildPVC(ns, pool, i, spec), metav1.CreateOptions{}); err != nil {
					fail(err)
				} else if _, err := pc.client.CoreV1().Pods(ns).Create(ctx, engine.BuildPod(ns, pool, i, spec), metav1.CreateOptions{}); err != nil {
					fail(err)
				}
				rv := l.ResourceVersion
				if err := pc.client.CoordinationV1().Leases(ns).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}}); err != nil {
					fail(err)
				}
			}
		})
	}
	wg.Wait()
	run := throughputRun{elapsed: time.Since(start), mean: pc.reqs.meanInFlight()}
	run.requests, run.peak, run.kinds = pc.reqs.reset()
	run.throttled, run.waited = pc.limiter.reset()
	if failures > 0 {
		t.Fatalf("bare 4-write loop: %d writes failed, first: %v", failures, firstErr)
	}
	return run
}

// The kinds of fill that reconcileThroughput times.
const (
	fillEngine = "engine" // the engine's Resize from 0 to n: 4n writes and a few reads
	fillBare4  = "bare4"  // bareFill: the same 4n writes from a plain loop
	fillBare2  = "bare2"  // bareCreate: the PVCs and Pods alone, 2n writes
)

// throughputRuns are the timed fills of each kind.
type throughputRuns map[string][]throughputRun

// mean is the mean time of the fills of a kind.
func (r throughputRuns) mean(kind string) time.Duration {
	var sum time.Duration
	for _, run := range r[kind] {
		sum += run.elapsed
	}
	return sum / time.Duration(max(len(r[kind]), 1))
}

// meanInFlight is the mean of the fills' mean requests in flight.
func (r throughputRuns) meanInFlight(kind string) float64 {
	sum := 0.0
	for _, run := range r[kind] {
		sum += run.mean
	}
	return sum / float64(max(len(r[kind]), 1))
}

// ratio is the mean time of the engine's fills over the mean of kind's.
func (r throughputRuns) ratio(kind string) float64 {
	return float64(r.mean(fillEngine)) / float64(r.mean(kind))
}

// reconcileThroughput fills pools of n members, one fill of each kind of
// order at a time (fillEngine, fillBare4, fillBare2), on a cleared namespace
// each, with the same client settings and the same requests in flight, and
// returns the runs by kind.
//
// The engine's concurrency bounds the requests a reconcile step has in
// flight: that many workers, each sending one request at a time. The bare
// loops run that many workers too, so that neither side sends its writes
// through a narrower pipe.
func reconcileThroughput(t testing.TB, env *kubetest.Env, n, concurrency int, qps float32, burst int, order ...string) throughputRuns {
	t.Helper()
	pc := newPerfClientQPS(t, env, qps, burst)
	runs := throughputRuns{}
	for i, kind := range order {
		pool := fmt.Sprintf("tp%d", i)
		var r throughputRun
		switch kind {
		case fillEngine:
			r = engineScale(t, pc, env.Namespace, pool, n, concurrency)
		case fillBare4:
			r = bareFill(t, pc, env.Namespace, pool, n, concurrency)
		case fillBare2:
			r = bareCreate(t, pc, env.Namespace, pool, n, concurrency)
		default:
			t.Fatalf("unknown kind of fill %q", kind)
		}
		runs[kind] = append(runs[kind], r)
		t.Logf("%-6s %d members: %v; %s", kind, n, r, formatKinds(r.kinds))
		clearNamespace(t, env)
	}
	return runs
}

const throughputMembers = 500

// TestIntegrationPerfReconcileThroughput guards target 5: one fill of each
// kind at ctpool-tui's default QPS and burst, which must never make a
// request wait on client-go's token bucket. The engine's time over the bare
// loop of the same 2,000 writes is asserted with a generous margin (2x for a
// target of 1.15x); the ratio to the 1,000 creates of PVCs and Pods alone,
// the price of the contract's Lease per member, is logged.
func TestIntegrationPerfReconcileThroughput(t *testing.T) {
	env := kubetest.Require(t)
	c := engine.DefaultConcurrency
	runs := reconcileThroughput(t, env, throughputMembers, c, kube.DefaultQPS, kube.DefaultBurst, fillBare4, fillEngine, fillBare2)
	t.Logf("reconcile 0 -> %d members, concurrency %d (bare loops: %d workers), QPS %d burst %d: %.2fx a bare loop of the same %d writes (target <= 1.15x), %.2fx one of the %d PVC and Pod creates; peak in flight %d, %d, %d",
		throughputMembers, c, c, kube.DefaultQPS, kube.DefaultBurst, runs.ratio(fillBare4), 4*throughputMembers, runs.ratio(fillBare2), 2*throughputMembers,
		runs[fillEngine][0].peak, runs[fillBare4][0].peak, runs[fillBare2][0].peak)
	for kind, rs := range runs {
		if n := rs[0].throttled; n > 0 {
			t.Errorf("%s: at the default QPS %d and burst %d, %d requests waited on the client-side rate limiter", kind, kube.DefaultQPS, kube.DefaultBurst, n)
		}
	}
	if p := runs[fillEngine][0].peak; p > c {
		t.Errorf("the engine had %d requests in flight at once, bound %d", p, c)
	}
	if r := runs.ratio(fillBare4); r > 2 {
		t.Errorf("the engine took %.2fx the time of a bare loop of the same writes (margin 2x; target 1.15x)", r)
	}
}

// unlimitedQPS and unlimitedBurst leave client-go's token bucket always full.
const (
	unlimitedQPS   = 1e6
	unlimitedBurst = 1e6
)

// BenchmarkIntegrationPerfReconcile: target 5 at ctpool-tui's default QPS
// and burst. The fills alternate so that each kind's mean sits at the same
// point of the run (bare4, engine, bare2, bare2, engine, bare4), which a
// plane that slows down or speeds up as it goes moves least.
func BenchmarkIntegrationPerfReconcile(b *testing.B) {
	benchmarkReconcile(b, kube.DefaultQPS, kube.DefaultBurst)
}

// BenchmarkIntegrationPerfReconcileUnthrottled is the same without a
// client-side rate limit on either side: what the API server allows.
func BenchmarkIntegrationPerfReconcileUnthrottled(b *testing.B) {
	benchmarkReconcile(b, unlimitedQPS, unlimitedBurst)
}

func benchmarkReconcile(b *testing.B, qps float32, burst int) {
	env := kubetest.Require(b)
	for b.Loop() {
		runs := reconcileThroughput(b, env, throughputMembers, engine.DefaultConcurrency, qps, burst,
			fillBare4, fillEngine, fillBare2, fillBare2, fillEngine, fillBare4)
		var throttled int64
		peak := map[string]int{}
		for kind, rs := range runs {
			for _, r := range rs {
				throttled += r.throttled
				peak[kind] = max(peak[kind], r.peak)
			}
		}
		b.ReportMetric(runs.ratio(fillBare4), "engine/bare")
		b.ReportMetric(runs.ratio(fillBare2), "engine/bare2")
		b.ReportMetric(float64(throttled), "throttled")
		b.ReportMetric(float64(peak[fillEngine]), "peak-engine")
		b.ReportMetric(float64(peak[fillBare4]), "peak-bare")
		b.ReportMetric(float64(peak[fillBare2]), "peak-bare2")
		b.ReportMetric(runs.meanInFlight(fillEngine), "mean-inflight-engine")
		b.ReportMetric(runs.meanInFlight(fillBare4), "mean-inflight-bare")
		b.ReportMetric(runs.mean(fillEngine).Seconds(), "s-engine")
		b.ReportMetric(runs.mean(fillBare4).Seconds(), "s-bare")
		b.ReportMetric(runs.mean(fillBare2).Seconds(), "s-bare2")
	}
}

// ---------------------------------------------------------------------------
// Targets 6 and 7 on a pool of 1,000 members.

const largeMembers = 1000

// largePool applies a pool of 1,000 members with the engine and waits until
// at least 50 of them are free. On the plane's two ordinary nodes (110 Pods
// each) about 200 members run; the others stay Pending, Unschedulable.
func largePool(t testing.TB, env *kubetest.Env, pc *perfClient, pool string) {
	t.Helper()
	ctx := context.Background()
	eng := &engine.Engine{Cluster: kube.NewCluster(pc.client, env.Namespace), Namespace: env.Namespace, Now: time.Now}
	start := time.Now()
	if _, err := eng.Apply(ctx, pool, perfSpec(largeMembers)); err != nil {
		t.Fatalf("apply %s with %d members: %v", pool, largeMembers, err)
	}
	env.WaitFor(t, 3*time.Minute, "50 free members", func() (bool, error) {
		snap, err := eng.Cluster.Snapshot(ctx, pool)
		if err != nil {
			return false, err
		}
		v := engine.Observe(snap, time.Now())
		return v.Status.Free >= 50 && len(v.Members) == largeMembers, nil
	})
	t.Logf("pool %s of %d members applied, 50 free, in %v", pool, largeMembers, time.Since(start).Round(time.Millisecond))
	pc.reqs.reset()
	pc.limiter.reset()
}

type claimFigures struct {
	cli, informer           int
	cliKinds, informerKinds string
	claim, release, force   []time.Duration
	claimCached             []time.Duration // claims through the informer cache
}

// measureClaims counts the requests of one claim as the CLI makes it (fresh
// reads; its audit Event, naming the caller it asks the API server about)
// and as the dashboard makes it (the informer cache, kube.Watcher, as the
// engine's Reader; its audit Event, the caller known since start), then times
// rounds of claim and release (odd rounds, by the holder) or force-release
// (even rounds) with an engine built like the dashboard's: fresh reads,
// audit Events, and the API server's word on force-release.
func measureClaims(t testing.TB, env *kubetest.Env, pc *perfClient, pool string, rounds int) claimFigures {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace
	var f claimFigures

	fresh := &engine.Engine{Cluster: kube.NewCluster(pc.client, ns), Namespace: ns, Now: time.Now,
		Audit: (&kube.Auditor{Client: pc.client, Namespace: ns, Who: func(ctx context.Context) string {
			who, _ := kube.WhoAmI(ctx, pc.client)
			return who
		}}).Record}
	pc.reqs.reset()
	r, err := fresh.Claim(ctx, pool, "count-cli@example.com")
	if err != nil || r.Existing || r.Started {
		t.Fatalf("claim with fresh reads: %+v, %v", r, err)
	}
	var kinds map[string]int
	f.cli, _, kinds = pc.reqs.reset()
	f.cliKinds = formatKinds(kinds)

	w := kube.NewWatcher(env.Client, ns, kube.WithProbeInterval(0)) // its own client: its traffic is not counted
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := w.Start(wctx); err != nil {
		t.Fatal(err)
	}
	if !w.WaitForSync(wctx) {
		t.Fatal("the Watcher did not sync")
	}
	// Wait until the cache has the first claim, as a dashboard would.
	env.WaitFor(t, time.Minute, "the first claim in the cache", func() (bool, error) {
		snap, err := w.Snapshot(ctx, pool)
		return err == nil && len(snap.Leases) == 1, err
	})
	cached := &engine.Engine{Cluster: &kube.Cluster{Client: pc.client, Namespace: ns, Reader: w}, Namespace: ns, Now: time.Now,
		Audit: (&kube.Auditor{Client: pc.client, Namespace: ns, Actor: "perf-admin"}).Record}
	pc.reqs.reset()
	r, err = cached.Claim(ctx, pool, "count-informer@example.com")
	if err != nil || r.Existing || r.Started {
		t.Fatalf("claim through the informer cache: %+v, %v", r, err)
	}
	f.informer, _, kinds = pc.reqs.reset()
	f.informerKinds = formatKinds(kinds)
	for i := range rounds / 3 {
		start := time.Now()
		if _, err := cached.Claim(ctx, pool, fmt.Sprintf("cached%d@example.com", i)); err != nil {
			t.Fatalf("claim %d through the informer cache: %v", i, err)
		}
		f.claimCached = append(f.claimCached, time.Since(start))
	}

	dash := &engine.Engine{Cluster: kube.NewCluster(pc.client, ns), Namespace: ns, Now: time.Now,
		Authorize: (&kube.Access{Client: pc.client, Namespace: ns}).Authorize,
		Audit:     (&kube.Auditor{Client: pc.client, Namespace: ns, Actor: "perf-admin"}).Record}
	for i := range rounds {
		id := fmt.Sprintf("round%d@example.com", i)
		start := time.Now()
		r, err := dash.Claim(ctx, pool, id)
		f.claim = append(f.claim, time.Since(start))
		if err != nil {
			t.Fatalf("round %d: claim: %v", i, err)
		}
		start = time.Now()
		if i%2 == 0 {
			_, err = dash.Release(ctx, pool, r.Member, id)
			f.release = append(f.release, time.Since(start))
		} else {
			_, err = dash.ForceRelease(ctx, pool, r.Member)
			f.force = append(f.force, time.Since(start))
		}
		if err != nil {
			t.Fatalf("round %d: release %s: %v", i, r.Member, err)
		}
	}
	return f
}

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

type onceFigures struct {
	once, kubectl []time.Duration
}

// measureOnce times `ctpool-tui --once` against the kubectl get that fetches
// the same objects (ConfigMaps, Pods, PVCs and Leases with the pool label,
// as JSON), alternately, after one warm-up run of each (kubectl's discovery
// cache is warm then, as at a desk).
func measureOnce(t testing.TB, env *kubetest.Env, reps int) onceFigures {
	t.Helper()
	kubeconfig := filepath.Join(env.Dir, "admin.kubeconfig")
	bin := filepath.Join(t.TempDir(), "ctpool-tui")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/ctpool-tui/ctpool-tui/cmd/ctpool-tui").CombinedOutput(); err != nil {
		t.Fatalf("build ctpool-tui: %v\n%s", err, out)
	}
	kubectl := bundledKubectl(t, env.Dir)
	cacheDir := t.TempDir()
	once := exec.Command(bin, "--once", "--kubeconfig", kubeconfig, "-n", env.Namespace)
	get := exec.Command(kubectl, "--kubeconfig", kubeconfig, "--cache-dir", cacheDir, "-n", env.Namespace,
		"get", "configmaps,pods,persistentvolumeclaims,leases", "-l", engine.LabelPool, "-o", "json")
	run := func(c *exec.Cmd, okCodes ...int) time.Duration {
		cmd := exec.Command(c.Path, c.Args[1:]...)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && slices.Contains(okCodes, exit.ExitCode())) {
			t.Fatalf("%s: %v", strings.Join(c.Args, " "), err)
		}
		return d
	}
	const attention = 3 // --once exits 3 when a pool needs attention (Unschedulable members)
	run(once, attention)
	run(get)
	var f onceFigures
	for range reps {
		f.once = append(f.once, run(once, attention))
		f.kubectl = append(f.kubectl, run(get))
	}
	return f
}

func bundledKubectl(t testing.TB, dir string) string {
	t.Helper()
	kubectl := filepath.Join(kubetest.BinDir(dir), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("no bundled kubectl: %v", err)
	}
	return kubectl
}

const (
	claimRounds = 30
	onceReps    = 10
)

func logClaims(t testing.TB, f claimFigures) {
	t.Logf("claim on %d members: %d requests with fresh reads (%s), %d with the informer cache as Reader (%s)",
		largeMembers, f.cli, f.cliKinds, f.informer, f.informerKinds)
	for _, op := range []struct {
		name string
		ds   []time.Duration
	}{{"claim", f.claim}, {"claim, cache", f.claimCached}, {"release", f.release}, {"force-release", f.force}} {
		t.Logf("%-13s round trip over %d: p50 %v p95 %v", op.name, len(op.ds),
			percentile(op.ds, 50).Round(time.Millisecond), percentile(op.ds, 95).Round(time.Millisecond))
	}
}

func onceRatio(f onceFigures) float64 {
	return float64(percentile(f.once, 50)) / float64(percentile(f.kubectl, 50))
}

// TestIntegrationPerfLargePool: targets 6 and 7. The request count of a
// claim through the informer cache is asserted (at most 3); the others are
// logged, and --once may take at most 2x kubectl's time (target 1x).
func TestIntegrationPerfLargePool(t *testing.T) {
	env := kubetest.Require(t)
	pc := newPerfClient(t, env)
	largePool(t, env, pc, "big")

	f := measureClaims(t, env, pc, "big", claimRounds)
	logClaims(t, f)
	if f.informer > 3 {
		t.Errorf("a claim through the informer cache made %d requests (target <= 3): %s", f.informer, f.informerKinds)
	}

	o := measureOnce(t, env, onceReps)
	r := onceRatio(o)
	t.Logf("--once vs kubectl get on %d members, medians of %d: %v vs %v: %.2fx (target <= 1.00x)", largeMembers, onceReps,
		percentile(o.once, 50).Round(time.Millisecond), percentile(o.kubectl, 50).Round(time.Millisecond), r)
	if r > 2 {
		t.Errorf("--once took %.2fx the time of kubectl get (margin 2x; target 1x)", r)
	}
}

func BenchmarkIntegrationPerfClaim(b *testing.B) {
	env := kubetest.Require(b)
	pc := newPerfClient(b, env)
	largePool(b, env, pc, "big")
	for b.Loop() {
		f := measureClaims(b, env, pc, "big", claimRounds)
		logClaims(b, f)
		b.ReportMetric(float64(f.cli), "req-cli")
		b.ReportMetric(float64(f.informer), "req-informer")
		for _, op := range []struct {
			name string
			ds   []time.Duration
		}{{"claim", f.claim}, {"claim-cached", f.claimCached}, {"release", f.release}, {"force", f.force}} {
			b.ReportMetric(ms(percentile(op.ds, 50)), op.name+"-p50-ms")
			b.ReportMetric(ms(percentile(op.ds, 95)), op.name+"-p95-ms")
		}
	}
}

func BenchmarkIntegrationPerfOnce(b *testing.B) {
	env := kubetest.Require(b)
	pc := newPerfClient(b, env)
	largePool(b, env, pc, "big")
	for b.Loop() {
		o := measureOnce(b, env, onceReps)
		b.ReportMetric(onceRatio(o), "once/kubectl")
		b.ReportMetric(ms(percentile(o.once, 50)), "once-ms")
		b.ReportMetric(ms(percentile(o.kubectl, 50)), "kubectl-ms")
	}
}

// ---------------------------------------------------------------------------
// Target 3 on the real control plane.

const (
	stormMembers = 1000
	stormRounds  = 10 // status updates per Pod
	stormNode    = "ctpool-perf-storm-node"
)

type stormFigures struct {
	updates  int
	storm    time.Duration // from the first update sent to the last one answered
	final    time.Duration // from the last update answered to the dashboard having the final state
	rebuilds int64         // from the first update to the final state
}

func (f stormFigures) rebuildsPerSecond() float64 {
	return float64(f.rebuilds) / (f.storm + f.final).Seconds()
}

// realStorm makes a pool of 1,000 members whose Pods are bound to a node
// that does not exist (so that only this test writes their status) and
// whose PVCs wait for a StorageClass that does not exist, starts a
// kube.Watcher on it as the dashboard does (protobuf, the default QPS) with
// the dashboard's coalescing (dashLoop), and then patches each Pod's status
// ten times (Ready false, true, ..., true) as fast as 32 writers with an
// unthrottled client can: 10,000 updates. The final state is every member
// Ready with the resourceVersion of its last update.
func realStorm(t testing.TB, env *kubetest.Env) stormFigures {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace
	t.Cleanup(func() { // before the namespace goes: nothing would ever confirm these Pods' deletion
		zero := int64(0)
		_ = env.Client.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	})
	writer := newPerfClientQPS(t, env, unlimitedQPS, unlimitedBurst) // the cluster's writers, not ctpool-tui
	spec := perfSpec(stormMembers)
	spec.StorageClass = "ctpool-perf-none"
	if _, err := writer.client.CoreV1().ConfigMaps(ns).Create(ctx, engine.BuildConfigMap(ns, "storm", spec), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	parallel(32, stormMembers, func(i int) {
		pod := engine.BuildPod(ns, "storm", i+1, spec)
		pod.Spec.NodeName = stormNode
		if _, err := writer.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Errorf("create Pod: %v", err)
		}
		if _, err := writer.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, engine.BuildPVC(ns, "storm", i+1, spec), metav1.CreateOptions{}); err != nil {
			t.Errorf("create PVC: %v", err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	reader := newPerfClient(t, env)
	w := kube.NewWatcher(reader.client, ns, kube.WithProbeInterval(0))
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := w.Start(wctx); err != nil {
		t.Fatal(err)
	}
	if !w.WaitForSync(wctx) {
		t.Fatal("the Watcher did not sync")
	}
	src := &countingSource{Watcher: w}
	var (
		mu      sync.Mutex
		finalRV = map[string]string{}
		sent    atomic.Bool
	)
	finalAt := make(chan time.Time, 1)
	var loaded atomic.Int64
	go dashLoop(wctx, src, func(views []engine.PoolView) {
		loaded.Add(1)
		if !sent.Load() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, v := range views {
			if v.Name != "storm" {
				continue
			}
			for _, m := range v.Members {
				if m.State != engine.StateReady || m.Pod.ResourceVersion != finalRV[m.Name] {
					return
				}
			}
			select {
			case finalAt <- time.Now():
			default:
			}
		}
	})
	env.WaitFor(t, time.Minute, "the first load", func() (bool, error) { return loaded.Load() > 0, nil })

	status := func(ready bool) []byte {
		st := "False"
		if ready {
			st = "True"
		}
		return []byte(`{"status":{"phase":"Running","conditions":[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"` + st + `"}]}}`)
	}
	const writers = 32
	loadsBefore := src.loads.Load()
	start := time.Now()
	var failures atomic.Int64
	var wg sync.WaitGroup
	for wi := range writers {
		wg.Go(func() { // each writer owns the Pods i%writers == wi, so a Pod's updates stay in order
			for r := range stormRounds {
				for i := wi; i < stormMembers; i += writers {
					name := engine.MemberName("storm", i+1)
					p, err := writer.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType,
						status((stormRounds-r)%2 == 1), metav1.PatchOptions{}, "status")
					if err != nil {
						failures.Add(1)
						continue
					}
					if r == stormRounds-1 {
						mu.Lock()
						finalRV[name] = p.ResourceVersion
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	last := time.Now()
	sent.Store(true)
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d status updates failed", n)
	}
	var shown time.Time
	select {
	case shown = <-finalAt:
	case <-time.After(2 * time.Minute): // a guard against a hang, not a measurement
		t.Fatal("the final state did not reach the dashboard within 2 minutes")
	}
	return stormFigures{updates: stormMembers * stormRounds, storm: last.Sub(start), final: shown.Sub(last),
		rebuilds: src.loads.Load() - loadsBefore}
}

func logStorm(t testing.TB, f stormFigures) {
	t.Logf("%d Pod status updates in %v (%.0f/s): %d rebuilds (%.1f per second), final state loaded %v after the last update",
		f.updates, f.storm.Round(time.Millisecond), float64(f.updates)/f.storm.Seconds(), f.rebuilds, f.rebuildsPerSecond(),
		f.final.Round(time.Millisecond))
}

// TestIntegrationPerfStorm: target 3 on the real plane, where 10,000 updates
// take longer than a second: at most 30 rebuilds per second of storm, and
// the final state within a second (generous margins; targets 30 per 1-second
// storm and 250 ms).
func TestIntegrationPerfStorm(t *testing.T) {
	env := kubetest.Require(t)
	f := realStorm(t, env)
	logStorm(t, f)
	if r := f.rebuildsPerSecond(); r > 30 {
		t.Errorf("%.1f rebuilds per second of storm (target <= 30)", r)
	}
	if f.final > time.Second {
		t.Errorf("the final state took %v after the last update (margin 1s; target 250ms)", f.final)
	}
}

func BenchmarkIntegrationPerfStorm(b *testing.B) {
	env := kubetest.Require(b)
	for b.Loop() {
		f := realStorm(b, env)
		logStorm(b, f)
		b.ReportMetric(f.rebuildsPerSecond(), "rebuilds/s")
		b.ReportMetric(float64(f.rebuilds), "rebuilds")
		b.ReportMetric(ms(f.final), "ms-final")
		b.ReportMetric(float64(f.updates)/f.storm.Seconds(), "updates/s")
	}
}
