//go:build integration

package controller_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// convergeTimeout bounds each wait for Pods to become Ready. It is generous
// because other tests on the shared plane (go test runs packages in
// parallel) may fill the nodes' Pod capacity for minutes; when the plane is
// free a pool converges in a few seconds.
const convergeTimeout = 5 * time.Minute

// counter counts the requests one client sends, by kind, and can cut the
// client off the API server (a network partition).
type counter struct {
	mu     sync.Mutex
	counts map[string]int // "read", "watch", "write", and "write <resource>"
	cut    atomic.Bool
}

func newCounter() *counter { return &counter{counts: map[string]int{}} }

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// client returns a clientset on a copy of cfg whose requests c counts.
func (c *counter) client(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			c.count(r)
			if c.cut.Load() {
				return nil, fmt.Errorf("partitioned: %s %s", r.Method, r.URL.Path)
			}
			return rt.RoundTrip(r)
		})
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func (c *counter) count(r *http.Request) {
	kind := "write"
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
		kind = "watch"
	case r.Method == http.MethodGet:
		kind = "read"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[kind]++
	if kind != "watch" {
		c.counts[kind+" "+r.Method+" "+resourceOf(r.URL.Path)]++
	}
}

// resourceOf is the resource of an API path: .../namespaces/NS/RESOURCE[/NAME].
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			return parts[i+2]
		}
	}
	return parts[len(parts)-1]
}

func (c *counter) get(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[kind]
}

func (c *counter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.counts
	c.counts = map[string]int{}
	return old
}

func (c *counter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.counts))
	for k := range c.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, c.counts[k])
	}
	return strings.TrimSpace(b.String())
}

// instance is one in-process reconciler with its own clients and counters.
type instance struct {
	name    string
	ctrl    *controller.Controller
	api     *counter // the controller's requests
	le      *counter // the election's requests
	srv     *httptest.Server
	cancel  context.CancelFunc
	done    chan error
	stopped time.Time
}

func startInstance(t *testing.T, env *kubetest.Env, name string, mod func(*controller.Options)) *instance {
	t.Helper()
	in := &instance{name: name, api: newCounter(), le: newCounter(), done: make(chan error, 1)}
	opts := controller.Options{
		Client: in.api.client(t, env.Config), Namespace: env.Namespace,
		Resync: 2 * time.Second, Settle: 200 * time.Millisecond,
		Logf: func(format string, a ...any) { t.Logf("%s: %s", name, fmt.Sprintf(format, a...)) },
	}
	if mod != nil {
		mod(&opts)
	}
	if opts.LeaderElection != nil {
		opts.LeaderElection.Client = in.le.client(t, env.Config)
		opts.LeaderElection.Identity = name
	}
	ctrl, err := controller.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	in.ctrl = ctrl
	in.srv = httptest.NewServer(ctrl.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	go func() { in.done <- ctrl.Run(ctx) }()
	t.Cleanup(func() {
		in.stop(t)
		in.srv.Close()
	})
	return in
}

// stop cancels the instance and waits for Run to return (once).
func (in *instance) stop(t *testing.T) error {
	t.Helper()
	if !in.stopped.IsZero() {
		return nil
	}
	in.cancel()
	select {
	case err := <-in.done:
		in.stopped = time.Now()
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: Run did not return within 30s of cancel", in.name)
	}
	return nil
}

// observe reads a pool fresh with the admin client.
func observe(t *testing.T, env *kubetest.Env, pool string) engine.PoolView {
	t.Helper()
	snap, err := kube.NewCluster(env.Client, env.Namespace).Snapshot(context.Background(), pool)
	if err != nil {
		t.Fatalf("snapshot %s: %v", pool, err)
	}
	return engine.Observe(snap, time.Now())
}

func smallSpec(image string, size int) engine.Spec {
	s := engine.Spec{Image: image, CPU: "10m", Memory: "32Mi", Disk: "1Gi", Size: size}
	s.Default()
	return s
}

// definePool creates a pool's ConfigMap only: the controller does the rest.
func definePool(t *testing.T, env *kubetest.Env, pool string, spec engine.Spec) {
	t.Helper()
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Create(context.Background(),
		engine.BuildConfigMap(env.Namespace, pool, spec), metav1.CreateOptions{}); err != nil {
		t.Fatalf("define %s: %v", pool, err)
	}
}

// setSpec rewrites a pool's definition (as apply does, without reconciling).
func setSpec(t *testing.T, env *kubetest.Env, pool string, spec engine.Spec) {
	t.Helper()
	ctx := context.Background()
	cms := env.Client.CoreV1().ConfigMaps(env.Namespace)
	cm, err := cms.Get(ctx, engine.ConfigMapName(pool), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[engine.KeySpec] = spec.Encode()
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// converged: every member Ready and free or claimed, from the current source,
// and the status recorded says so.
func converged(v engine.PoolView, size int) bool {
	st := v.Status
	return st.Ready == size && st.Observed == size && st.Drifted == 0 && len(v.Members) == size &&
		v.Recorded.Ready == size && v.Recorded.Drifted == 0 && len(v.Recorded.Errors) == 0
}

// checkGauges compares a scrape of in's /metrics with a pool's live status.
func checkGauges(t *testing.T, env *kubetest.Env, in *instance, pool string) error {
	t.Helper()
	m, err := scrapeURL(in.srv.URL + "/metrics")
	if err != nil {
		return err
	}
	now := time.Now()
	v := observe(t, env, pool)
	st := v.Status
	members := func(state string) string {
		return fmt.Sprintf(`ctpool_pool_members{namespace="%s",pool="%s",state="%s"}`, env.Namespace, pool, state)
	}
	gauge := func(name string) string {
		return fmt.Sprintf(`%s{namespace="%s",pool="%s"}`, name, env.Namespace, pool)
	}
	want := map[string]float64{
		gauge("ctpool_pool_desired_members"): float64(st.Desired),
		members("ready"):                     float64(st.Ready),
		members("claimed"):                   float64(st.Claimed),
		members("free"):                      float64(st.Free),
		members("unschedulable"):             float64(st.Unschedulable),
		members("drifted"):                   float64(st.Drifted),
		members("failed"):                    float64(st.Failed),
		gauge("ctpool_pool_exhausted"):       map[bool]float64{true: 1}[st.Exhausted],
		gauge("ctpool_pool_claims_expiring"): float64(controller.ClaimsExpiring(v, now)),
		// The deprecated names, kept one release.
		gauge("ctpool_pool_desired"): float64(st.Desired),
		gauge("ctpool_pool_ready"):   float64(st.Ready),
		gauge("ctpool_pool_claimed"): float64(st.Claimed),
		gauge("ctpool_pool_free"):    float64(st.Free),
		gauge("ctpool_pool_failed"):  float64(st.Failed),
	}
	for key, w := range want {
		got, ok := m[key]
		if !ok || got != w {
			return fmt.Errorf("%s = %v (present %v), status says %v", key, got, ok, w)
		}
	}
	return nil
}

// checkQueue checks a scrape of in's /metrics for the work queue's series of
// an instance that has reconciled: pools were added, taken and finished.
func checkQueue(in *instance) error {
	m, err := scrapeURL(in.srv.URL + "/metrics")
	if err != nil {
		return err
	}
	for _, name := range []string{"ctpool_workqueue_adds_total", "ctpool_workqueue_queue_duration_seconds_count",
		"ctpool_workqueue_work_duration_seconds_count", "ctpool_workqueue_work_duration_seconds_sum"} {
		key := name + `{name="ctpool-pools"}`
		if m[key] <= 0 {
			return fmt.Errorf("%s = %v, want > 0", key, m[key])
		}
	}
	for _, name := range []string{"ctpool_workqueue_depth", "ctpool_workqueue_retries_total",
		"ctpool_workqueue_unfinished_work_seconds", "ctpool_workqueue_longest_running_processor_seconds"} {
		if _, ok := m[name+`{name="ctpool-pools"}`]; !ok {
			return fmt.Errorf("no series %s", name)
		}
	}
	return nil
}

func scrapeURL(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			return nil, fmt.Errorf("bad metrics line %q", line)
		}
		out[line[:i]] = v
	}
	return out, nil
}
