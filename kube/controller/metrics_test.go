package controller

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"

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
	if _, err := c.sync(ctx, engine.PoolRef{Namespace: testNS, Name: "desk"}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	snap, err := kube.NewCluster(client, testNS).Snapshot(ctx, "desk")
	if err != nil {
		t.Fatal(err)
	}
	v := engine.Observe(snap, testNow)
	st := v.Status
	m := scrape(t, srv.URL+"/metrics")
	gauge := func(key string) float64 {
		t.Helper()
		x, ok := m[key]
		if !ok {
			t.Fatalf("no series %s", key)
		}
		return x
	}
	for _, g := range []struct {
		name, state string // the series: name{namespace, pool[, state]}
		alias       string // its deprecated name, or ""
		observed    int
		literally   int
	}{
		{"ctpool_pool_desired_members", "", "ctpool_pool_desired", st.Desired, 5},
		{"ctpool_pool_members", "ready", "ctpool_pool_ready", st.Ready, 3},
		{"ctpool_pool_members", "claimed", "ctpool_pool_claimed", st.Claimed, 3},
		{"ctpool_pool_members", "free", "ctpool_pool_free", st.Free, 1},
		{"ctpool_pool_members", "unschedulable", "ctpool_pool_unschedulable", st.Unschedulable, 1},
		{"ctpool_pool_members", "drifted", "ctpool_pool_drifted", st.Drifted, 1},
		{"ctpool_pool_members", "failed", "ctpool_pool_failed", st.Failed, 1},
		{"ctpool_pool_exhausted", "", "", map[bool]int{true: 1}[st.Exhausted], 0},
		{"ctpool_pool_claims_expiring", "", "", ClaimsExpiring(v, testNow), 1},
		{"ctpool_pool_members", "maintenance_stale", "", 0, 0},
	} {
		key := series(g.name, testNS, "desk")
		if g.state != "" {
			key = series(g.name, testNS, "desk", "state", g.state)
		}
		got := gauge(key)
		if got != float64(g.observed) || got != float64(g.literally) {
			t.Errorf("%s = %v; Observe says %d, want %d", key, got, g.observed, g.literally)
		}
		if g.alias != "" {
			if old := gauge(series(g.alias, testNS, "desk")); old != got {
				t.Errorf("deprecated %s = %v, %s = %v", g.alias, old, key, got)
			}
		}
	}
	members := 0
	for k := range m {
		if strings.HasPrefix(k, "ctpool_pool_members{") {
			members++
		}
	}
	if members != 7 {
		t.Errorf("%d ctpool_pool_members series, want one per state (7)", members)
	}
	// A fixed pool has no elastic series and, with one sample of history, no forecast.
	for _, name := range []string{"ctpool_pool_exhausted_at_ceiling", "ctpool_pool_max_members", "ctpool_pool_exhaustion_forecast_seconds"} {
		if _, ok := m[series(name, testNS, "desk")]; ok {
			t.Errorf("a fixed pool without history has the series %s", name)
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
		s, _ := c.set.snapshot(ctx, engine.PoolRef{Namespace: testNS, Name: "desk"})
		return s.ConfigMap == nil
	})
	if _, err := c.sync(ctx, engine.PoolRef{Namespace: testNS, Name: "desk"}); err == nil {
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

// TestDeprecatedGaugesSayWhatReplacesThem: every gauge of one state has a
// HELP that marks it deprecated and names a metric the registry exports.
func TestDeprecatedGaugesSayWhatReplacesThem(t *testing.T) {
	c := newTestController(t, fake.NewClientset(seededPool()...), nil)
	if _, err := c.sync(context.Background(), engine.PoolRef{Namespace: testNS, Name: "desk"}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	fams, err := c.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	help := map[string]string{}
	for _, f := range fams {
		help[f.GetName()] = f.GetHelp()
	}
	for _, tc := range []struct{ old, use string }{
		{"ctpool_pool_desired", "ctpool_pool_desired_members"},
		{"ctpool_pool_ready", `ctpool_pool_members{state="ready"}`},
		{"ctpool_pool_claimed", `ctpool_pool_members{state="claimed"}`},
		{"ctpool_pool_free", `ctpool_pool_members{state="free"}`},
		{"ctpool_pool_unschedulable", `ctpool_pool_members{state="unschedulable"}`},
		{"ctpool_pool_drifted", `ctpool_pool_members{state="drifted"}`},
		{"ctpool_pool_failed", `ctpool_pool_members{state="failed"}`},
	} {
		h, ok := help[tc.old]
		if !ok {
			t.Errorf("%s is not exported", tc.old)
			continue
		}
		if !strings.HasPrefix(h, "Deprecated: use "+tc.use+" ") {
			t.Errorf("HELP of %s = %q, want it deprecated for %s", tc.old, h, tc.use)
		}
		if name, _, _ := strings.Cut(tc.use, "{"); strings.HasPrefix(help[name], "Deprecated") || help[name] == "" {
			t.Errorf("%s names %s as its replacement, which is not exported or deprecated too", tc.old, name)
		}
	}
	for name, h := range help {
		if strings.HasPrefix(h, "Deprecated") && !strings.HasPrefix(name, "ctpool_pool_") {
			t.Errorf("%s is deprecated unexpectedly", name)
		}
	}
}

// wq names one series of a work queue metric of the controller's queue.
func wq(name string) string { return name + `{name="` + queueName + `"}` }

// TestWorkQueueMetrics runs the workers on two pools, one of which fails its
// first Pod create, and checks the queue's series once it is idle: every add
// was taken and finished, every failed reconcile was one retry.
func TestWorkQueueMetrics(t *testing.T) {
	spec := testSpec("img:1", 2)
	client := fake.NewClientset(append(convergedPool("art", 1), engine.BuildConfigMap(testNS, "desk", spec))...)
	var failedOnce atomic.Bool
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if strings.HasPrefix(p.Name, "desk-") && failedOnce.CompareAndSwap(false, true) {
			return true, nil, errors.New("boom: quota exceeded")
		}
		return false, nil, nil
	})
	var failed, reconciled atomic.Int64
	c, err := New(Options{
		Client: client, Namespace: testNS, Workers: 2, Resync: time.Hour, Settle: -1,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[engine.PoolRef](time.Millisecond, time.Second),
		Report: func(_ engine.PoolRef, _ engine.ReconcileResult, err error, _ time.Duration) {
			reconciled.Add(1)
			if err != nil {
				failed.Add(1)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, c)
	// Before any work: the series exist, at zero.
	m := scrape(t, srv.URL+"/metrics")
	for _, name := range []string{"ctpool_workqueue_depth", "ctpool_workqueue_adds_total", "ctpool_workqueue_retries_total",
		"ctpool_workqueue_queue_duration_seconds_count", "ctpool_workqueue_work_duration_seconds_count",
		"ctpool_workqueue_unfinished_work_seconds", "ctpool_workqueue_longest_running_processor_seconds"} {
		if v, ok := m[wq(name)]; !ok || v != 0 {
			t.Errorf("before Run: %s = %v (present %v), want 0", wq(name), v, ok)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	// Idle: desk has both Pods (the retry made the one that failed), nothing
	// waits, and every add counted was taken (queue duration) and finished
	// (work duration).
	// The Pods are listed before the scrape: a scrape that shows the queue
	// idle then comes after the retry's reconcile finished.
	waitFor(t, 10*time.Second, "the work queue to be idle with desk's 2 Pods", func() bool {
		pods, err := client.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: engine.LabelPool + "=desk"})
		if err != nil || len(pods.Items) != 2 {
			return false
		}
		m = scrape(t, srv.URL+"/metrics")
		adds := m[wq("ctpool_workqueue_adds_total")]
		return m[wq("ctpool_workqueue_depth")] == 0 &&
			m[wq("ctpool_workqueue_queue_duration_seconds_count")] == adds &&
			m[wq("ctpool_workqueue_work_duration_seconds_count")] == adds &&
			float64(reconciled.Load()) == adds
	})
	for _, tc := range []struct {
		series string
		want   func(float64) bool
		what   string
	}{
		{wq("ctpool_workqueue_depth"), func(v float64) bool { return v == 0 }, "0"},
		// art, desk at the first resync, desk's retry at least.
		{wq("ctpool_workqueue_adds_total"), func(v float64) bool { return v >= 3 }, ">= 3"},
		{wq("ctpool_workqueue_queue_duration_seconds_count"), func(v float64) bool { return v >= 3 }, ">= 3"},
		{wq("ctpool_workqueue_work_duration_seconds_count"), func(v float64) bool { return v >= 3 }, ">= 3"},
		{wq("ctpool_workqueue_work_duration_seconds_sum"), func(v float64) bool { return v > 0 }, "> 0"},
		// With no settle delay, the only delayed adds are the retries.
		{wq("ctpool_workqueue_retries_total"), func(v float64) bool { return v == float64(failed.Load()) && v >= 1 }, "the failed reconciles (>= 1)"},
		{series("ctpool_reconcile_errors_total", testNS, "desk", "step", "create"), func(v float64) bool { return v == 1 }, "1"},
		// Set every 500ms by the queue: present here, exercised by
		// TestWorkQueueShowsAStuckReconcile.
		{wq("ctpool_workqueue_unfinished_work_seconds"), func(v float64) bool { return v >= 0 }, "present"},
		{wq("ctpool_workqueue_longest_running_processor_seconds"), func(v float64) bool { return v >= 0 }, "present"},
	} {
		v, ok := m[tc.series]
		if !ok || !tc.want(v) {
			t.Errorf("%s = %v (present %v), want %s", tc.series, v, ok, tc.what)
		}
	}
	// The histograms' buckets are cumulative up to +Inf, which is the count.
	for _, h := range []string{"ctpool_workqueue_queue_duration_seconds", "ctpool_workqueue_work_duration_seconds"} {
		inf := m[h+`_bucket{name="`+queueName+`",le="+Inf"}`]
		if inf != m[wq(h+"_count")] {
			t.Errorf("%s: +Inf bucket %v, count %v", h, inf, m[wq(h+"_count")])
		}
	}
}

// TestWorkQueueShowsAStuckReconcile: while a reconcile hangs (a Pod create
// that does not answer), the unfinished-work gauges grow; once it returns,
// they fall back to zero.
func TestWorkQueueShowsAStuckReconcile(t *testing.T) {
	client := fake.NewClientset(engine.BuildConfigMap(testNS, "desk", testSpec("img:1", 1)))
	hang, entered := make(chan struct{}), make(chan struct{}, 1)
	client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-hang
		return false, nil, nil
	})
	c, err := New(Options{Client: client, Namespace: testNS, Workers: 1, Resync: time.Hour, Settle: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	released := false
	release := func() {
		if !released {
			released = true
			close(hang)
		}
	}
	defer func() {
		release()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no Pod create within 10s")
	}
	unfinished, longest := wq("ctpool_workqueue_unfinished_work_seconds"), wq("ctpool_workqueue_longest_running_processor_seconds")
	var m map[string]float64
	waitFor(t, 10*time.Second, "the unfinished work to show", func() bool {
		m = scrape(t, srv.URL+"/metrics")
		return m[longest] > 0
	})
	if m[unfinished] < m[longest] {
		t.Errorf("unfinished work %vs is less than the longest reconcile's %vs", m[unfinished], m[longest])
	}
	if m[wq("ctpool_workqueue_work_duration_seconds_count")] != 0 {
		t.Errorf("a reconcile finished while the only worker hangs: %v", m)
	}
	release()
	waitFor(t, 10*time.Second, "the unfinished work to go back to 0", func() bool {
		m = scrape(t, srv.URL+"/metrics")
		return m[wq("ctpool_workqueue_work_duration_seconds_count")] >= 1 && m[unfinished] == 0 && m[longest] == 0
	})
}

// TestMetricsElasticAndForecast: an elastic pool's bounds, its ceiling and
// the forecast come from the status the reconcile recorded; a pool that is
// no longer elastic loses those series.
func TestMetricsElasticAndForecast(t *testing.T) {
	m := newMetrics(&Controller{})
	k := engine.PoolRef{Namespace: testNS, Name: "el"}
	three := 3
	spec := engine.Spec{Image: "img", Size: 2, MinSize: 2, MaxSize: 10, Spare: &three}
	spec.Default()
	// An hour of claims at 12 an hour: 10 claimed, 2 free now, at size 12... of max 10: at the ceiling.
	var h engine.History
	start := testNow.Add(-time.Hour)
	for i := 0; i <= 12; i++ {
		h = h.Add(engine.Sample{At: start.Add(time.Duration(i) * 5 * time.Minute), Claimed: i * 10 / 12, Free: 10 - i*10/12, Size: 10})
	}
	rec := engine.Status{Desired: 10, Claimed: 10, Free: 0, Exhausted: true, History: &h,
		Elastic: &engine.ElasticStatus{Size: 10, From: 2, AtCeiling: true}}
	cm := engine.BuildConfigMap(testNS, "el", spec)
	cm.Data[engine.KeyStatus] = rec.Encode()
	snap := engine.Snapshot{Namespace: testNS, Pool: "el", ConfigMap: cm}
	gather := func() map[string]float64 {
		mfs, err := m.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			for _, mt := range mf.GetMetric() {
				if mt.GetGauge() != nil && len(mt.GetLabel()) == 2 {
					out[mf.GetName()] = mt.GetGauge().GetValue()
				}
			}
		}
		return out
	}
	m.record(k, engine.ReconcileResult{Status: rec}, nil, &snap, nil, testNow, time.Millisecond)
	got := gather()
	for name, want := range map[string]float64{
		"ctpool_pool_exhausted_at_ceiling": 1, "ctpool_pool_min_members": 2, "ctpool_pool_max_members": 10, "ctpool_pool_spare_members": 3,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	if _, ok := got["ctpool_pool_exhaustion_forecast_seconds"]; !ok {
		t.Error("no exhaustion forecast for a pool whose claims rose for an hour")
	}
	if ts := got["ctpool_reconcile_last_success_timestamp_seconds"]; ts != float64(testNow.Unix()) {
		t.Errorf("last success %v, want %d", ts, testNow.Unix())
	}
	// Made fixed again, with a flat history: the elastic series and the forecast go.
	fixed := spec.Fixed(10)
	flat := engine.History{}
	for i := 0; i <= 12; i++ {
		flat = flat.Add(engine.Sample{At: start.Add(time.Duration(i) * 5 * time.Minute), Claimed: 4, Free: 6, Size: 10})
	}
	rec = engine.Status{Desired: 10, Claimed: 4, Free: 6, History: &flat}
	cm = engine.BuildConfigMap(testNS, "el", fixed)
	cm.Data[engine.KeyStatus] = rec.Encode()
	snap.ConfigMap = cm
	m.record(k, engine.ReconcileResult{Status: rec}, nil, &snap, nil, testNow, time.Millisecond)
	got = gather()
	for _, name := range []string{"ctpool_pool_exhausted_at_ceiling", "ctpool_pool_min_members", "ctpool_pool_max_members", "ctpool_pool_spare_members", "ctpool_pool_exhaustion_forecast_seconds", "ctpool_pool_ceiling_forecast_seconds"} {
		if _, ok := got[name]; ok {
			t.Errorf("%s still exported for a fixed pool at rest", name)
		}
	}
}

// ctpool_pool_rollout_halted follows the rollout a reconcile recorded, and
// the pool's recorded one when the reconcile recorded none; a rollout of an
// earlier definition is no halt of this one.
func TestMetricsRolloutHalted(t *testing.T) {
	m := newMetrics(&Controller{})
	k := engine.PoolRef{Namespace: testNS, Name: "lab"}
	spec := engine.Spec{Image: "img:2", Size: 4}
	spec.Default()
	halted := &engine.RolloutStatus{Source: spec.SourceHash(), Image: spec.Image, Halted: "rollout of img:2 halted: ...", HaltedAt: &testNow}
	value := func() float64 {
		mfs, err := m.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "ctpool_pool_rollout_halted" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no ctpool_pool_rollout_halted series")
		return 0
	}
	snapWith := func(rec *engine.RolloutStatus) *engine.Snapshot {
		cm := engine.BuildConfigMap(testNS, "lab", spec)
		cm.Data[engine.KeyStatus] = engine.Status{Desired: 4, Rollout: rec}.Encode()
		return &engine.Snapshot{Namespace: testNS, Pool: "lab", ConfigMap: cm}
	}
	for _, tc := range []struct {
		name     string
		res, rec *engine.RolloutStatus
		want     float64
	}{
		{"halted by this reconcile", halted, nil, 1},
		{"recorded halted, nothing recorded now", nil, halted, 1},
		{"resumed by this reconcile", &engine.RolloutStatus{Source: spec.SourceHash()}, halted, 0},
		{"the halt of an earlier definition", nil, &engine.RolloutStatus{Source: "earlier", Halted: "x"}, 0},
	} {
		m.record(k, engine.ReconcileResult{Rollout: tc.res}, nil, snapWith(tc.rec), nil, testNow, time.Millisecond)
		if got := value(); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
