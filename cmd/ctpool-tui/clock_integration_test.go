//go:build integration

package main

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// A reconciler whose clock runs an hour slow stamps its Lease an hour in
// the past. The Lease counts from when the API server took the write (its
// managed fields' time), so neither `reconcile` from the command line nor
// the informers' view (the dashboard, the in-cluster reconciler) finds it
// stale: nobody takes over a member another reconciler works on.
func TestIntegrationSlowReconcilersLeaseIsNotTakenOver(t *testing.T) {
	env, run := elasticCLI(t)
	ctx := t.Context()
	ns := env.Namespace
	run(exitOK, append([]string{"apply", "slow", "--size", "1"}, smallMember...)...)
	waitFree(t, env, run, "slow", 1)

	stamp := time.Now().Add(-time.Hour)
	l := engine.ReconcilerLease(ns, "slow", "slow-1", stamp)
	created, err := env.Client.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := engine.LeaseWritten(created); w.IsZero() || time.Since(w) > time.Minute {
		t.Fatalf("the API server's write time of the Lease is %s", w)
	}

	if code, out, errOut := runCmd(t, "-n", ns, "reconcile", "slow"); code != exitOK && code != exitAttention {
		t.Fatalf("reconcile: exit %d\n%s%s", code, out, errOut)
	}
	got, err := env.Client.CoordinationV1().Leases(ns).Get(ctx, l.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the slow reconciler's Lease is gone after a reconcile: %v", err)
	}
	if got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("a reconcile took over the Lease a slow reconciler wrote a moment ago: holder %q renewed %s",
			*got.Spec.HolderIdentity, got.Spec.RenewTime)
	}

	// The informers' cached copy keeps the write time (kube.StripForCache).
	w := kube.NewWatcher(env.Client, ns)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var m *engine.Member
	env.WaitFor(t, 30*time.Second, "the Lease in the watcher's cache", func() (bool, error) {
		for _, s := range w.Snapshots() {
			if s.Pool != "slow" {
				continue
			}
			v := engine.Observe(s, time.Now())
			for i := range v.Members {
				if v.Members[i].Name == "slow-1" && v.Members[i].Lease != nil {
					m = &v.Members[i]
					return true, nil
				}
			}
		}
		return false, nil
	})
	if !m.InMaintenance() || m.HoldStale() {
		t.Fatalf("from the cache: maintenance %v, stale %v; want a fresh maintenance Lease", m.InMaintenance(), m.HoldStale())
	}
}
