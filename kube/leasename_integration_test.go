//go:build integration

package kube_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// brokerLease is a claim Lease as a broker writes it: by the contract's
// name, with no label.
func brokerLease(member, holder string) *coordinationv1.Lease {
	secs := int32(3600)
	at := metav1.NewMicroTime(time.Now())
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: engine.LeaseName(member)},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &at, RenewTime: &at},
	}
}

func claimHolder(snap engine.Snapshot, member string) string {
	v := engine.Observe(snap, time.Now())
	m := v.Member(member)
	if m == nil || !m.Claimed {
		return ""
	}
	return m.Claim.Holder
}

// createLeases creates n Leases named prefix-<i> with 16 writers.
func createLeases(t *testing.T, env *kubetest.Env, prefix string, n int) {
	t.Helper()
	leases := env.Client.CoordinationV1().Leases(env.Namespace)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				holder := "node-" + strconv.Itoa(i)
				secs := int32(40)
				at := metav1.NewMicroTime(time.Now())
				l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + strconv.Itoa(i)},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &at}}
				if _, err := leases.Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// The dashboard's cache on the real API server: an unlabelled claim Lease
// is the member's claim at the first list and when a broker writes one
// later, and the Leases of other components never enter the cache.
func TestIntegrationWatcherSeesAClaimLeaseByName(t *testing.T) {
	env := kubetest.Require(t)
	ctx := t.Context()
	eng := pooltest.Engine(env)
	if _, err := eng.Apply(ctx, "desk", pooltest.SmallSpec(pooltest.Image, 2)); err != nil {
		t.Fatal(err)
	}
	leases := env.Client.CoordinationV1().Leases(env.Namespace)
	if _, err := leases.Create(ctx, brokerLease("desk-1", "bob"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createLeases(t, env, "component", 100)

	w := kube.NewWatcher(env.Client, env.Namespace)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := w.Start(wctx); err != nil {
		t.Fatal(err)
	}
	if !w.WaitForSync(wctx) {
		t.Fatal("no sync")
	}
	snaps := w.Snapshots()
	if len(snaps) != 1 || claimHolder(snaps[0], "desk-1") != "bob" {
		t.Fatalf("Snapshots: desk-1 not claimed by bob (%d pools)", len(snaps))
	}
	if n := len(snaps[0].Leases); n != 1 {
		t.Fatalf("%d Leases in desk, want bob's", n)
	}
	if _, err := leases.Create(ctx, brokerLease("desk-2", "carol"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, 30*time.Second, "carol's claim in the cache", func() (bool, error) {
		s, err := w.Snapshot(ctx, "desk")
		return err == nil && claimHolder(s, "desk-2") == "carol", nil
	})
	// A claim through the cache (as the dashboard makes it) gets no member:
	// bob and carol hold both.
	cached := &engine.Engine{Cluster: &kube.Cluster{Client: env.Client, Namespace: env.Namespace, Reader: w}, Namespace: env.Namespace, Now: time.Now}
	if res, err := cached.Claim(ctx, "desk", "erin"); err == nil {
		t.Fatalf("erin's claim through the cache got %s, held by bob or carol", res.Member)
	}
}

// TestIntegrationLeaseCacheCost measures what unrelated Leases in the
// namespace cost the Lease cache and the reads: the pool informers
// (claim Leases only) against a Lease informer without the label selector
// that keeps every Lease (transformed with StripForCache), with 0 and
// 10,000 unrelated Leases, and a fresh Snapshot and ListPools. The numbers
// are logged; set CTPOOL_LEASE_COST_N to change 10,000.
func TestIntegrationLeaseCacheCost(t *testing.T) {
	env := kubetest.Require(t)
	ctx := t.Context()
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("CTPOOL_LEASE_COST_N")); err == nil && v >= 0 {
		n = v
	}
	eng := pooltest.Engine(env)
	if _, err := eng.Apply(ctx, "desk", pooltest.SmallSpec(pooltest.Image, 0)); err != nil {
		t.Fatal(err)
	}
	leases := env.Client.CoordinationV1().Leases(env.Namespace)
	for i := 1; i <= 20; i++ {
		if _, err := leases.Create(ctx, brokerLease(engine.MemberName("desk", i), "user-"+strconv.Itoa(i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	measure := func(label string) {
		for _, mode := range []string{"pool informers (claim Leases)", "every Lease, stripped"} {
			before := heap()
			start := time.Now()
			var store cache.Store
			var stop func()
			if mode == "every Lease, stripped" {
				inf := coordinationinformers.NewFilteredLeaseInformer(env.Client, env.Namespace, 0, cache.Indexers{}, nil)
				_ = inf.SetTransform(kube.StripForCache)
				ictx, cancel := context.WithCancel(ctx)
				go inf.Run(ictx.Done())
				if !cache.WaitForCacheSync(ictx.Done(), inf.HasSynced) {
					t.Fatal("no sync")
				}
				store, stop = inf.GetStore(), cancel
			} else {
				s := kube.NewPoolInformers(env.Client, env.Namespace, nil, nil)
				ictx, cancel := context.WithCancel(ctx)
				s.Start(ictx)
				if !s.WaitForSync(ictx) {
					t.Fatal("no sync")
				}
				store, stop = s.Leases.GetStore(), func() { cancel(); s.Shutdown() }
			}
			took := time.Since(start)
			bytes := int64(heap()) - int64(before)
			t.Logf("%s, %s: %d Leases cached, heap %+.2f MB, sync %v", label, mode, len(store.ListKeys()), float64(bytes)/1e6, took.Round(time.Millisecond))
			if mode != "every Lease, stripped" && len(store.ListKeys()) != 20 {
				t.Errorf("%s: %d Leases in the pool informers' cache, want the 20 claims", label, len(store.ListKeys()))
			}
			runtime.KeepAlive(store)
			stop()
		}
		c := kube.NewCluster(env.Client, env.Namespace)
		start := time.Now()
		const reads = 5
		for range reads {
			snap, err := c.Snapshot(ctx, "desk")
			if err != nil || len(snap.Leases) != 20 {
				t.Fatalf("Snapshot: %d Leases, %v", len(snap.Leases), err)
			}
		}
		snapTook := time.Since(start) / reads
		start = time.Now()
		for range reads {
			if _, err := kube.ListPools(ctx, env.Client, env.Namespace); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: fresh Snapshot %v, ListPools (--once) %v (mean of %d)", label, snapTook.Round(time.Millisecond), (time.Since(start) / reads).Round(time.Millisecond), reads)
	}
	measure("0 unrelated Leases")
	start := time.Now()
	createLeases(t, env, "node", n)
	t.Logf("created %d unrelated Leases in %v", n, time.Since(start).Round(time.Millisecond))
	measure(fmt.Sprintf("%d unrelated Leases", n))

	// The watch: 2,000 renewals of unrelated Leases reach no handler of the
	// pool informers; a claim written after them does.
	var events sync.Map
	count := func(obj any) {
		if l, ok := obj.(*coordinationv1.Lease); ok {
			v, _ := events.LoadOrStore(l.Name, new(int))
			*(v.(*int))++
		}
	}
	s := kube.NewPoolInformers(env.Client, env.Namespace, cache.ResourceEventHandlerFuncs{
		AddFunc: count, UpdateFunc: func(_, o any) { count(o) }, DeleteFunc: count,
	}, nil)
	ictx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); s.Shutdown() }()
	s.Start(ictx)
	if !s.WaitForSync(ictx) {
		t.Fatal("no sync")
	}
	start = time.Now()
	const renewals = 2000
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < renewals; i += 16 {
				l, err := leases.Get(ctx, "node-"+strconv.Itoa(i%max(n, 1)), metav1.GetOptions{})
				if err != nil {
					return
				}
				now := metav1.NewMicroTime(time.Now())
				l.Spec.RenewTime = &now
				_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
			}
		}()
	}
	wg.Wait()
	if _, err := leases.Create(ctx, brokerLease("desk-21", "late"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, 60*time.Second, "the late claim's event", func() (bool, error) {
		_, ok := events.Load(engine.LeaseName("desk-21"))
		return ok, nil
	})
	handled := 0
	events.Range(func(k, _ any) bool {
		if !strings.HasPrefix(k.(string), engine.LeaseNamePrefix) {
			handled++
		}
		return true
	})
	t.Logf("%d renewals of unrelated Leases, then a claim: claim seen after %v; unrelated Leases handled: %d", renewals, time.Since(start).Round(time.Millisecond), handled)
	if handled != 0 && n > 0 {
		t.Errorf("%d unrelated Leases reached the handlers", handled)
	}
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
