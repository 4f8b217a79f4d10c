//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// A Lease a broker wrote by the contract's name alone (no label) is the
// member's claim for the commands as a user types them: status and --once
// show it, another identity's claim gets another member or none, its
// holder's release ends it, and reconcile takes over a stale one the
// reconciler left. The namespace also holds Leases of other components.
func TestIntegrationClaimLeaseByNameAlone(t *testing.T) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	ns := env.Namespace
	ctx := t.Context()
	leases := env.Client.CoordinationV1().Leases(ns)
	mustRun := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"-n", ns}, args...)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errOut)
		}
		return out
	}
	brokerLease := func(member, holder string, at time.Time, secs int32) {
		t.Helper()
		mt := metav1.NewMicroTime(at)
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: engine.LeaseName(member)},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &mt, RenewTime: &mt},
		}
		if _, err := leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	status := func() render.OncePool {
		t.Helper()
		var rep render.OnceReport
		if err := json.Unmarshal([]byte(mustRun(exitOK, "status", "desk", "-o", "json")), &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Pools) != 1 {
			t.Fatalf("status: %d pools", len(rep.Pools))
		}
		return rep.Pools[0]
	}
	holder := func(p render.OncePool, member string) string {
		for _, m := range p.Members {
			if m.Name == member {
				return m.Holder
			}
		}
		return ""
	}

	for i := range 50 { // leader election and the like: no claims
		if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("component-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(exitOK, "apply", "desk", "--image", "registry.example/desktop:1", "--size", "2", "--cpu", "100m", "--mem", "128Mi", "--disk", "1Gi")
	brokerLease("desk-1", "bob", time.Now(), 3600)

	p := status()
	if holder(p, "desk-1") != "bob" || p.Claimed != 1 {
		t.Fatalf("status: desk-1 held by %q, %d claimed; want bob and 1", holder(p, "desk-1"), p.Claimed)
	}
	var once render.OnceReport
	code, out, errOut := runCmd(t, "-n", ns, "--once", "--pool", "desk", "-o", "json")
	if code != exitOK && code != exitAttention {
		t.Fatalf("--once: exit %d %s", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &once); err != nil || len(once.Pools) != 1 || holder(once.Pools[0], "desk-1") != "bob" {
		t.Fatalf("--once: desk-1 not held by bob (%v):\n%s", err, out)
	}

	env.WaitFor(t, 60*time.Second, "a free member", func() (bool, error) {
		code, _, _ := runCmd(t, "-n", ns, "--once", "--pool", "desk")
		return code == exitOK, nil
	})
	if got := strings.TrimSpace(mustRun(exitOK, "claim", "desk", "carol")); got != "desk-2" {
		t.Fatalf("carol's claim got %q, want desk-2", got)
	}
	code, _, errOut = runCmd(t, "-n", ns, "claim", "desk", "erin")
	if code != exitError || !strings.Contains(errOut, "pool has no free members (desired 2, claimed 2") {
		t.Fatalf("claim on a pool whose members bob and carol hold: exit %d %q", code, errOut)
	}

	out = mustRun(exitOK, "release", "desk", "desk-1", "bob")
	if strings.Contains(out, "no claim") {
		t.Fatalf("release by bob:\n%s", out)
	}
	if _, err := leases.Get(ctx, engine.LeaseName("desk-1"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("bob's Lease after his release: %v", err)
	}
	if h := holder(status(), "desk-1"); h != "" {
		t.Fatalf("desk-1 still held by %q after the release", h)
	}

	// A reconciler writing by name alone is a reconciler: its member is
	// under maintenance. Its stamp says 11 minutes ago, but the API server
	// took the write just now (a writer whose clock runs slow): the Lease
	// counts from the write, so a reconcile leaves it (a Lease that has
	// really stood for 10 minutes is taken over: the engine's tests and the
	// randomized run, whose API server clock moves with the run's, cover it).
	if err := leases.Delete(ctx, engine.LeaseName("desk-2"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	brokerLease("desk-2", engine.ReconcilerIdentity, time.Now().Add(-11*time.Minute), 600)
	maintenance := func(p render.OncePool, member string) bool {
		for _, m := range p.Members {
			if m.Name == member {
				return m.Maintenance && !m.Free
			}
		}
		return false
	}
	if p := status(); !maintenance(p, "desk-2") {
		t.Fatalf("status: desk-2 is not under maintenance: %+v", p.Members)
	}
	before, err := leases.Get(ctx, engine.LeaseName("desk-2"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCmd(t, "-n", ns, "reconcile", "desk"); code != exitOK && code != exitAttention {
		t.Fatalf("reconcile: exit %d\n%s%s", code, out, errOut)
	}
	if p := status(); !maintenance(p, "desk-2") {
		t.Fatal("a reconcile took over the Lease another reconciler wrote a moment ago")
	}
	if after, err := leases.Get(ctx, engine.LeaseName("desk-2"), metav1.GetOptions{}); err != nil || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("the fresh reconciler Lease after a reconcile: %v", err)
	}
	// The unrelated Leases were never touched.
	list, err := leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for _, l := range list.Items {
		if strings.HasPrefix(l.Name, "component-") {
			left++
		}
	}
	if left != 50 {
		t.Fatalf("%d of 50 unrelated Leases left", left)
	}
}
