//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// reconcile POOL --watch (now the controller on one pool) and the one-shot
// reconcile --all, as scripts use them.
func TestIntegrationReconcileWatchAndAll(t *testing.T) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	ns := env.Namespace
	eng := &engine.Engine{Cluster: kube.NewCluster(env.Client, ns), Namespace: ns, Now: time.Now}
	spec := engine.Spec{Image: "registry.example/desktop:1", CPU: "10m", Memory: "32Mi", Disk: "1Gi", Size: 2}
	spec.Default()
	ctx := t.Context()
	for _, p := range []string{"desk", "art"} {
		if _, err := eng.Cluster.CreateConfigMap(ctx, engine.BuildConfigMap(ns, p, spec)); err != nil {
			t.Fatal(err)
		}
	}

	// The one-shot --all reconciles both pools.
	code, out, errOut := runCmd(t, "-n", ns, "reconcile", "--all")
	if code != exitOK {
		t.Fatalf("reconcile --all: exit %d: %s", code, errOut)
	}
	for _, p := range []string{"art", "desk"} {
		if !strings.Contains(out, ns+"/"+p+" reconcile: 2 created") {
			t.Errorf("reconcile --all output lacks %s:\n%s", p, out)
		}
	}

	// --watch on one pool: a deleted member comes back; the other pool is
	// not this reconciler's business.
	rctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wout, werr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(rctx, []string{"-n", ns, "reconcile", "desk", "--watch", "--interval", "2s", "--log-format", "json"}, strings.NewReader(""), &wout, &werr)
	}()
	if err := env.Client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "art-1-data", deleteNow()); err != nil {
		t.Fatal(err)
	}
	old, err := eng.Cluster.GetPod(ctx, "desk-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Cluster.DeletePod(ctx, "desk-1", ""); err != nil {
		t.Fatal(err)
	}
	// Back means a new Pod (not the old one, still Terminating a moment and
	// still counted Ready until it is gone), and the status recorded again.
	env.WaitFor(t, convergeTimeout, "desk-1 to come back and desk to converge", func() (bool, error) {
		snap, err := eng.Cluster.Snapshot(ctx, "desk")
		if err != nil {
			return false, err
		}
		v := engine.Observe(snap, time.Now())
		m := v.Member("desk-1")
		back := m != nil && m.Pod != nil && m.Pod.UID != old.UID && m.Pod.DeletionTimestamp == nil
		return back && v.Status.Ready == 2 && v.Recorded.Ready == 2, nil
	})
	stop()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("reconcile --watch: exit %d after SIGTERM\n%s", code, werr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reconcile --watch did not stop")
	}
	// Its log: one JSON object a line, with start, the change that brought
	// desk-1 back (pool, actions, duration) and the stop.
	seen := map[string]map[string]any{}
	for l := range strings.SplitSeq(strings.TrimSpace(werr.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q", l)
		}
		if msg, _ := m["msg"].(string); msg != "" {
			seen[msg] = m
		}
	}
	for _, msg := range []string{"starting the reconciler", "informer caches synced", "reconciled", "stopping: interrupted"} {
		if seen[msg] == nil {
			t.Errorf("no %q in the log:\n%s", msg, werr.String())
		}
	}
	if r := seen["reconciled"]; r != nil && (r["pool"] != ns+"/desk" || r["actions"] == "" || r["duration"] == nil) {
		t.Errorf("reconciled line %v", r)
	}
	if strings.Contains(wout.String()+werr.String(), "art-") || strings.Contains(wout.String()+werr.String(), "/art") {
		t.Errorf("the single-pool reconciler touched art:\n%s\n%s", wout.String(), werr.String())
	}
	snap, err := eng.Cluster.Snapshot(ctx, "art")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range snap.PVCs {
		if c.Name == "art-1-data" && c.DeletionTimestamp == nil {
			t.Error("art-1-data was rebuilt by the reconciler of desk")
		}
	}
}

func deleteNow() metav1.DeleteOptions { return metav1.DeleteOptions{} }
