package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

func TestHandlersEnqueueThePoolOfTheObject(t *testing.T) {
	c := newTestController(t, fake.NewClientset(), nil)
	pod := engine.BuildPod(testNS, "desk", 1, testSpec("img:1", 1))
	pvc := engine.BuildPVC(testNS, "desk", 1, testSpec("img:1", 1))
	unlabelled := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: testNS}}
	bogus := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: testNS, Labels: map[string]string{engine.LabelPool: "Not_A_Pool"}}}
	moved := pod.DeepCopy()
	moved.Labels[engine.LabelPool] = "art"
	desk, art := engine.PoolRef{Namespace: testNS, Name: "desk"}, engine.PoolRef{Namespace: testNS, Name: "art"}

	cases := []struct {
		name  string
		fire  func()
		want  []engine.PoolRef
		extra string
	}{
		{"a Pod update enqueues its pool once", func() { c.onUpdate(pod, pod); c.onUpdate(pod, pod) }, []engine.PoolRef{desk}, ""},
		{"events on several kinds of one pool coalesce", func() { c.onAdd(pod); c.onAdd(pvc); c.onDelete(pod) }, []engine.PoolRef{desk}, ""},
		{"an unlabelled object enqueues nothing", func() { c.onAdd(unlabelled); c.onUpdate(unlabelled, unlabelled); c.onDelete(unlabelled) }, nil, ""},
		{"a label that is no pool name enqueues nothing", func() { c.onAdd(bogus) }, nil, ""},
		{"a tombstone enqueues its pool", func() { c.onDelete(cache.DeletedFinalStateUnknown{Key: "vdi/desk-1", Obj: pod}) }, []engine.PoolRef{desk}, ""},
		{"a relabelled object enqueues both pools", func() { c.onUpdate(pod, moved) }, []engine.PoolRef{art, desk}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.fire()
			got := drainQueue(c)
			if len(got) != len(tc.want) {
				t.Fatalf("queued %v, want %v", got, tc.want)
			}
			seen := map[engine.PoolRef]bool{}
			for _, k := range got {
				seen[k] = true
			}
			for _, k := range tc.want {
				if !seen[k] {
					t.Errorf("queued %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestSinglePoolControllerIgnoresOtherPools(t *testing.T) {
	c := newTestController(t, fake.NewClientset(), func(o *Options) { o.Pool = "desk" })
	c.onAdd(engine.BuildPod(testNS, "art", 1, testSpec("img:1", 1)))
	c.onAdd(engine.BuildPod("other", "desk", 1, testSpec("img:1", 1)))
	if n := c.queue.Len(); n != 0 {
		t.Fatalf("queued %d keys of other pools", n)
	}
	c.enqueueAll() // the single pool is resynced even without a definition
	if got := drainQueue(c); len(got) != 1 || got[0] != (engine.PoolRef{Namespace: testNS, Name: "desk"}) {
		t.Fatalf("resync queued %v", got)
	}
}

// Through the informers: a change to a member Pod on the API enqueues the
// pool, once.
func TestPodChangeOnTheAPIEnqueuesItsPoolOnce(t *testing.T) {
	client := fake.NewClientset(convergedPool("desk", 2)...)
	c := newTestController(t, client, nil)
	drainQueue(c) // the initial list's adds
	ctx := context.Background()
	pod, err := client.CoreV1().Pods(testNS).Get(ctx, "desk-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodFailed
	if _, err := client.CoreV1().Pods(testNS).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the pool to be queued", func() bool { return c.queue.Len() > 0 })
	if got := drainQueue(c); len(got) != 1 || got[0] != (engine.PoolRef{Namespace: testNS, Name: "desk"}) {
		t.Fatalf("queued %v, want [vdi/desk]", got)
	}
	// An object without the pool label: nothing.
	if _, err := client.CoreV1().Pods(testNS).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: testNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods(testNS).Create(ctx, readyPod(engine.BuildPod(testNS, "desk", 9, testSpec("img:1", 1))), metav1.CreateOptions{}); err != nil {
		t.Fatal(err) // a sentinel after the unlabelled Pod: once it is queued, so would the other be
	}
	waitFor(t, 5*time.Second, "the sentinel", func() bool { return c.queue.Len() > 0 })
	if got := drainQueue(c); len(got) != 1 || got[0] != (engine.PoolRef{Namespace: testNS, Name: "desk"}) {
		t.Fatalf("queued %v, want only vdi/desk", got)
	}
}

// recordingLimiter records the delays it hands out.
type recordingLimiter struct {
	workqueue.TypedRateLimiter[engine.PoolRef]
	mu     sync.Mutex
	delays map[engine.PoolRef][]time.Duration
}

func (r *recordingLimiter) When(k engine.PoolRef) time.Duration {
	d := r.TypedRateLimiter.When(k)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delays[k] = append(r.delays[k], d)
	return d
}

func TestFailingPoolRequeuesWithBackoffAndOthersGoOn(t *testing.T) {
	spec := testSpec("img:1", 2)
	client := fake.NewClientset(engine.BuildConfigMap(testNS, "bad", spec), engine.BuildConfigMap(testNS, "good", spec))
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod); strings.HasPrefix(p.Name, "bad-") {
			return true, nil, errors.New("boom: quota exceeded")
		}
		return false, nil, nil
	})
	lim := &recordingLimiter{
		TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[engine.PoolRef](time.Millisecond, time.Second),
		delays:           map[engine.PoolRef][]time.Duration{},
	}
	c := newTestController(t, client, func(o *Options) { o.RateLimiter = lim })
	srv := serve(t, c)
	drainQueue(c)
	bad, good := engine.PoolRef{Namespace: testNS, Name: "bad"}, engine.PoolRef{Namespace: testNS, Name: "good"}
	c.queue.Add(bad)
	c.queue.Add(good)
	ctx := context.Background()
	for range 2 {
		if !c.processNext(ctx) {
			t.Fatal("queue shut down")
		}
	}
	if n := c.queue.NumRequeues(bad); n != 1 {
		t.Errorf("bad pool requeued %d times, want 1", n)
	}
	if n := c.queue.NumRequeues(good); n != 0 {
		t.Errorf("good pool requeued %d times, want 0", n)
	}
	pods, _ := client.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 2 {
		t.Errorf("good pool has %d Pods, want 2", len(pods.Items))
	}
	// The retry comes after the backoff, and the next one after a longer one.
	if !c.processNext(ctx) {
		t.Fatal("queue shut down")
	}
	if n := c.queue.NumRequeues(bad); n != 2 {
		t.Errorf("bad pool requeued %d times, want 2", n)
	}
	d := lim.delays[bad]
	if len(d) != 2 || !(d[1] > d[0]) {
		t.Errorf("backoff delays %v, want two, increasing", d)
	}
	if len(lim.delays[good]) != 0 {
		t.Errorf("the good pool was rate limited: %v", lim.delays[good])
	}
	m := scrape(t, srv.URL+"/metrics")
	// The first run fails to create both Pods (the PVCs exist then), the
	// second to start them.
	for _, step := range []string{"create", "start"} {
		if v := m[series("ctpool_reconcile_errors_total", testNS, "bad", "step", step)]; v != 2 {
			t.Errorf("%s errors of bad = %v, want 2", step, v)
		}
	}
	if v := m[series("ctpool_reconcile_actions_total", testNS, "good", "step", "create")]; v != 2 {
		t.Errorf("create actions of good = %v, want 2", v)
	}
	if _, ok := m[series("ctpool_reconcile_errors_total", testNS, "good", "step", "create")]; ok {
		t.Error("the good pool has an error series")
	}
}

func TestRunReconcilesEveryPoolAndStopsOnCancel(t *testing.T) {
	objs := append(convergedPool("desk", 1), engine.BuildConfigMap(testNS, "art", testSpec("img:1", 2)))
	client := fake.NewClientset(objs...)
	c, err := New(Options{Client: client, Namespace: testNS, Workers: 2, Resync: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	waitFor(t, 10*time.Second, "art to get 2 Pods", func() bool {
		l, _ := client.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: engine.LabelPool + "=art"})
		return len(l.Items) == 2
	})
	if !c.Leading() || c.Ready() != nil {
		t.Errorf("leading %v ready %v", c.Leading(), c.Ready())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if c.Leading() {
		t.Error("still leading after stop")
	}
}

// needsWork must agree with what the engine does: a reconcile on the cache
// writes to a member exactly when needsWork says so.
func TestNeedsWorkAgreesWithTheEngine(t *testing.T) {
	spec := testSpec("img:2", 3)
	old := testSpec("img:1", 3)
	base := func() []runtime.Object { return convergedPool("desk", 3) }
	with := func(objs []runtime.Object, drop string, add ...runtime.Object) []runtime.Object {
		var out []runtime.Object
		for _, o := range objs {
			if m, ok := o.(metav1.Object); ok && m.GetName() == drop {
				continue
			}
			out = append(out, o)
		}
		return append(out, add...)
	}
	claim := engine.ClaimLease(testNS, "desk", "desk-1", "alice", testNow)
	staleLock := engine.ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-time.Hour))
	freshLock := engine.ReconcilerLease(testNS, "desk", "desk-1", testNow)
	claim.ResourceVersion, staleLock.ResourceVersion, freshLock.ResourceVersion = "1", "1", "1" // the fake sets none
	cm := engine.BuildConfigMap(testNS, "desk", spec)
	drifted := func() []runtime.Object {
		objs := []runtime.Object{cm}
		for i := 1; i <= 3; i++ {
			objs = append(objs, member("desk", i, old)...)
		}
		return objs
	}
	// marked gives every Pod of objs the claim marks (engine.ClaimMarked).
	marked := func(objs []runtime.Object) []runtime.Object {
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				p.Labels[engine.LabelClaimed] = "true"
				p.Annotations[engine.AnnotationSafeToEvict] = "false"
			}
		}
		return objs
	}
	cases := []struct {
		name string
		objs []runtime.Object
		want bool
	}{
		{"converged", base(), false},
		{"missing member", with(with(base(), "desk-2"), "desk-2-data"), true},
		{"stopped member", with(base(), "desk-2"), true},
		{"drifted unclaimed", drifted(), true},
		{"drifted, all claimed", append(marked(drifted()), claim,
			engine.ClaimLease(testNS, "desk", "desk-2", "bob", testNow), engine.ClaimLease(testNS, "desk", "desk-3", "carol", testNow)), false},
		// Claimed by a broker that wrote only the Leases: their Pods get
		// the claim marks.
		{"drifted, all claimed, unmarked", append(drifted(), claim,
			engine.ClaimLease(testNS, "desk", "desk-2", "bob", testNow), engine.ClaimLease(testNS, "desk", "desk-3", "carol", testNow)), true},
		// A claimed member that lost its Pod is started again for its user.
		{"claimed member is missing its Pod", append(with(base(), "desk-1"), claim), true},
		{"above size", append(base(), member("desk", 4, testSpec("registry.example/desktop:1", 3))...), true},
		{"stale reconciler lease", append(base(), staleLock), true},
		{"fresh reconciler lease on a stopped member", append(with(base(), "desk-1"), freshLock), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objs...)
			c := newTestController(t, client, func(o *Options) { o.Reads = ReadCache })
			snap, err := c.set.snapshot(context.Background(), engine.PoolRef{Namespace: testNS, Name: "desk"})
			if err != nil {
				t.Fatal(err)
			}
			got := needsWork(engine.Observe(snap, testNow))
			client.ClearActions()
			if _, err := c.sync(context.Background(), engine.PoolRef{Namespace: testNS, Name: "desk"}); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			writes := memberWrites(client)
			if got != tc.want || got != (len(writes) > 0) {
				t.Fatalf("needsWork %v, want %v; the engine wrote %v", got, tc.want, writes)
			}
		})
	}
}

// With the default reads, a pool in line costs no API request at all (its
// PodDisruptionBudget too is read from a cache), and a pool with work is
// read fresh before the engine acts.
func TestHybridReadsGoFreshOnlyForWork(t *testing.T) {
	client := fake.NewClientset(append(convergedPool("desk", 2), engine.BuildConfigMap(testNS, "art", testSpec("img:1", 1)))...)
	c := newTestController(t, client, nil)
	ctx := context.Background()
	if _, err := c.sync(ctx, engine.PoolRef{Namespace: testNS, Name: "desk"}); err != nil { // records the status once
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the status in the cache", func() bool {
		s, _ := c.set.snapshot(ctx, engine.PoolRef{Namespace: testNS, Name: "desk"})
		return s.ConfigMap != nil && s.ConfigMap.Data[engine.KeyStatus] != "" && s.DisruptionBudget != nil
	})
	client.ClearActions()
	if _, err := c.sync(ctx, engine.PoolRef{Namespace: testNS, Name: "desk"}); err != nil {
		t.Fatal(err)
	}
	if a := client.Actions(); len(a) != 0 {
		t.Fatalf("a reconcile of a pool in line made %d requests: %v", len(a), a)
	}
	if _, err := c.sync(ctx, engine.PoolRef{Namespace: testNS, Name: "art"}); err != nil {
		t.Fatal(err)
	}
	reads := map[string]int{}
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" {
			reads[a.GetResource().Resource]++
		}
	}
	if reads["configmaps"] == 0 || reads["pods"] == 0 || reads["leases"] == 0 {
		t.Fatalf("a reconcile with work did not read fresh: %v", reads)
	}

	// After a failed watch the cache is suspect for a while: the pool in
	// line is read fresh, then again from the cache once the window passed.
	for _, tc := range []struct {
		failedAgo time.Duration
		fresh     bool
	}{{time.Second, true}, {suspectWindow - time.Second, true}, {suspectWindow + time.Second, false}} {
		c.set.watchFailed(time.Now().Add(-tc.failedAgo))
		client.ClearActions()
		if _, err := c.sync(ctx, engine.PoolRef{Namespace: testNS, Name: "desk"}); err != nil {
			t.Fatal(err)
		}
		if fresh := len(client.Actions()) > 0; fresh != tc.fresh {
			t.Errorf("watch failed %s ago: fresh read %v, want %v (%v)", tc.failedAgo, fresh, tc.fresh, client.Actions())
		}
	}
}

// SIGTERM in the middle of a reconcile: the reconcile abandons its step,
// Run returns nil only once it has, and no member Lease is left behind.
func TestStopDuringAReconcileLeavesNoLease(t *testing.T) {
	client := fake.NewClientset(engine.BuildConfigMap(testNS, "desk", testSpec("img:1", 3)))
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	held := 0
	// The fake runs reactors under its lock: no blocking, no client calls here.
	client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		once.Do(func() {
			held++
			cancel() // SIGTERM arrives while the Pod is created
		})
		return false, nil, nil
	})
	c, err := New(Options{Client: client, Namespace: testNS, Resync: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the stop")
	}
	if held == 0 {
		t.Fatal("no Pod create happened")
	}
	created, deleted := 0, 0
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "leases" {
			switch a.GetVerb() {
			case "create":
				created++
			case "delete":
				deleted++
			}
		}
	}
	leases, _ := client.CoordinationV1().Leases(testNS).List(context.Background(), metav1.ListOptions{})
	if created == 0 || len(leases.Items) != 0 || deleted != created {
		t.Errorf("%d Leases taken, %d removed, %d left after the stop", created, deleted, len(leases.Items))
	}
}

// A failed /livez probe makes the cache suspect; the first answer after it
// enqueues every pool, once.
func TestProbeOutageAndRecovery(t *testing.T) {
	client := fake.NewClientset(append(convergedPool("desk", 1), engine.BuildConfigMap(testNS, "art", testSpec("img:1", 1)))...)
	c := newTestController(t, client, nil)
	drainQueue(c)
	now := time.Now()
	if c.set.suspect(now) {
		t.Fatal("suspect before any failure")
	}
	c.probed(nil)
	if n := c.QueueLen(); n != 0 {
		t.Fatalf("an answer without an outage enqueued %d pools", n)
	}
	c.probed(errors.New("connection refused"))
	c.probed(errors.New("connection refused"))
	if !c.set.suspect(time.Now()) || c.QueueLen() != 0 {
		t.Fatalf("during the outage: suspect %v, %d queued", c.set.suspect(time.Now()), c.QueueLen())
	}
	c.probed(nil)
	got := drainQueue(c)
	if len(got) != 2 {
		t.Fatalf("recovery enqueued %v, want both pools", got)
	}
	c.probed(nil)
	if n := c.QueueLen(); n != 0 {
		t.Fatalf("a second answer enqueued %d pools", n)
	}
}
