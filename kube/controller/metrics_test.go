package controller

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// seededPool has a bit of everything the engine leaves alone: desk-1 Ready
// and claimed, expiring in 5 minutes; desk-2 Ready and free; desk-3 drifted,
// Ready and claimed for 50 more minutes; desk-4 Unschedulable; desk-5 Failed
// under an expired claim.
func seededPool() []runtime.Object {
	spec := testSpec("img:2", 5)
	old := testSpec("img:1", 5)
	objs := []runtime.Object{engine.BuildConfigMap(testNS, "desk", spec)}
	objs = append(objs, member("desk", 1, spec)...)
	objs = append(objs, member("desk", 2, spec)...)
	objs = append(objs, member("desk", 3, old)...)
	unsched := engine.BuildPod(testNS, "desk", 4, spec)
	unsched.Status.Phase = corev1.PodPending
	unsched.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/4 nodes are available: 4 Insufficient cpu."}}
	failed := engine.BuildPod(testNS, "desk", 5, spec)
	failed.Status.Phase = corev1.PodFailed
	objs = append(objs, unsched, engine.BuildPVC(testNS, "desk", 4, spec), failed, engine.BuildPVC(testNS, "desk", 5, spec),
		engine.ClaimLease(testNS, "desk", "desk-1", "alice", testNow.Add(-55*time.Minute)),
		engine.ClaimLease(testNS, "desk", "desk-3", "bob", testNow.Add(-10*time.Minute)),
		engine.ClaimLease(testNS, "desk", "desk-5", "carol", testNow.Add(-2*time.Hour)),
	)
	return objs
}

func TestMetricsGaugesEqualObserve(t *testing.T) {
	client := fake.NewClientset(seededPool()...)
	c := newTestController(t, client, nil)
	srv := serve(t, c)
	ctx := context.Background()
	if _, err := c.sync(ctx, Key{testNS, "desk"}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	snap, err := kube.NewCluster(client, testNS).Snapshot(ctx, "desk")
	if err != nil {
		t.Fatal(err)
	}
	v := engine.Observe(snap, testNow)
	st := v.Status
	m := scrape(t, srv.URL+"/metrics")
	gauge := func(name string) float64 {
		t.Helper()
		x, ok := m[series(name, testNS, "desk")]
		if !ok {
			t.Fatalf("no series %s", series(name, testNS, "desk"))
		}
		return x
	}
	for _, g := range []struct {
		name      string
		observed  int
		literally int
	}{
		{"ctpool_pool_desired", st.Desired, 5},
		{"ctpool_pool_ready", st.Ready, 3},
		{"ctpool_pool_claimed", st.Claimed, 3},
		{"ctpool_pool_free", st.Free, 1},
		{"ctpool_pool_unschedulable", st.Unschedulable, 1},
		{"ctpool_pool_drifted", st.Drifted, 1},
		{"ctpool_pool_failed", st.Failed, 1},
		{"ctpool_pool_exhausted", map[bool]int{true: 1}[st.Exhausted], 0},
		{"ctpool_pool_claims_expiring", ClaimsExpiring(v, testNow), 1},
	} {
		if got := gauge(g.name); got != float64(g.observed) || got != float64(g.literally) {
			t.Errorf("%s = %v; Observe says %d, want %d", g.name, got, g.observed, g.literally)
		}
	}
	if n := m[series("ctpool_reconcile_duration_seconds_count", testNS, "desk")]; n != 1 {
		t.Errorf("reconcile count %v, want 1", n)
	}
	// Per step: the first read and the status always run; the replace step
	// ran on desk-3 and desk-5 (both skipped: claimed); nothing was missing,
	// stopped or above the size.
	for step, want := range map[string]float64{"read": 1, "replace": 1, "status": 1, "create": 0, "start": 0, "delete": 0} {
		if n := m[series("ctpool_reconcile_step_duration_seconds_count", testNS, "desk", "step", step)]; n != want {
			t.Errorf("step %s observed %v times, want %v", step, n, want)
		}
	}
	if m["ctpool_reconciler_leader"] != 0 {
		t.Error("leader gauge set without running workers")
	}

	// The pool is deleted: its series go.
	if err := client.CoreV1().ConfigMaps(testNS).Delete(ctx, engine.ConfigMapName("desk"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the cache to lose the definition", func() bool {
		s, _ := c.set.snapshot(ctx, Key{testNS, "desk"})
		return s.ConfigMap == nil
	})
	if _, err := c.sync(ctx, Key{testNS, "desk"}); err == nil {
		t.Fatal("reconcile of a deleted pool succeeded")
	}
	for k := range scrape(t, srv.URL+"/metrics") {
		if strings.Contains(k, `pool="desk"`) {
			t.Errorf("series %s left after the pool was deleted", k)
		}
	}
}

func TestHealthAndReadiness(t *testing.T) {
	c, err := New(Options{Client: fake.NewClientset(), Namespace: testNS})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, c)
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d", code)
	}
	if code := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before sync: %d, want 503", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	waitFor(t, 5*time.Second, "/readyz", func() bool { return get("/readyz") == http.StatusOK })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
