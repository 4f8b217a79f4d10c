//go:build integration

package systest_test

// The morning login storm (issue 41): n people claim a desktop at the same
// moment. Each claimant is its own goroutine calling engine.Engine.Claim
// through ctpool-tui's own client (kube.Options.RESTConfig: protobuf, the
// default QPS and burst, the ordinary request bound), against a pool of n
// free Ready members, or an elastic pool (maxSize n, spare 10, starting at
// size 10) that must grow for most of them.
//
// Measured per case: the Lease creates per claim as the API server counts
// them (apiserver_request_total, POST leases, 201 and 409 alike; the
// client's own count beside it), claims per second, and the time from each
// claim's start to its desktop Ready (the member's Pod Ready, seen by a
// watch), against one claim alone on the same pool. Checked: no identity
// holds two desktops, no member is answered to two identities, and no
// claim is refused while a member stays free (fixed pool) or below the
// ceiling (elastic pool).
//
// TestIntegrationClaimStorm runs small cases for the invariants (make
// test); BenchmarkIntegrationClaimStorm runs n = 100 and 1,000 and reports
// the figures (make bench-storm, hack/benchreport).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

const (
	// claimStormSpare is the elastic pool's spare and starting size.
	claimStormSpare = 10
	// claimStormPool is the pool the storm claims from; claimStormAlonePool
	// is the elastic case's companion pool for its claims alone.
	claimStormPool      = "storm"
	claimStormAlonePool = "alone"
	// claimStormNodeLabel marks the kwok nodes a storm adds (value: the
	// test's namespace); the nodes carry it as a NoSchedule taint too, so
	// only the storm's members (through its RuntimeClass) land there.
	claimStormNodeLabel = "ctpool.test/storm"
	claimStormNodePods  = 500
)

// claimStormCase is one storm: n claims at once.
type claimStormCase struct {
	elastic bool
	n       int // claims; the fixed pool's free members, the elastic pool's maxSize
	reps    int // claims alone before the storm (the baseline)
}

func (c claimStormCase) String() string {
	kind := "fixed"
	if c.elastic {
		kind = "elastic"
	}
	return fmt.Sprintf("%s/n=%d", kind, c.n)
}

// claimStormFigures are one storm's measurements.
type claimStormFigures struct {
	n int
	// leaseCreates is the API server's count of Lease creates (POST, every
	// code) during the storm, by code; clientLeaseCreates the storm
	// client's own count. Other writers on the plane (other tests, kwok's
	// node Leases) only add to the server's count.
	leaseCreates       map[string]float64
	clientLeaseCreates int
	storm              time.Duration   // the first claim sent to the last answer
	answered, ready    []time.Duration // claim to its answer, claim to its desktop Ready; sorted
	// alone and aloneAnswered are the claims alone (claim to desktop Ready,
	// claim to answer), sorted: on the same pool before the storm (fixed),
	// or claims that grow an elastic pool with nothing free (elastic).
	alone, aloneAnswered []time.Duration
	grew                 int
	failed               []string         // claims that failed (not refused) or whose desktop was not Ready in time
	requests             map[string]int   // the storm client's requests by "verb resource"
	readBytes            map[string]int64 // bytes of their responses
	throttled            int64            // requests that waited for the client's rate limiter
	throttleWait         time.Duration
	serverSeconds        map[string]float64 // the API server's time spent, by "VERB resource"
}

func (f claimStormFigures) leasesPerClaim() float64 {
	total := 0.0
	for _, v := range f.leaseCreates {
		total += v
	}
	return total / float64(f.n)
}

// claimsPerSecond counts the claims answered with a member.
func (f claimStormFigures) claimsPerSecond() float64 {
	return float64(len(f.answered)) / f.storm.Seconds()
}

func (f claimStormFigures) requestsPerClaim() float64 {
	total := 0
	for _, v := range f.requests {
		total += v
	}
	return float64(total) / float64(f.n)
}

func (f claimStormFigures) aloneMedian() time.Duration         { return pct(f.alone, 0.5) }
func (f claimStormFigures) aloneAnsweredMedian() time.Duration { return pct(f.aloneAnswered, 0.5) }

func durMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runClaimStorm builds the case's pool on kwok nodes of its own, takes the
// baseline, sends c.n claims at once and checks and returns the figures.
//
// A claim that fails (other than a refusal) or whose desktop is not Ready in
// time fails the test; with bench it is a figure (failed) instead, so that
// the other figures of a plane that cannot keep up are still reported. With
// bench the namespace is also deleted at the end, and waited for, so that
// the next case starts on a quiet plane.
func runClaimStorm(tb testing.TB, env *kubetest.Env, c claimStormCase, bench bool) claimStormFigures {
	tb.Helper()
	ctx := context.Background()
	rc := addClaimStormNodes(tb, env, c.n+c.reps+claimStormSpare, bench)
	desks := watchDesktops(tb, env)
	setup := pooltest.Engine(env)
	storm := newClaimStormClient(tb, env)
	fig := claimStormFigures{n: c.n}
	// The plane's pace of new members is kwok's: it provisions the PVCs'
	// volumes one after the other (about 4 a second on a busy 2-core machine).
	readyWithin := 2*time.Minute + time.Duration(c.n)*400*time.Millisecond

	t0 := time.Now()
	var applied time.Duration
	if !c.elastic {
		// n free members after the claims alone, which take reps of them.
		if _, err := setup.Apply(ctx, claimStormPool, claimStormSpec(rc, c.n+c.reps)); err != nil {
			tb.Fatalf("apply %s: %v", claimStormPool, err)
		}
		applied = time.Since(t0)
		desks.waitPool(tb, env, claimStormPool, c.n+c.reps, readyWithin)
	} else {
		spec := claimStormSpec(rc, claimStormSpare)
		spec.MaxSize, spec.Spare = c.n, new(claimStormSpare)
		if _, err := setup.Apply(ctx, claimStormPool, spec); err != nil {
			tb.Fatalf("apply %s: %v", claimStormPool, err)
		}
		// A claim alone that grows the pool: an elastic pool with nothing free.
		alone := claimStormSpec(rc, 0)
		alone.MaxSize, alone.Spare = max(c.reps, 1), new(0)
		if _, err := setup.Apply(ctx, claimStormAlonePool, alone); err != nil {
			tb.Fatalf("apply %s: %v", claimStormAlonePool, err)
		}
		applied = time.Since(t0)
		desks.waitPool(tb, env, claimStormPool, claimStormSpare, readyWithin)
	}
	tb.Logf("%s: pool applied in %s, its members Ready %s later", c, applied.Round(time.Millisecond), (time.Since(t0) - applied).Round(time.Millisecond))
	// A reconciler records the pool's status after every change (the
	// controller does within a second): claims read it, the claims alone
	// as the storm's.
	recordStatus := func() {
		for _, pool := range []string{claimStormPool, claimStormAlonePool} {
			if pool == claimStormAlonePool && !c.elastic {
				continue
			}
			if _, err := setup.Reconcile(ctx, pool); err != nil {
				tb.Fatalf("reconcile %s: %v", pool, err)
			}
		}
	}
	recordStatus()

	alonePool := claimStormPool
	if c.elastic {
		alonePool = claimStormAlonePool
	}
	for i := range c.reps {
		who := fmt.Sprintf("alone%02d@example.com", i)
		start := time.Now()
		r, err := storm.eng.Claim(ctx, alonePool, who)
		answered := time.Now()
		if err != nil {
			tb.Fatalf("claim alone by %s: %v", who, err)
		}
		readyAt, err := desks.wait(ctx, r.Member, readyWithin)
		if err != nil {
			tb.Fatalf("claim alone by %s: %v", who, err)
		}
		fig.aloneAnswered = append(fig.aloneAnswered, answered.Sub(start))
		fig.alone = append(fig.alone, later(answered, readyAt).Sub(start))
	}
	slices.Sort(fig.alone)
	slices.Sort(fig.aloneAnswered)

	wantFree := c.n
	if c.elastic {
		wantFree = claimStormSpare
	}
	if v := observe(tb, setup, claimStormPool); v.Status.Free != wantFree {
		tb.Fatalf("%s before the storm: %d free members, want %d", c, v.Status.Free, wantFree)
	}
	recordStatus()

	// The storm.
	before := readAPIServerMetrics(tb, env)
	storm.reset()
	type answer struct {
		who, member               string
		grew                      bool
		err, readyErr             error
		sent, answered, readyTime time.Time
	}
	answers := make(chan answer, c.n)
	var gate, answeredAll sync.WaitGroup
	gate.Add(1)
	answeredAll.Add(c.n)
	for i := range c.n {
		who := fmt.Sprintf("user%04d@example.com", i)
		go func() {
			gate.Wait()
			a := answer{who: who, sent: time.Now()}
			r, err := storm.eng.Claim(ctx, claimStormPool, who)
			a.answered = time.Now()
			answeredAll.Done()
			a.member, a.grew, a.err = r.Member, r.Grew, err
			if err == nil {
				a.readyTime, a.readyErr = desks.wait(ctx, r.Member, readyWithin)
			}
			answers <- a
		}()
	}
	start := time.Now()
	gate.Done()
	// Every claim answered: the counts stop here, before the desktops'
	// wait, which sends nothing through the storm's client.
	answeredAll.Wait()
	after := readAPIServerMetrics(tb, env)
	fig.leaseCreates, fig.serverSeconds = after.leaseCreatesSince(before), after.secondsSince(before)
	fig.requests, fig.readBytes, fig.clientLeaseCreates = storm.counts()
	fig.throttled, fig.throttleWait = storm.limiter.waits.Load(), time.Duration(storm.limiter.waited.Load())
	var (
		got     []answer
		last    time.Time
		refused []string
	)
	for range c.n {
		a := <-answers
		got = append(got, a)
		last = later(last, a.answered)
	}
	fig.storm = last.Sub(start)

	answeredTo := map[string]string{} // member -> identity
	for _, a := range got {
		var nf *engine.NoFreeMembersError
		switch {
		case errors.As(a.err, &nf):
			refused = append(refused, fmt.Sprintf("%s: %v", a.who, a.err))
			continue
		case a.err != nil:
			fig.failed = append(fig.failed, fmt.Sprintf("%s: claim: %v", a.who, a.err))
			continue
		}
		if other, dup := answeredTo[a.member]; dup {
			tb.Errorf("member %s was given twice: to %s and to %s", a.member, other, a.who)
		}
		answeredTo[a.member] = a.who
		fig.answered = append(fig.answered, a.answered.Sub(a.sent))
		if a.grew {
			fig.grew++
		}
		if a.readyErr != nil {
			fig.failed = append(fig.failed, fmt.Sprintf("%s: %v", a.who, a.readyErr))
			continue
		}
		fig.ready = append(fig.ready, later(a.answered, a.readyTime).Sub(a.sent))
	}
	slices.Sort(fig.answered)
	slices.Sort(fig.ready)
	logClaimStorm(tb, c, fig)
	if len(fig.failed) > 0 {
		sort.Strings(fig.failed)
		report := tb.Errorf
		if bench {
			report = tb.Logf
		}
		report("%s: %d claims failed or their desktop was not Ready in time: %s", c, len(fig.failed), strings.Join(fig.failed[:min(len(fig.failed), 5)], "; "))
	}

	// Every identity holds at most one desktop, the one it was answered.
	held := claimStormHolders(tb, env, claimStormPool)
	claimed := 0
	for who, members := range held {
		claimed += len(members)
		if len(members) > 1 {
			tb.Errorf("%s holds %d desktops: %v", who, len(members), members)
		}
	}
	for member, who := range answeredTo {
		if !slices.Contains(held[who], member) {
			tb.Errorf("%s was answered %s, but holds %v", who, member, held[who])
		}
	}
	if len(refused) > 0 {
		if c.elastic {
			if claimed < c.n {
				tb.Errorf("%d claims refused below the ceiling (%d of maxSize %d claimed), e.g. %s", len(refused), claimed, c.n, refused[0])
			}
		} else if v := observe(tb, setup, claimStormPool); v.Status.Free > 0 {
			tb.Errorf("%d claims refused while %d members stayed free, e.g. %s", len(refused), v.Status.Free, refused[0])
		}
	}
	if len(fig.ready) == 0 && !bench {
		tb.Fatalf("%s: no claimant got a desktop", c)
	}
	return fig
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func logClaimStorm(tb testing.TB, c claimStormCase, fig claimStormFigures) {
	tb.Helper()
	if len(fig.ready) == 0 {
		tb.Logf("%s: %d claims in %s, none got a desktop; Lease creates %s (API server), %d (client)",
			c, fig.n, fig.storm.Round(time.Millisecond), formatCounts(fig.leaseCreates), fig.clientLeaseCreates)
		return
	}
	tb.Logf("%s: %d claims in %s (%.1f claims/s), %d grew the pool; Lease creates per claim %.2f (API server: %s; client: %d); claim to answer p50 %s p95 %s p99 %s; claim to desktop Ready p50 %s p95 %s p99 %s max %s",
		c, fig.n, fig.storm.Round(time.Millisecond), fig.claimsPerSecond(), fig.grew,
		fig.leasesPerClaim(), formatCounts(fig.leaseCreates), fig.clientLeaseCreates,
		pct(fig.answered, 0.5), pct(fig.answered, 0.95), pct(fig.answered, 0.99),
		pct(fig.ready, 0.5), pct(fig.ready, 0.95), pct(fig.ready, 0.99), fig.ready[len(fig.ready)-1])
	if len(fig.alone) > 0 {
		tb.Logf("%s: one claim alone (%d times): to answer median %s, to desktop Ready median %s (min %s max %s); p95 to answer / alone %.1fx",
			c, len(fig.alone), fig.aloneAnsweredMedian(), fig.aloneMedian(), fig.alone[0], fig.alone[len(fig.alone)-1],
			pct(fig.answered, 0.95).Seconds()/fig.aloneAnsweredMedian().Seconds())
	}
	type kind struct {
		name  string
		n     int
		bytes int64
	}
	var kinds []kind
	for k, n := range fig.requests {
		kinds = append(kinds, kind{k, n, fig.readBytes[k]})
	}
	sort.Slice(kinds, func(i, j int) bool {
		return kinds[i].n > kinds[j].n || kinds[i].n == kinds[j].n && kinds[i].name < kinds[j].name
	})
	var parts []string
	var bytes int64
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %.2f", k.name, float64(k.n)/float64(fig.n)))
		bytes += k.bytes
	}
	tb.Logf("%s: client requests per claim %.1f (%s); %.2f MB read per claim; %d requests waited %s in all for the client's rate limiter",
		c, fig.requestsPerClaim(), strings.Join(parts, ", "), float64(bytes)/float64(fig.n)/1e6, fig.throttled, fig.throttleWait.Round(time.Millisecond))
	type spent struct {
		name string
		s    float64
	}
	var spents []spent
	for k, s := range fig.serverSeconds {
		if s >= 0.05 {
			spents = append(spents, spent{k, s})
		}
	}
	sort.Slice(spents, func(i, j int) bool { return spents[i].s > spents[j].s })
	parts = parts[:0]
	for _, s := range spents[:min(len(spents), 8)] {
		parts = append(parts, fmt.Sprintf("%s %.1fs", s.name, s.s))
	}
	tb.Logf("%s: API server time handling requests during the storm (all clients, summed over concurrent requests): %s", c, strings.Join(parts, ", "))
}

func formatCounts(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// claimStormSpec is a pool of size members that ask for little and run on
// the storm's nodes (RuntimeClass rc).
func claimStormSpec(rc string, size int) engine.Spec {
	s := engine.Spec{Image: pooltest.Image, CPU: "1m", Memory: "1Mi", Disk: "1Gi", Size: size,
		Runtime: &engine.Runtime{Backend: engine.BackendStandard, RuntimeClassName: rc}}
	s.Default()
	return s
}

// claimStormHolders reads the pool's claim Leases fresh: the members each
// identity holds.
func claimStormHolders(tb testing.TB, env *kubetest.Env, pool string) map[string][]string {
	tb.Helper()
	leases, err := env.Client.CoordinationV1().Leases(env.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		tb.Fatalf("list leases: %v", err)
	}
	held := map[string][]string{}
	for _, l := range leases.Items {
		member, ok := engine.MemberFromLeaseName(l.Name)
		if !ok || !strings.HasPrefix(member, pool+"-") || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == engine.ReconcilerIdentity {
			continue
		}
		held[*l.Spec.HolderIdentity] = append(held[*l.Spec.HolderIdentity], member)
	}
	return held
}

// ---- the storm's client ----

// claimStormClient is an engine over ctpool-tui's own client configuration
// for the plane's admin kubeconfig, which counts its requests (by verb and
// resource), the bytes of their responses, its Lease creates, and the
// requests that waited for its rate limiter.
type claimStormClient struct {
	eng     *engine.Engine
	limiter *claimStormLimiter

	mu           sync.Mutex
	requests     map[string]int
	bytes        map[string]int64
	leaseCreates int
}

func newClaimStormClient(tb testing.TB, env *kubetest.Env) *claimStormClient {
	tb.Helper()
	opts := kube.NewOptions()
	kubeconfig := filepath.Join(env.Dir, "admin.kubeconfig")
	opts.Flags.KubeConfig = &kubeconfig
	if d := os.Getenv("CTPOOL_STORM_REQUEST_TIMEOUT"); d != "" {
		opts.Flags.Timeout = &d // --request-timeout; the default bound is kube.DefaultRequestBound
	}
	cfg, err := opts.RESTConfig()
	if err != nil {
		tb.Fatalf("storm client: %v", err)
	}
	c := &claimStormClient{limiter: newClaimStormLimiter(cfg.QPS, cfg.Burst)}
	c.reset()
	cfg.RateLimiter = c.limiter
	cfg.Wrap(c.wrap)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatalf("storm client: %v", err)
	}
	c.eng = &engine.Engine{Cluster: kube.NewCluster(client, env.Namespace), Namespace: env.Namespace, Now: time.Now}
	return c
}

func (c *claimStormClient) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests, c.bytes, c.leaseCreates = map[string]int{}, map[string]int64{}, 0
	c.limiter.waits.Store(0)
	c.limiter.waited.Store(0)
}

func (c *claimStormClient) counts() (map[string]int, map[string]int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.requests), maps.Clone(c.bytes), c.leaseCreates
}

func (c *claimStormClient) wrap(rt http.RoundTripper) http.RoundTripper {
	return claimStormRoundTrip(func(req *http.Request) (*http.Response, error) {
		kind := claimStormRequestKind(req)
		c.mu.Lock()
		c.requests[kind]++
		if kind == "create leases" {
			c.leaseCreates++
		}
		c.mu.Unlock()
		resp, err := rt.RoundTrip(req)
		if resp != nil && resp.Body != nil {
			resp.Body = &claimStormBody{ReadCloser: resp.Body, add: func(n int) {
				c.mu.Lock()
				c.bytes[kind] += int64(n)
				c.mu.Unlock()
			}}
		}
		return resp, err
	})
}

type claimStormRoundTrip func(*http.Request) (*http.Response, error)

func (f claimStormRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// claimStormBody counts the bytes read from a response.
type claimStormBody struct {
	io.ReadCloser
	add func(int)
}

func (b *claimStormBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.add(n)
	}
	return n, err
}

// claimStormRequestKind names a request "verb resource": get, list, watch,
// create, update, patch or delete of pods, leases, nodes, ...
func claimStormRequestKind(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) > 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) > 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return req.Method + " " + req.URL.Path
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	named := len(rest) > 1
	verb := strings.ToLower(req.Method)
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	}
	return verb + " " + rest[0]
}

// claimStormLimiter is client-go's token bucket (a rate.Limiter of the
// config's QPS and burst, as flowcontrol.NewTokenBucketRateLimiter builds
// it) that also counts the requests it made wait, and for how long: the
// wait the bucket asked for, not the time a goroutine of a busy process
// took to run again.
type claimStormLimiter struct {
	lim    *rate.Limiter
	qps    float32
	waits  atomic.Int64
	waited atomic.Int64 // nanoseconds
}

func newClaimStormLimiter(qps float32, burst int) *claimStormLimiter {
	return &claimStormLimiter{lim: rate.NewLimiter(rate.Limit(qps), burst), qps: qps}
}

func (l *claimStormLimiter) TryAccept() bool { return l.lim.Allow() }
func (l *claimStormLimiter) Stop()           {}
func (l *claimStormLimiter) QPS() float32    { return l.qps }
func (l *claimStormLimiter) Accept()         { _ = l.Wait(context.Background()) }

func (l *claimStormLimiter) Wait(ctx context.Context) error {
	r := l.lim.Reserve()
	d := r.Delay()
	if d <= 0 {
		return nil
	}
	l.waits.Add(1)
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

// ---- the API server's own count ----

// apiServerMetrics is one reading of the API server's request metrics:
// apiserver_request_total by "VERB resource code" and
// apiserver_request_duration_seconds_sum by "VERB resource".
type apiServerMetrics struct {
	requests map[string]float64
	seconds  map[string]float64
}

// readAPIServerMetrics reads GET /metrics of the API server with the admin
// client.
func readAPIServerMetrics(tb testing.TB, env *kubetest.Env) apiServerMetrics {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, err := env.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		tb.Fatalf("API server metrics: %v", err)
	}
	m, err := parseAPIServerMetrics(string(body))
	if err != nil {
		tb.Fatalf("API server metrics: %v", err)
	}
	return m
}

func parseAPIServerMetrics(text string) (apiServerMetrics, error) {
	m := apiServerMetrics{requests: map[string]float64{}, seconds: map[string]float64{}}
	for line := range strings.Lines(text) {
		var into map[string]float64
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{"):
			into = m.requests
		case strings.HasPrefix(line, "apiserver_request_duration_seconds_sum{"):
			into = m.seconds
		default:
			continue
		}
		open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
		if end < open {
			return m, fmt.Errorf("malformed line %q", line)
		}
		labels := parsePromLabels(line[open+1 : end])
		fields := strings.Fields(line[end+1:])
		if len(fields) == 0 {
			return m, fmt.Errorf("no value in line %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return m, fmt.Errorf("value of line %q: %v", line, err)
		}
		if labels["resource"] == "" {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		if strings.HasPrefix(line, "apiserver_request_total{") {
			key += " " + labels["code"]
		}
		into[key] += v
	}
	if len(m.requests) == 0 {
		return m, errors.New("no apiserver_request_total in the answer")
	}
	return m, nil
}

// parsePromLabels parses `a="x",b="y"` (Prometheus text format, values
// with \\, \" and \n escapes).
func parsePromLabels(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return out
		}
		name := strings.TrimSpace(s[:eq])
		var b strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				if s[i] == 'n' {
					b.WriteByte('\n')
					continue
				}
			}
			b.WriteByte(s[i])
		}
		out[name] = b.String()
		s = strings.TrimPrefix(strings.TrimSpace(s[min(i+1, len(s)):]), ",")
	}
	return out
}

// leaseCreatesSince is the Lease creates (POST, every code) since before, by code.
func (m apiServerMetrics) leaseCreatesSince(before apiServerMetrics) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m.requests {
		verb, code, ok := strings.Cut(k, " leases ")
		if !ok || (verb != "POST" && verb != "create") {
			continue
		}
		if d := v - before.requests[k]; d > 0 {
			out[code] += d
		}
	}
	return out
}

func (m apiServerMetrics) secondsSince(before apiServerMetrics) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m.seconds {
		if verb, _, _ := strings.Cut(k, " "); verb == "WATCH" || verb == "CONNECT" {
			continue // long-running: counted when they end, not work done
		}
		if d := v - before.seconds[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// ---- the desktops: a watch of the namespace's Pods ----

// desktopWatch records when each Pod of the namespace was first seen Ready
// (by a watch), and wakes those waiting for it.
type desktopWatch struct {
	mu      sync.Mutex
	readyAt map[string]time.Time
	pool    map[string]string
	waiting map[string]chan struct{}
}

func watchDesktops(tb testing.TB, env *kubetest.Env) *desktopWatch {
	tb.Helper()
	w := &desktopWatch{readyAt: map[string]time.Time{}, pool: map[string]string{}, waiting: map[string]chan struct{}{}}
	factory := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(env.Namespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.seen(obj) },
		UpdateFunc: func(_, obj any) { w.seen(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				w.mu.Lock()
				delete(w.readyAt, p.Name)
				w.mu.Unlock()
			}
		},
	}); err != nil {
		tb.Fatal(err)
	}
	stop := make(chan struct{})
	tb.Cleanup(func() { close(stop); factory.Shutdown() })
	factory.Start(stop)
	for typ, ok := range factory.WaitForCacheSync(stop) {
		if !ok {
			tb.Fatalf("the watch of %v did not sync", typ)
		}
	}
	return w
}

func (w *desktopWatch) seen(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !pooltest.PodReady(p) {
		delete(w.readyAt, p.Name)
		return
	}
	if _, ok := w.readyAt[p.Name]; ok {
		return
	}
	w.readyAt[p.Name] = time.Now()
	w.pool[p.Name] = p.Labels[engine.LabelPool]
	if ch, ok := w.waiting[p.Name]; ok {
		close(ch)
		delete(w.waiting, p.Name)
	}
}

// wait returns when member's Pod was first seen Ready, waiting up to within.
func (w *desktopWatch) wait(ctx context.Context, member string, within time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		w.mu.Lock()
		at, ok := w.readyAt[member]
		ch := w.waiting[member]
		if !ok && ch == nil {
			ch = make(chan struct{})
			w.waiting[member] = ch
		}
		w.mu.Unlock()
		if ok {
			return at, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("desktop %s not Ready within %s", member, within)
		}
	}
}

// waitPool polls until n Pods of pool are Ready. When they are not in
// time, it says how far the members got.
func (w *desktopWatch) waitPool(tb testing.TB, env *kubetest.Env, pool string, n int, within time.Duration) {
	tb.Helper()
	ready := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		r := 0
		for name := range w.readyAt {
			if w.pool[name] == pool {
				r++
			}
		}
		return r
	}
	err := wait.PollUntilContextTimeout(tb.Context(), 200*time.Millisecond, within, true, func(context.Context) (bool, error) {
		return ready() >= n, nil
	})
	if err == nil {
		return
	}
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: engine.LabelPool + "=" + pool}
	pods, perr := env.Client.CoreV1().Pods(env.Namespace).List(ctx, opts)
	pvcs, verr := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).List(ctx, opts)
	if perr != nil || verr != nil {
		tb.Fatalf("%d of %d members of %s Ready after %s (and listing them failed: %v %v)", ready(), n, pool, within, perr, verr)
	}
	bound, scheduled := 0, 0
	for i := range pvcs.Items {
		if pvcs.Items[i].Status.Phase == corev1.ClaimBound {
			bound++
		}
	}
	for i := range pods.Items {
		if pods.Items[i].Spec.NodeName != "" {
			scheduled++
		}
	}
	tb.Fatalf("%d of %d members of %s Ready after %s: %d Pods (%d scheduled), %d PVCs (%d Bound)",
		ready(), n, pool, within, len(pods.Items), scheduled, len(pvcs.Items), bound)
}

// ---- the storm's nodes ----

// addClaimStormNodes adds kwok nodes with room for pods Pods, labelled and
// tainted for this test alone, and a RuntimeClass (returned) whose
// scheduling selects them and tolerates the taint, so that the storm's
// members and nothing else land there. At the end it deletes the
// namespace's Pods (at once: a Pod on a deleted node would wait for the
// garbage collector), the nodes and the RuntimeClass; with settle it also
// deletes the namespace and waits until it is gone, so that the next case
// starts on a quiet plane.
func addClaimStormNodes(tb testing.TB, env *kubetest.Env, pods int, settle bool) string {
	tb.Helper()
	ctx := context.Background()
	removeStaleClaimStormNodes(tb, env)
	// Named for the namespace's random suffix: a node's name is also its
	// hostname label, at most 63 characters.
	name := "ctpool-storm-" + env.Namespace[max(0, len(env.Namespace)-5):]
	labels := map[string]string{claimStormNodeLabel: env.Namespace}
	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Handler:    "runc",
		Scheduling: &nodev1.Scheduling{
			NodeSelector: labels,
			Tolerations: []corev1.Toleration{{Key: claimStormNodeLabel, Operator: corev1.TolerationOpEqual,
				Value: env.Namespace, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	if _, err := env.Client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("create RuntimeClass %s: %v", name, err)
	}
	var nodes []string
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		removeClaimStormNodes(ctx, tb, env, name, nodes, settle)
	})
	for i := range (pods + claimStormNodePods - 1) / claimStormNodePods {
		node := fmt.Sprintf("%s-%d", name, i)
		res := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1Ti"),
			corev1.ResourcePods: *resource.NewQuantity(claimStormNodePods, resource.DecimalSI), corev1.ResourceEphemeralStorage: resource.MustParse("10Ti"),
		}
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        node,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": node,
					"kubernetes.io/os": "linux", "type": "kwok", claimStormNodeLabel: env.Namespace},
			},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: claimStormNodeLabel, Value: env.Namespace, Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: res, Allocatable: res,
				NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"}},
		}
		if _, err := env.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			tb.Fatalf("create node %s: %v", node, err)
		}
		nodes = append(nodes, node)
	}
	env.WaitFor(tb, time.Minute, fmt.Sprintf("%d storm nodes Ready", len(nodes)), func() (bool, error) {
		list, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: claimStormNodeLabel + "=" + env.Namespace})
		if err != nil {
			return false, nil
		}
		ready := 0
		for i := range list.Items {
			for _, c := range list.Items[i].Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == len(nodes), nil
	})
	return name
}

func removeClaimStormNodes(ctx context.Context, tb testing.TB, env *kubetest.Env, rc string, nodes []string, settle bool) {
	start := time.Now()
	zero := int64(0)
	pods := env.Client.CoreV1().Pods(env.Namespace)
	// A delete of a thousand Pods in one request may outlast the API
	// server's own request timeout: it is sent again until none is left.
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil && len(list.Items) == 0 {
			return true, nil
		}
		dctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_ = pods.DeleteCollection(dctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		return false, nil
	})
	if err != nil {
		tb.Errorf("the storm's Pods are not gone after 5 minutes; deleting its nodes anyway (the Pod garbage collector removes the rest)")
	}
	for _, n := range nodes {
		if err := env.Client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			tb.Errorf("delete node %s: %v", n, err)
		}
	}
	if err := env.Client.NodeV1().RuntimeClasses().Delete(ctx, rc, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		tb.Errorf("delete RuntimeClass %s: %v", rc, err)
	}
	if !settle {
		return
	}
	policy := metav1.DeletePropagationBackground
	if err := env.Client.CoreV1().Namespaces().Delete(ctx, env.Namespace, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil && !apierrors.IsNotFound(err) {
		tb.Errorf("delete namespace %s: %v", env.Namespace, err)
		return
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Namespaces().Get(ctx, env.Namespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		tb.Logf("namespace %s not gone after 10 minutes; going on", env.Namespace)
		return
	}
	tb.Logf("the storm's Pods, nodes and namespace removed in %s", time.Since(start).Round(time.Second))
}

// removeStaleClaimStormNodes deletes the storm nodes and RuntimeClasses of
// namespaces that are gone (a run that was interrupted).
func removeStaleClaimStormNodes(tb testing.TB, env *kubetest.Env) {
	tb.Helper()
	ctx := context.Background()
	gone := func(labels map[string]string) bool {
		_, err := env.Client.CoreV1().Namespaces().Get(ctx, labels[claimStormNodeLabel], metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: claimStormNodeLabel})
	if err != nil {
		tb.Fatalf("list nodes: %v", err)
	}
	for _, n := range nodes.Items {
		if gone(n.Labels) {
			_ = env.Client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
		}
	}
	rcs, err := env.Client.NodeV1().RuntimeClasses().List(ctx, metav1.ListOptions{LabelSelector: claimStormNodeLabel})
	if err != nil {
		tb.Fatalf("list RuntimeClasses: %v", err)
	}
	for _, rc := range rcs.Items {
		if gone(rc.Labels) {
			_ = env.Client.NodeV1().RuntimeClasses().Delete(ctx, rc.Name, metav1.DeleteOptions{})
		}
	}
}

// ---- the test and the benchmark ----

// TestIntegrationClaimStorm: 50 claims at once on 50 free members, and 30
// at once on an elastic pool (maxSize 30, spare 10, size 10): every
// claimant gets a desktop of its own, none is refused while a member is
// free or below the ceiling, and every desktop becomes Ready. The figures
// are logged; their targets are make bench-storm's.
func TestIntegrationClaimStorm(t *testing.T) {
	for _, c := range []claimStormCase{{n: 50, reps: 2}, {elastic: true, n: 30, reps: 2}} {
		t.Run(strings.ReplaceAll(c.String(), "/", "-"), func(t *testing.T) {
			env := kubetest.Require(t)
			runClaimStorm(t, env, c, false)
		})
	}
}

// claimStormSizes are the benchmark's n: CTPOOL_STORM_SIZES (make
// bench-storm's STORM_SIZES), default 100 and 1,000.
func claimStormSizes(tb testing.TB) []int {
	s := os.Getenv("CTPOOL_STORM_SIZES")
	if s == "" {
		return []int{100, 1000}
	}
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			tb.Fatalf("CTPOOL_STORM_SIZES=%q: want positive numbers separated by commas", s)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// BenchmarkIntegrationClaimStorm reports, for n claims at once on n free
// members and on an elastic pool of maxSize n (spare 10, size 10): the
// Lease creates per claim (API server's count, and the client's), claims
// per second, claim to desktop Ready p50/p95/p99 and claim to answer p95,
// against one claim alone on the same pool (5 times; for the elastic pool,
// a claim alone that grows it). make bench-storm.
func BenchmarkIntegrationClaimStorm(b *testing.B) {
	for _, elastic := range []bool{false, true} {
		for _, n := range claimStormSizes(b) {
			c := claimStormCase{elastic: elastic, n: n, reps: 5}
			b.Run(c.String(), func(b *testing.B) {
				for b.Loop() {
					env := kubetest.Require(b)
					fig := runClaimStorm(b, env, c, true)
					b.ReportMetric(float64(len(fig.failed)), "failed")
					b.ReportMetric(fig.claimsPerSecond(), "claims/s")
					b.ReportMetric(fig.storm.Seconds(), "storm-s")
					b.ReportMetric(fig.requestsPerClaim(), "req/claim")
					b.ReportMetric(float64(fig.throttled), "throttled")
					b.ReportMetric(float64(fig.grew), "claims-grew")
					b.ReportMetric(durMS(fig.aloneMedian()), "alone-ready-ms")
					b.ReportMetric(durMS(fig.aloneAnsweredMedian()), "alone-answer-ms")
					if len(fig.answered) > 0 { // else nothing to count per claim (benchreport: missing)
						b.ReportMetric(fig.leasesPerClaim(), "leases/claim")
						b.ReportMetric(float64(fig.clientLeaseCreates)/float64(fig.n), "leases/claim-client")
						b.ReportMetric(durMS(pct(fig.answered, 0.95)), "answer-p95-ms")
						b.ReportMetric(pct(fig.answered, 0.95).Seconds()/fig.aloneAnsweredMedian().Seconds(), "answer-p95/alone")
					}
					if len(fig.ready) > 0 { // of the claims that got a desktop; failed says how many did not
						b.ReportMetric(durMS(pct(fig.ready, 0.5)), "ready-p50-ms")
						b.ReportMetric(durMS(pct(fig.ready, 0.95)), "ready-p95-ms")
						b.ReportMetric(durMS(pct(fig.ready, 0.99)), "ready-p99-ms")
						b.ReportMetric(pct(fig.ready, 0.95).Seconds()/fig.aloneMedian().Seconds(), "ready-p95/alone")
					}
				}
			})
		}
	}
}
