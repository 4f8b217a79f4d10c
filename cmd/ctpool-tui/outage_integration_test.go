//go:build integration && outage

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// The API server goes away and comes back: reconcile --watch keeps running,
// backs off, and converges again; the informers report the outage and recover;
// --once fails within its request timeout with one clear line. Once for one
// pool (fresh reads every interval) and once for --all (the controller's
// hybrid reads: its informer cache decides, fresh reads act).
func TestIntegrationOutage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scope []string
	}{
		{"one pool", []string{"out"}},
		{"all pools", []string{"--all"}},
	} {
		t.Run(tc.name, func(t *testing.T) { outage(t, tc.scope) })
	}
}

func outage(t *testing.T, scope []string) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	ns := env.Namespace
	if code, out, errOut := runCmd(t, "-n", ns, "apply", "out", "--image", "registry.example/desktop:1", "--size", "2", "--cpu", "100m", "--mem", "128Mi", "--disk", "1Gi"); code != exitOK {
		t.Fatalf("apply: %d %s %s", code, out, errOut)
	}
	env.WaitFor(t, 60*time.Second, "pool out ready", func() (bool, error) {
		code, _, _ := runCmd(t, "-n", ns, "--once", "--pool", "out")
		return code == exitOK, nil
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rOut, rErr kubetest.SyncBuffer
	done := make(chan int, 1)
	go func() {
		args := append(append([]string{"-n", ns, "reconcile"}, scope...), "--watch", "--interval", "1s")
		done <- run(ctx, args, strings.NewReader(""), &rOut, &rErr)
	}()
	watcher := kube.NewWatcher(env.Client, ns)
	if err := watcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !watcher.WaitForSync(ctx) {
		t.Fatal("informers did not sync")
	}

	stoppedAt := time.Now()
	env.StopComponent(t, "kube-apiserver")
	restarted := false
	defer func() {
		if !restarted {
			env.StartPlane(t)
		}
	}()

	start := time.Now()
	code, _, errOut := runCmd(t, "-n", ns, "--once", "--request-timeout", "3s")
	if code != exitError || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "cannot read namespace") {
		t.Fatalf("--once during the outage: exit %d, stderr %q", code, errOut)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("--once took %s with --request-timeout 3s", d)
	}

	env.WaitFor(t, 60*time.Second, "the informers to report the outage", func() (bool, error) {
		at, err := watcher.LastWatchError()
		return err != nil && at.After(stoppedAt), nil
	})
	// The reconciler reads its informer cache first, so an outage need not
	// produce an error line; what matters is that it keeps running.
	select {
	case c := <-done:
		t.Fatalf("reconcile --watch exited (%d) during the outage; stderr:\n%s", c, rErr.String())
	default:
	}

	// Its log says the API server is unreachable (a /livez probe failed) ...
	env.WaitFor(t, 60*time.Second, "the reconciler to log the outage", func() (bool, error) {
		return strings.Contains(rErr.String(), "the API server is unreachable"), nil
	})

	env.StartPlane(t)
	restarted = true
	back := time.Now()
	// ... and that it answers again.
	env.WaitFor(t, 60*time.Second, "the reconciler to log the recovery", func() (bool, error) {
		return strings.Contains(rErr.String(), "the API server answers again"), nil
	})
	// A change after the outage: the member's Pod goes, reconcile brings it back.
	if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), "out-1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete out-1 after the restart: %v", err)
	}
	env.WaitFor(t, 90*time.Second, "the pool to converge after the outage", func() (bool, error) {
		snap, err := kube.NewCluster(env.Client, ns).Snapshot(context.Background(), "out")
		if err != nil {
			return false, nil
		}
		v := engine.Observe(snap, time.Now())
		return v.Status.Ready == 2 && v.Member("out-1").Pod != nil && v.Member("out-1").Pod.CreationTimestamp.After(back.Add(-time.Second)), nil
	})
	t.Logf("converged %s after the API server was back", time.Since(back).Round(100*time.Millisecond))
	env.WaitFor(t, 60*time.Second, "the informers to recover", func() (bool, error) {
		return watcher.LastSync().After(back), nil
	})

	cancel()
	select {
	case c := <-done:
		if c != exitOK {
			t.Fatalf("reconcile --watch exited %d on cancel; stderr:\n%s", c, rErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reconcile --watch did not stop within 30s of the signal")
	}
	leases, err := env.Client.CoordinationV1().Leases(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == engine.ReconcilerIdentity {
			t.Errorf("reconciler Lease %s left behind", l.Name)
		}
	}
	t.Logf("outage handled; reconcile output:\n%s\nerrors:\n%s", rOut.String(), rErr.String())
}
