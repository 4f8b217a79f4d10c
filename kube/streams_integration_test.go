//go:build integration

package kube_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// watchCounter counts the WATCH requests that leave a client, by resource.
type watchCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *watchCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return watchRoundTrip(func(req *http.Request) (*http.Response, error) {
		// The informers' watches; the engine's waits for one object (a
		// fieldSelector on its name) are short by design and not counted.
		if q := req.URL.Query(); kube.LongRunning(req) && q.Get("watch") != "" && q.Get("fieldSelector") == "" {
			parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
			c.mu.Lock()
			c.n[parts[len(parts)-1]]++
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (c *watchCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

type watchRoundTrip func(*http.Request) (*http.Response, error)

func (f watchRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The dashboard's informers and the reconciler's (reconcile --all --watch)
// keep their watches open on an idle namespace, even with a request timeout
// far shorter than the window: a client-side timeout would cut each watch
// and make the informers reconnect every time it ran out. The window is 30 s
// here (CTPOOL_STREAM_WINDOW for a longer run, as make soak does).
func TestIntegrationWatchesOutliveTheRequestTimeout(t *testing.T) {
	env := kubetest.Require(t)
	window := 30 * time.Second
	if v := os.Getenv("CTPOOL_STREAM_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		window = d
	}
	const timeout = 2 * time.Second
	o := kube.NewOptions()
	*o.Flags.KubeConfig = filepath.Join(env.Dir, "admin.kubeconfig")
	*o.Flags.Timeout = timeout.String()
	cfg, err := o.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	counter := &watchCounter{n: map[string]int{}}
	cfg.Wrap(counter.wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := engine.Spec{Image: pooltest.Image, CPU: "10m", Memory: "16Mi", Disk: "1Gi", Size: 1}
	spec.Default()
	if _, err := pooltest.Engine(env).Apply(ctx, "idle", spec); err != nil {
		t.Fatal(err)
	}

	w := kube.NewWatcher(cs, env.Namespace)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !w.WaitForSync(ctx) {
		t.Fatal("the dashboard's informers did not sync")
	}
	ctrl, err := controller.New(controller.Options{Client: cs, Namespace: env.Namespace, Resync: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()

	// Observe an idle window many times the request timeout.
	start := counter.counts()
	select {
	case <-time.After(window):
	case err := <-done:
		t.Fatalf("the reconciler stopped: %v", err)
	}
	end := counter.counts()
	cancel()
	<-done

	// Two clients (dashboard and reconciler) watch each resource; each
	// informer may open its watch once after the start count and, rarely,
	// once more when the API server's own watch timeout (5 to 10 minutes)
	// ends one. With the request timeout cutting watches it would be about
	// window/timeout each.
	limit := 2 * (2 + int(window/(5*time.Minute)))
	var names []string
	for k := range end {
		names = append(names, k)
	}
	sort.Strings(names)
	total := 0
	for _, r := range names {
		n := end[r] - start[r]
		total += n
		t.Logf("%s: %d WATCH requests in %s (%d before the window)", r, n, window, start[r])
		if n > limit {
			t.Errorf("%s: %d WATCH requests in %s with --request-timeout %s; want at most %d", r, n, window, timeout, limit)
		}
	}
	for _, r := range []string{"configmaps", "pods", "persistentvolumeclaims", "leases"} {
		if end[r] == 0 {
			t.Errorf("no watch of %s was seen: the counter does not see the informers", r)
		}
	}
	t.Logf("%d WATCH requests in %s over %d resources", total, window, len(names))
}
