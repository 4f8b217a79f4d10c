package controller

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

const testNS = "vdi"

var testNow = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func testSpec(image string, size int) engine.Spec {
	s := engine.Spec{Image: image, Size: size}
	s.Default()
	return s
}

func readyPod(p *corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

// member returns a Ready member n built from spec.
func member(pool string, n int, spec engine.Spec) []runtime.Object {
	return []runtime.Object{readyPod(engine.BuildPod(testNS, pool, n, spec)), engine.BuildPVC(testNS, pool, n, spec)}
}

// convergedPool is a pool of size n whose members are all Ready and free.
func convergedPool(pool string, n int) []runtime.Object {
	spec := testSpec("registry.example/desktop:1", n)
	objs := []runtime.Object{engine.BuildConfigMap(testNS, pool, spec)}
	for i := 1; i <= n; i++ {
		objs = append(objs, member(pool, i, spec)...)
	}
	return objs
}

// newTestController builds a controller on a fake clientset, starts its
// informers (not its workers) and waits for them.
func newTestController(t testing.TB, client *fake.Clientset, mod func(*Options)) *Controller {
	t.Helper()
	opts := Options{Client: client, Namespace: testNS, Settle: -1, Now: func() time.Time { return testNow }}
	if mod != nil {
		mod(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		c.queue.ShutDown()
	})
	c.set.Start(ctx)
	if !c.set.WaitForSync(ctx) {
		t.Fatal("caches did not sync")
	}
	c.synced.Store(true)
	return c
}

// drainQueue takes every queued key (without waiting) and marks it done.
func drainQueue(c *Controller) []engine.PoolRef {
	var keys []engine.PoolRef
	for c.queue.Len() > 0 {
		k, _ := c.queue.Get()
		c.queue.Done(k)
		keys = append(keys, k)
	}
	return keys
}

// waitFor polls cond every 10ms until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// memberWrites are the recorded writes to member objects (Pods, PVCs,
// Leases, Services), that is everything but reads and the status patch.
func memberWrites(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		if r := a.GetResource().Resource; r == "configmaps" || r == "poddisruptionbudgets" {
			continue // the status; the pool's budget (its own tests)
		}
		name := ""
		if n, ok := a.(interface{ GetName() string }); ok {
			name = n.GetName()
		}
		if cr, ok := a.(k8stesting.CreateAction); ok {
			if m, ok := cr.GetObject().(interface{ GetName() string }); ok {
				name = m.GetName()
			}
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+" "+name)
	}
	return out
}

// scrape fetches url and parses the text exposition format into
// "name{labels}" -> value (client_golang writes label names sorted).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	return parseMetrics(t, string(body))
}

func parseMetrics(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("bad metrics line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad value in %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// series names one series of a per-pool metric.
func series(name, ns, pool string, extra ...string) string {
	l := `namespace="` + ns + `",pool="` + pool + `"`
	for i := 0; i+1 < len(extra); i += 2 {
		l += "," + extra[i] + `="` + extra[i+1] + `"`
	}
	return name + "{" + l + "}"
}

func serve(t *testing.T, c *Controller) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return srv
}
