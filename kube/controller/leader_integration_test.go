//go:build integration

package controller_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// Short timings for the tests: 3s lease, 2s renew deadline, 1s retry.
const testLease = 3 * time.Second

func shortElection(o *controller.Options) {
	o.LeaderElection = &controller.LeaderElection{LeaseDuration: testLease, RenewDeadline: 2 * time.Second, RetryPeriod: time.Second}
}

func leaseHolder(t *testing.T, env *kubetest.Env) string {
	t.Helper()
	l, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(context.Background(), controller.LeaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func waitLeader(t *testing.T, env *kubetest.Env, ins ...*instance) (leader *instance) {
	t.Helper()
	env.WaitFor(t, 20*time.Second, "a leader", func() (bool, error) {
		for _, in := range ins {
			if in.ctrl.Leading() {
				leader = in
				return true, nil
			}
		}
		return false, nil
	})
	return leader
}

// The check: two reconcilers with --leader-elect; exactly one
// writes; stop the leader and the other takes over within the lease
// duration; the pool still converges and a claimed member is never touched;
// /metrics matches the pool status throughout.
func TestIntegrationLeaderElectionOneWriterAndTakeover(t *testing.T) {
	env := kubetest.Require(t)
	ctx := context.Background()
	definePool(t, env, "desk", smallSpec("registry.example/desktop:1", 3))
	a := startInstance(t, env, "reconciler-a", shortElection)
	b := startInstance(t, env, "reconciler-b", shortElection)
	leader := waitLeader(t, env, a, b)
	follower := map[*instance]*instance{a: b, b: a}[leader]
	env.WaitFor(t, convergeTimeout, "desk to converge to 3 members", func() (bool, error) {
		return converged(observe(t, env, "desk"), 3), nil
	})
	if h := leaseHolder(t, env); h != leader.name {
		t.Fatalf("the election Lease is held by %q, the leading instance is %s", h, leader.name)
	}
	if follower.ctrl.Leading() {
		t.Fatal("both instances lead")
	}
	for _, in := range []*instance{a, b} {
		if err := in.ctrl.Ready(); err != nil {
			t.Errorf("%s not ready: %v", in.name, err)
		}
	}

	// A user claims a member; its Pod must keep its UID from here on.
	eng := &engine.Engine{Cluster: kube.NewCluster(env.Client, env.Namespace), Namespace: env.Namespace, Now: time.Now}
	cr, err := eng.Claim(ctx, "desk", "alice@example.com")
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	pod, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, cr.Member, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claimedUID := pod.UID
	untouched := func() error {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, cr.Member, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID != claimedUID || p.DeletionTimestamp != nil {
			return errors.New("the claimed member's Pod was replaced or deleted")
		}
		return nil
	}
	env.WaitFor(t, 20*time.Second, "the leader's gauges to match the status", func() (bool, error) {
		return checkGauges(t, env, leader, "desk") == nil, untouched()
	})
	if err := checkQueue(leader); err != nil {
		t.Errorf("the leader's work queue metrics: %v", err)
	}
	fm, err := scrapeURL(follower.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for k := range fm {
		if strings.HasPrefix(k, "ctpool_pool_") || strings.HasPrefix(k, "ctpool_reconcile_duration") {
			t.Errorf("the standby exports %s", k)
		}
	}
	if n := fm[`ctpool_workqueue_work_duration_seconds_count{name="ctpool-pools"}`]; n != 0 {
		t.Errorf("the standby's workers took %v pools from its queue", n)
	}
	if w := follower.api.get("write"); w != 0 {
		t.Fatalf("the standby made %d write requests: %s", w, follower.api)
	}
	if leader.api.get("write") == 0 {
		t.Fatal("the leader made no write request")
	}
	t.Logf("until the claim: leader %s: %s", leader.name, leader.api)
	t.Logf("until the claim: standby %s: %s", follower.name, follower.api)

	// Stop the leader (SIGTERM): it releases the Lease, the other takes over.
	stoppedAt := time.Now()
	if err := leader.stop(t); err != nil {
		t.Fatalf("the stopped leader's Run: %v, want nil (exit 0)", err)
	}
	writesAtStop := leader.api.get("write")
	env.WaitFor(t, testLease, "the standby to take over within the lease duration", func() (bool, error) {
		return follower.ctrl.Leading(), nil
	})
	takeover := time.Since(stoppedAt)
	if h := leaseHolder(t, env); h != follower.name {
		t.Errorf("after the takeover the Lease is held by %q", h)
	}

	// Drift and scale up: the new leader replaces the unclaimed members and
	// creates the fourth; the claimed one stays as it is.
	setSpec(t, env, "desk", smallSpec("registry.example/desktop:2", 4))
	env.WaitFor(t, convergeTimeout, "desk to converge on the new source around the claimed member", func() (bool, error) {
		v := observe(t, env, "desk")
		st, m := v.Status, v.Member(cr.Member)
		ok := st.Ready == 4 && st.Observed == 4 && len(v.Members) == 4 && st.Drifted == 1 &&
			m != nil && m.Drift && m.Claimed && v.Recorded.Ready == 4 && v.Recorded.Drifted == 1
		return ok, untouched()
	})
	env.WaitFor(t, 20*time.Second, "the new leader's gauges to match the status", func() (bool, error) {
		return checkGauges(t, env, follower, "desk") == nil, nil
	})
	if w := leader.api.get("write"); w != writesAtStop {
		t.Errorf("the stopped leader wrote %d more times", w-writesAtStop)
	}
	t.Logf("takeover after a graceful stop: %s (lease %s)", takeover.Round(time.Millisecond), testLease)
	t.Logf("new leader %s: %s", follower.name, follower.api)
}

// A leader cut off from the API server stops (Run returns ErrLeadershipLost,
// so the process exits 1) and makes no write after that; the standby takes
// over once the Lease expires and keeps the pool in line.
func TestIntegrationLeaderThatCannotRenewStopsWriting(t *testing.T) {
	env := kubetest.Require(t)
	ctx := context.Background()
	definePool(t, env, "desk", smallSpec("registry.example/desktop:1", 2))
	a := startInstance(t, env, "reconciler-a", shortElection)
	waitLeader(t, env, a)
	b := startInstance(t, env, "reconciler-b", shortElection)
	env.WaitFor(t, convergeTimeout, "desk to converge", func() (bool, error) {
		return converged(observe(t, env, "desk"), 2), nil
	})
	env.WaitFor(t, 10*time.Second, "the standby's caches", func() (bool, error) { return b.ctrl.Ready() == nil, nil })

	cutAt := time.Now()
	a.le.cut.Store(true)
	a.api.cut.Store(true)
	var err error
	select {
	case err = <-a.done:
		a.stopped = time.Now()
	case <-time.After(20 * time.Second):
		t.Fatal("the partitioned leader did not stop")
	}
	if !errors.Is(err, controller.ErrLeadershipLost) {
		t.Fatalf("the partitioned leader's Run: %v, want ErrLeadershipLost", err)
	}
	lost := time.Since(cutAt)
	attempts := a.api.get("write")
	env.WaitFor(t, 15*time.Second, "the standby to take over", func() (bool, error) { return b.ctrl.Leading(), nil })
	takeover := time.Since(cutAt)

	// The new leader repairs the pool.
	pod, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, "desk-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.CoreV1().Pods(env.Namespace).Delete(ctx, "desk-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, convergeTimeout, "desk-1 to be rebuilt by the new leader", func() (bool, error) {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, "desk-1", metav1.GetOptions{})
		return err == nil && p.UID != pod.UID && converged(observe(t, env, "desk"), 2), nil
	})
	if w := a.api.get("write"); w != attempts {
		t.Errorf("the old leader tried %d writes after it stopped", w-attempts)
	}
	t.Logf("partitioned leader stopped after %s (renew deadline 2s); standby led %s after the cut (lease %s)",
		lost.Round(time.Millisecond), takeover.Round(time.Millisecond), testLease)
}
