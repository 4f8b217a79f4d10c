//go:build integration

package systest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// observe reads the pool fresh and observes it.
func observe(t testing.TB, eng *engine.Engine, pool string) engine.PoolView {
	t.Helper()
	snap, err := eng.Cluster.Snapshot(context.Background(), pool)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return engine.Observe(snap, time.Now())
}

// applyReady applies a pool and waits until every member is Ready.
func applyReady(t *testing.T, env *kubetest.Env, eng *engine.Engine, pool string, spec engine.Spec) {
	t.Helper()
	if _, err := eng.Apply(context.Background(), pool, spec); err != nil {
		t.Fatalf("apply %s: %v", pool, err)
	}
	waitReady(t, env, eng, pool, spec.Size)
}

func waitReady(t testing.TB, env *kubetest.Env, eng *engine.Engine, pool string, n int) {
	t.Helper()
	env.WaitFor(t, 90*time.Second, fmt.Sprintf("%d ready members in %s", n, pool), func() (bool, error) {
		v := observe(t, eng, pool)
		return v.Status.Ready == n && v.Status.Observed == n, nil
	})
}

func TestIntegrationClaimRaceFirstWriterWins(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	applyReady(t, env, eng, "race", pooltest.SmallSpec(pooltest.Image, 1))

	ids := []string{"alice@example.com", "bob@example.com", "carol@example.com", "dave@example.com"}
	type result struct {
		id     string
		member string
		err    error
	}
	results := make(chan result, len(ids))
	var start sync.WaitGroup
	start.Add(1)
	for _, id := range ids {
		go func(id string) {
			start.Wait()
			r, err := eng.Claim(context.Background(), "race", id)
			results <- result{id, r.Member, err}
		}(id)
	}
	start.Done()
	wins := 0
	for range ids {
		r := <-results
		switch {
		case r.err == nil:
			wins++
			if r.member != "race-1" {
				t.Errorf("%s got %q, want race-1", r.id, r.member)
			}
		case errors.Is(r.err, engine.ErrNoFreeMembers):
			if !strings.Contains(r.err.Error(), "desired 1") {
				t.Errorf("no-free error lacks counts: %v", r.err)
			}
		default:
			t.Errorf("%s: unexpected error %v", r.id, r.err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d identities won the only member, want exactly 1", wins)
	}
	v := observe(t, eng, "race")
	if v.Status.Claimed != 1 || v.Status.Free != 0 || !v.Status.Exhausted {
		t.Fatalf("status after race: claimed %d free %d exhausted %v", v.Status.Claimed, v.Status.Free, v.Status.Exhausted)
	}

	// The Lease itself: two creates of one Lease, exactly one wins.
	cl := kube.NewCluster(env.Client, env.Namespace)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = cl.CreateLease(context.Background(), engine.ClaimLease(env.Namespace, "race", "race-9", fmt.Sprintf("id-%d", i), time.Now()))
		}(i)
	}
	wg.Wait()
	exists := 0
	for _, err := range errs {
		if errors.Is(err, engine.ErrAlreadyExists) {
			exists++
		} else if err != nil {
			t.Fatalf("create lease: %v", err)
		}
	}
	if exists != 1 {
		t.Fatalf("concurrent lease creates: %d AlreadyExists, want 1 (%v)", exists, errs)
	}
}

// staleReader answers Snapshot with a snapshot taken earlier.
type staleReader struct{ snap engine.Snapshot }

func (s staleReader) Snapshot(context.Context, string) (engine.Snapshot, error) { return s.snap, nil }

func TestIntegrationReleaseLosesCompareAndSwap(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	ctx := context.Background()
	applyReady(t, env, eng, "cas", pooltest.SmallSpec(pooltest.Image, 1))
	if _, err := eng.Claim(ctx, "cas", "alice@example.com"); err != nil {
		t.Fatal(err)
	}
	before, err := eng.Cluster.Snapshot(ctx, "cas")
	if err != nil {
		t.Fatal(err)
	}
	podUID := before.Pods[0].UID

	// A concurrent change: the claim is renewed after our snapshot.
	leases := env.Client.CoordinationV1().Leases(env.Namespace)
	l, err := leases.Get(ctx, engine.LeaseName("cas-1"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	l.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	stale := *eng
	stale.Cluster = &kube.Cluster{Client: env.Client, Namespace: env.Namespace, Reader: staleReader{before}}
	_, err = stale.ForceRelease(ctx, "cas", "cas-1")
	if !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), "changed meanwhile") {
		t.Fatalf("release with a stale lease: got %v, want a conflict that says the claim changed", err)
	}
	after := observe(t, eng, "cas")
	m := after.Member("cas-1")
	if m == nil || m.Pod == nil || m.Pod.UID != podUID || m.Holder() != "alice@example.com" {
		t.Fatalf("member changed after a lost compare-and-swap: %+v", m)
	}
}

func TestIntegrationTwoReconcilersConverge(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	ctx := context.Background()
	spec := pooltest.SmallSpec(pooltest.Image, 6)
	cl := kube.NewCluster(env.Client, env.Namespace)
	if _, err := cl.CreateConfigMap(ctx, engine.BuildConfigMap(env.Namespace, "duo", spec)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = eng.Reconcile(ctx, "duo")
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("reconciler %d: %v", i, err)
		}
	}
	// A third run finishes whatever a skipped member still needs.
	if _, err := eng.Reconcile(ctx, "duo"); err != nil {
		t.Fatal(err)
	}
	waitReady(t, env, eng, "duo", 6)
	v := observe(t, eng, "duo")
	if len(v.Members) != 6 {
		t.Fatalf("%d members, want 6", len(v.Members))
	}
	for _, m := range v.Members {
		if m.Lease != nil {
			t.Errorf("%s: lease left behind (holder %q)", m.Name, m.LeaseRead().Holder)
		}
	}
}

func TestIntegrationScaleKeepsClaimedMembers(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	ctx := context.Background()
	applyReady(t, env, eng, "scale", pooltest.SmallSpec(pooltest.Image, 3))
	claimed := map[string]string{}
	for _, id := range []string{"a@example.com", "b@example.com"} {
		r, err := eng.Claim(ctx, "scale", id)
		if err != nil {
			t.Fatal(err)
		}
		claimed[r.Member] = id
	}
	// Scale down to 0: both claimed members stay, the free one goes.
	if _, err := eng.Resize(ctx, "scale", 0); err != nil {
		t.Fatalf("resize 0: %v", err)
	}
	v := observe(t, eng, "scale")
	if len(v.Members) != 2 {
		t.Fatalf("after scale-down: %d members, want the 2 claimed", len(v.Members))
	}
	for _, m := range v.Members {
		if claimed[m.Name] == "" || m.Pod == nil || !m.AboveSize {
			t.Errorf("%s: claimed=%q pod=%v aboveSize=%v", m.Name, claimed[m.Name], m.Pod != nil, m.AboveSize)
		}
	}
	// Scale up again: missing members come back, claims intact.
	if _, err := eng.Resize(ctx, "scale", 4); err != nil {
		t.Fatalf("resize 4: %v", err)
	}
	waitReady(t, env, eng, "scale", 4)
	v = observe(t, eng, "scale")
	if v.Status.Claimed != 2 || v.Status.Free != 2 {
		t.Fatalf("after scale-up: claimed %d free %d, want 2 and 2", v.Status.Claimed, v.Status.Free)
	}
}

func TestIntegrationDriftReplacesUnclaimedOnly(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	ctx := context.Background()
	applyReady(t, env, eng, "drift", pooltest.SmallSpec(pooltest.Image, 2))
	r, err := eng.Claim(ctx, "drift", "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	before := observe(t, eng, "drift")
	claimedUID := before.Member(r.Member).Pod.UID

	spec := pooltest.SmallSpec("registry.example/desktop:2", 2)
	if _, err := eng.Apply(ctx, "drift", spec); err != nil {
		t.Fatalf("apply v2: %v", err)
	}
	waitReady(t, env, eng, "drift", 2)
	v := observe(t, eng, "drift")
	for _, m := range v.Members {
		if m.Name == r.Member {
			if m.Pod.UID != claimedUID || !m.Drift || m.Pod.Spec.Containers[0].Image != pooltest.Image {
				t.Errorf("claimed %s was touched or lost its drift marker (drift=%v image=%s)", m.Name, m.Drift, m.Pod.Spec.Containers[0].Image)
			}
			continue
		}
		if m.Drift || m.Pod.Spec.Containers[0].Image != spec.Image || m.PVC.Labels[engine.LabelSource] != spec.SourceHash() {
			t.Errorf("unclaimed %s was not replaced: drift=%v image=%s", m.Name, m.Drift, m.Pod.Spec.Containers[0].Image)
		}
	}
}

func TestIntegrationUnschedulableShowsSchedulerMessage(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	ctx := context.Background()
	spec := pooltest.SmallSpec(pooltest.Image, 1)
	spec.Memory = "500Gi"
	if _, err := eng.Apply(ctx, "huge", spec); err != nil {
		t.Fatal(err)
	}
	// The scheduler may first report the data PVC still binding (the plane's
	// provisioner names the volume a moment before it exists); it retries,
	// and then says why no node fits.
	var m *engine.Member
	env.WaitFor(t, 60*time.Second, "huge-1 Unschedulable for lack of memory", func() (bool, error) {
		v := observe(t, eng, "huge")
		m = v.Member("huge-1")
		return m != nil && m.State == engine.StateUnschedulable && strings.Contains(m.Message, "Insufficient memory"), nil
	})
	if !strings.Contains(m.Message, "nodes are available") {
		t.Fatalf("scheduler message %q lacks the node count", m.Message)
	}
	_, err := eng.Claim(ctx, "huge", "alice@example.com")
	var nf *engine.NoFreeMembersError
	if !errors.As(err, &nf) || nf.Unschedulable != 1 || nf.Desired != 1 {
		t.Fatalf("claim on an unschedulable pool: %v", err)
	}
}

func TestIntegrationReleaseWaitsForPodAndPVC(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	ctx := context.Background()
	applyReady(t, env, eng, "rel", pooltest.SmallSpec(pooltest.Image, 1))
	if _, err := eng.Claim(ctx, "rel", "alice@example.com"); err != nil {
		t.Fatal(err)
	}
	bv := observe(t, eng, "rel")
	before := bv.Member("rel-1")
	if before.PVC.Finalizers == nil || !contains(before.PVC.Finalizers, "kubernetes.io/pvc-protection") {
		t.Fatalf("pvc-protection finalizer missing on %s: %v", before.PVC.Name, before.PVC.Finalizers)
	}
	res, err := eng.Release(ctx, "rel", "rel-1", "alice@example.com")
	if err != nil {
		t.Fatalf("release: %v", err)
	}
	if !res.Recreated || res.PreviousHolder != "alice@example.com" {
		t.Fatalf("release result %+v", res)
	}
	av := observe(t, eng, "rel")
	after := av.Member("rel-1")
	if after.Pod == nil || after.PVC == nil || after.Pod.UID == before.Pod.UID || after.PVC.UID == before.PVC.UID {
		t.Fatalf("member not rebuilt with new objects")
	}
	if after.Lease != nil {
		t.Fatalf("lease left after release: %+v", after.Lease.Spec)
	}
	// Releasing again does nothing.
	res, err = eng.Release(ctx, "rel", "rel-1", "alice@example.com")
	if err != nil || !res.NoOp {
		t.Fatalf("second release: %+v %v", res, err)
	}
}

func TestIntegrationDeletePool(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	ctx := context.Background()
	applyReady(t, env, eng, "gone", pooltest.SmallSpec(pooltest.Image, 2))
	if _, err := eng.Claim(ctx, "gone", "alice@example.com"); err != nil {
		t.Fatal(err)
	}
	_, err := eng.Delete(ctx, "gone")
	if !errors.Is(err, engine.ErrClaimed) {
		t.Fatalf("delete with a claimed member: %v", err)
	}
	v := observe(t, eng, "gone")
	if !v.Defined || v.Status.Claimed != 1 {
		t.Fatalf("definition or claim lost after a refused delete: defined=%v claimed=%d", v.Defined, v.Status.Claimed)
	}
	if _, err := eng.ForceRelease(ctx, "gone", v.Members[0].Name); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Delete(ctx, "gone"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	snap, err := eng.Cluster.Snapshot(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if snap.ConfigMap != nil || len(snap.Pods)+len(snap.PVCs)+len(snap.Leases) != 0 {
		t.Fatalf("left after delete: cm=%v pods=%d pvcs=%d leases=%d", snap.ConfigMap != nil, len(snap.Pods), len(snap.PVCs), len(snap.Leases))
	}
	if _, err := eng.Delete(ctx, "gone"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Two admins act on the same view at once: of two force-releases of one
// member, and of two resizes, exactly one succeeds and the other gets a clear
// message (compare-and-swap on the Lease, resourceVersion on the ConfigMap).
func TestIntegrationConcurrentAdmins(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	ctx := context.Background()
	applyReady(t, env, eng, "admins", pooltest.SmallSpec(pooltest.Image, 2))
	claimed, err := eng.Claim(ctx, "admins", "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	seen, err := eng.Cluster.Snapshot(ctx, "admins")
	if err != nil {
		t.Fatal(err)
	}
	admin := func() *engine.Engine {
		e := *eng
		e.Cluster = &kube.Cluster{Client: env.Client, Namespace: env.Namespace, Reader: staleReader{seen}}
		return &e
	}
	both := func(op func(e *engine.Engine) error) []error {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				errs[i] = op(admin())
			}(i)
		}
		wg.Wait()
		return errs
	}
	check := func(what, wantMsg string, errs []error) {
		t.Helper()
		ok, conflicts := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, engine.ErrConflict) && strings.Contains(err.Error(), wantMsg):
				conflicts++
			default:
				t.Errorf("%s: unexpected error %v", what, err)
			}
		}
		if ok != 1 || conflicts != 1 {
			t.Fatalf("%s: %d succeeded, %d got the conflict message (%v)", what, ok, conflicts, errs)
		}
	}
	check("force-release", "the claim changed meanwhile", both(func(e *engine.Engine) error {
		_, err := e.ForceRelease(ctx, "admins", claimed.Member)
		return err
	}))
	check("resize", "changed by someone else meanwhile", both(func(e *engine.Engine) error {
		_, err := e.Resize(ctx, "admins", 3)
		return err
	}))
}
