package demo

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const stepEvery = 250 * time.Millisecond

func newSim(t *testing.T, seed int64) (*Sim, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	s, err := New(Options{Seed: seed, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

// steps advances the clock and steps n times; each, when set, runs after every step.
func steps(t *testing.T, s *Sim, clk *fakeClock, n int, each func()) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		clk.Add(stepEvery)
		if err := s.Step(ctx); err != nil {
			t.Errorf("step at %s: %v", clk.Now().Format(time.TimeOnly), err)
		}
		if each != nil {
			each()
		}
	}
}

func views(t *testing.T, s *Sim, now time.Time) map[string]engine.PoolView {
	t.Helper()
	ctx := context.Background()
	pools, err := s.pools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]engine.PoolView{}
	for _, p := range pools {
		snap, err := s.eng.Cluster.Snapshot(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = engine.Observe(snap, now)
	}
	return out
}

// Within a minute of simulated time the dashboard has something to show for
// every state and marker, and the cluster looks like a working one.
func TestDemoShowsEveryStateAndMarkerWithinAMinute(t *testing.T) {
	for _, seed := range []int64{1, 7, 2026} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			s, clk := newSim(t, seed)
			seen := map[string]bool{}
			hostileRow := false
			deskReady, deskSize := 0, 0
			steps(t, s, clk, int(time.Minute/stepEvery), func() {
				vs := views(t, s, clk.Now())
				deskReady += vs["desk"].Status.Ready
				deskSize += vs["desk"].Spec.Size
				for _, v := range vs {
					for _, m := range v.Members {
						seen["state "+string(m.State)] = true
						seen["claimed"] = seen["claimed"] || m.Claimed
						seen["claim expired"] = seen["claim expired"] || m.Claimed && m.Claim.Expired
						seen["maintenance"] = seen["maintenance"] || m.InMaintenance()
						seen["drift"] = seen["drift"] || m.Drift
						seen["above size"] = seen["above size"] || m.AboveSize && m.Exists()
						hostileRow = hostileRow || strings.Contains(m.Message, "\x1b")
					}
				}
			})
			for _, want := range []string{
				"state Starting", "state Ready", "state Unschedulable", "state Failed", "state Stopped",
				"claimed", "claim expired", "maintenance", "drift", "above size",
			} {
				if !seen[want] {
					t.Errorf("%s never shown in the first minute", want)
				}
			}
			if !hostileRow {
				t.Error("no member row message carried hostile text")
			}
			if float64(deskReady) < 0.6*float64(deskSize) {
				t.Errorf("desk was %d%% Ready over the minute, want most", 100*deskReady/deskSize)
			}
			checkHealthyCluster(t, s, clk.Now())
		})
	}
}

func checkHealthyCluster(t *testing.T, s *Sim, now time.Time) {
	t.Helper()
	ctx := context.Background()
	vs := views(t, s, now)
	wantSize := map[string]int{"desk": 5, "gpu": 8, "kiosk": 12}
	claimed := 0
	for pool, size := range wantSize {
		v, ok := vs[pool]
		if !ok || !v.Defined {
			t.Errorf("pool %s does not exist", pool)
			continue
		}
		if sh := s.shrink; sh != nil && sh.pool == pool {
			size = sh.to
		}
		if v.Spec.Size != size || v.Status.Desired != size {
			t.Errorf("pool %s: size %d, desired %d, want %d", pool, v.Spec.Size, v.Status.Desired, size)
		}
		inSize := 0
		for _, m := range v.Members {
			if !m.AboveSize && m.Exists() {
				inSize++
			}
		}
		if inSize != size {
			t.Errorf("pool %s: %d members within the size, want %d", pool, inSize, size)
		}
		claimed += v.Status.Claimed
	}
	if claimed == 0 {
		t.Error("no member is claimed")
	}
	// No unclaimed desk member is stuck: each is Ready, a Pod being
	// replaced, or a failing one its backoff keeps for its logs. (A claimed
	// one is its user's: a claim may take a Starting member whose image
	// then fails to pull, and no reconcile replaces it.)
	for _, m := range vs["desk"].Members {
		backingOff := m.State == engine.StateFailed && m.Backoff != nil
		if m.State != engine.StateReady && !m.AboveSize && !m.Claimed && !backingOff && (m.Pod == nil || now.Sub(m.Created) > 8*time.Second) {
			t.Errorf("%s is %s since %s", m.Name, m.State, m.Created.Format(time.TimeOnly))
		}
	}
	unsched := 0
	for _, m := range vs["gpu"].Members {
		if m.State == engine.StateUnschedulable {
			unsched++
			if !strings.Contains(m.Message, "nodes are available") || !strings.Contains(m.Message, "Insufficient memory") {
				t.Errorf("%s: message %q, want the scheduler's", m.Name, m.Message)
			}
		}
	}
	if unsched == 0 {
		t.Error("gpu: no member is Unschedulable")
	}

	pvcs, err := s.client.CoreV1().PersistentVolumeClaims(s.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvs, err := s.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	volumes := map[string]string{}
	for _, pv := range pvs.Items {
		volumes[pv.Name] = string(pv.Spec.ClaimRef.UID)
	}
	for _, c := range pvcs.Items {
		if now.Sub(c.CreationTimestamp.Time) < 3*time.Second {
			continue // still being provisioned
		}
		if c.Status.Phase != corev1.ClaimBound || volumes[c.Spec.VolumeName] != string(c.UID) {
			t.Errorf("PVC %s: phase %s, volume %q", c.Name, c.Status.Phase, c.Spec.VolumeName)
		}
	}
	if len(volumes) > len(pvcs.Items) {
		t.Errorf("%d volumes for %d claims: released volumes are not deleted", len(volumes), len(pvcs.Items))
	}

	events, err := s.client.CoreV1().Events(s.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	hostile := false
	for _, e := range events.Items {
		reasons[e.Reason] = true
		hostile = hostile || strings.Contains(e.Message, "\x1b]52;")
		if e.InvolvedObject.UID == "" || e.Count < 1 || e.LastTimestamp.IsZero() || e.Source.Component == "" {
			t.Errorf("event %s is incomplete: %+v", e.Name, e)
		}
	}
	for _, r := range []string{"Scheduled", "FailedScheduling", "Pulling", "Pulled", "Created", "Started", "Killing",
		"BackOff", "Failed", "ExternalProvisioning", "Provisioning", "ProvisioningSucceeded"} {
		if !reasons[r] {
			t.Errorf("no %s event", r)
		}
	}
	if !hostile {
		t.Error("no event carries the OSC 52 text")
	}
}

// podPhases lists "name phase node" of every Pod and "lease holder" of every Lease.
func podPhases(t *testing.T, s *Sim) []string {
	t.Helper()
	ctx := context.Background()
	pods, err := s.client.CoreV1().Pods(s.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, fmt.Sprintf("pod %s %s %s", p.Name, p.Status.Phase, p.Spec.NodeName))
	}
	leases, err := s.client.CoordinationV1().Leases(s.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		out = append(out, fmt.Sprintf("lease %s %s", l.Name, *l.Spec.HolderIdentity))
	}
	sort.Strings(out)
	return out
}

func TestDemoIsDeterministic(t *testing.T) {
	a, ca := newSim(t, 42)
	b, cb := newSim(t, 42)
	steps(t, a, ca, 300, nil)
	steps(t, b, cb, 300, nil)
	pa, pb := podPhases(t, a), podPhases(t, b)
	if strings.Join(pa, "\n") != strings.Join(pb, "\n") {
		t.Errorf("same seed and clock, different clusters:\n%s\n---\n%s", strings.Join(pa, "\n"), strings.Join(pb, "\n"))
	}
	c, cc := newSim(t, 43)
	steps(t, c, cc, 300, nil)
	if strings.Join(pa, "\n") == strings.Join(podPhases(t, c), "\n") {
		t.Error("seeds 42 and 43 gave the same cluster")
	}
}

// The dashboard acts on the same clientset through its own engine: the
// simulation schedules and starts what a resize creates, and copes with a
// force-release and a deleted pool.
func TestDemoCopesWithDashboardActions(t *testing.T) {
	s, clk := newSim(t, 5)
	ctx := context.Background()
	steps(t, s, clk, 40, nil)
	dash := &engine.Engine{Cluster: kube.NewCluster(s.Client(), s.opts.Namespace), Namespace: s.opts.Namespace, Now: clk.Now}

	// desk members take 1 cpu and 2Gi: the two nodes hold 16 of 20.
	if _, err := dash.Resize(ctx, "desk", 20); err != nil {
		t.Fatalf("resize: %v", err)
	}
	steps(t, s, clk, 40, nil)
	desk := views(t, s, clk.Now())["desk"]
	unsched := 0
	for _, m := range desk.Members {
		if m.State == engine.StateUnschedulable {
			unsched++
			if !strings.Contains(m.Message, "Insufficient cpu") || !strings.Contains(m.Message, "untolerated taint {virtual-kubelet.io/provider: sandboxd}") {
				t.Errorf("%s: message %q", m.Name, m.Message)
			}
		}
	}
	if desk.Status.Ready < 12 || unsched != 4 {
		t.Errorf("desk at size 20: %d Ready, %d Unschedulable; want most Ready and 4 Unschedulable", desk.Status.Ready, unsched)
	}

	// Force-release every kiosk claim, then delete the pool.
	for _, m := range views(t, s, clk.Now())["kiosk"].Members {
		if m.Claimed {
			if _, err := dash.ForceRelease(ctx, "kiosk", m.Name); err != nil {
				t.Fatalf("force-release %s: %v", m.Name, err)
			}
		}
	}
	if _, err := dash.Delete(ctx, "kiosk"); err != nil {
		t.Fatalf("delete kiosk: %v", err)
	}
	steps(t, s, clk, 80, nil)
	if _, ok := views(t, s, clk.Now())["kiosk"]; ok {
		t.Error("kiosk came back after the dashboard deleted it")
	}
	pods, err := s.client.CoreV1().Pods(s.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: engine.LabelPool + "=kiosk"})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("kiosk Pods after delete: %v, %d", err, len(pods.Items))
	}
}

// Run drives the simulation in real time while a shared informer (as the
// dashboard uses) watches it through label-selected watches; the informer's
// cache ends up equal to the cluster, and Run stops promptly on cancel.
func TestRunFeedsInformersAndStopsWhenCancelled(t *testing.T) {
	s, err := New(Options{Seed: 3, Speed: 40})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactoryWithOptions(s.Client(), 0,
		informers.WithNamespace(DefaultNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = engine.LabelPool }))
	pods := factory.Core().V1().Pods()
	leases := factory.Coordination().V1().Leases()
	pods.Informer()
	leases.Informer()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	// The informers outlive Run, to see its last writes.
	stopInformers := make(chan struct{})
	factory.Start(stopInformers)
	defer func() {
		close(stopInformers)
		factory.Shutdown()
	}()
	syncCtx, syncCancel := context.WithTimeout(ctx, 10*time.Second)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), pods.Informer().HasSynced, leases.Informer().HasSynced) {
		t.Fatal("informers did not sync")
	}

	ready := func() int {
		list, _ := pods.Lister().List(everything())
		n := 0
		for _, p := range list {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					n++
				}
			}
		}
		return n
	}
	poll(t, 20*time.Second, "ten Ready Pods in the informer cache", func() bool { return ready() >= 10 })

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of cancel")
	}

	// The cluster no longer changes: the cache must converge to it.
	want, err := s.client.CoreV1().Pods(DefaultNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: engine.LabelPool})
	if err != nil {
		t.Fatal(err)
	}
	key := func(name, rv string) string { return name + "@" + rv }
	var wantKeys []string
	for _, p := range want.Items {
		wantKeys = append(wantKeys, key(p.Name, p.ResourceVersion))
	}
	sort.Strings(wantKeys)
	var got []string
	defer func() {
		if t.Failed() {
			t.Logf("cache:   %s\ncluster: %s", strings.Join(got, " "), strings.Join(wantKeys, " "))
		}
	}()
	poll(t, 10*time.Second, "the informer cache to match the cluster", func() bool {
		list, _ := pods.Lister().List(everything())
		got = got[:0]
		for _, p := range list {
			got = append(got, key(p.Name, p.ResourceVersion))
		}
		sort.Strings(got)
		return strings.Join(got, " ") == strings.Join(wantKeys, " ")
	})
}

func TestStepAndNewRefuseBadInput(t *testing.T) {
	for _, sp := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := New(Options{Speed: sp}); err == nil {
			t.Errorf("speed %v accepted", sp)
		}
	}
	s, _ := newSim(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Step(ctx); err != context.Canceled {
		t.Errorf("Step with a cancelled context: %v", err)
	}
}

// poll waits for cond with a deadline (no sleeping to wait for a result).
func poll(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		<-tick.C
	}
}

func everything() labels.Selector { return labels.Everything() }
