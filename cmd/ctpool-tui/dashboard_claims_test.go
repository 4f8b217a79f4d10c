package main

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/tui"
)

// snapshotReader answers Snapshot from fixed objects, as the Watcher's cache.
type snapshotReader struct {
	snap  engine.Snapshot
	reads int
}

func (r *snapshotReader) Snapshot(context.Context, string) (engine.Snapshot, error) {
	r.reads++
	return r.snap, nil
}

func TestDashboardClaimsReadTheCache(t *testing.T) {
	const ns, pool = "vdi", "desk"
	spec := engine.Spec{Image: "registry.example/desk:1", CPU: "1", Memory: "1Gi", Disk: "1Gi", Size: 2}
	spec.Default()
	cm := engine.BuildConfigMap(ns, pool, spec)
	var pods []*corev1.Pod
	var pvcs []*corev1.PersistentVolumeClaim
	for n := 1; n <= 2; n++ {
		pod := engine.BuildPod(ns, pool, n, spec)
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		pods = append(pods, pod)
		pvcs = append(pvcs, engine.BuildPVC(ns, pool, n, spec))
	}
	client := fake.NewClientset(cm, pods[0], pods[1], pvcs[0], pvcs[1])
	cache := &snapshotReader{snap: engine.Snapshot{Namespace: ns, Pool: pool, ConfigMap: cm, Pods: pods, PVCs: pvcs}}
	eng := &engine.Engine{Cluster: kube.NewCluster(client, ns), Namespace: ns, Now: time.Now}
	actions := cachedClaims(eng, cache)

	ctx := context.Background()
	client.ClearActions()
	res, err := actions.Claim(ctx, pool, "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if res.Member == "" || cache.reads != 1 {
		t.Fatalf("claim gave %q after %d cache reads", res.Member, cache.reads)
	}
	var got []string
	for _, a := range client.Actions() {
		got = append(got, a.GetVerb()+" "+a.GetResource().Resource)
	}
	// The Lease create, one fresh List of the pool's Leases (a concurrent
	// claim by the same identity converges on one member), one fresh read
	// of the member it won (whether to start it is decided on that, not on
	// the cache), the Pod's claim marks and the display annotation.
	want := []string{"create leases", "list leases", "get pods", "get persistentvolumeclaims", "patch pods", "patch persistentvolumeclaims"}
	if !slices.Equal(got, want) {
		t.Fatalf("a claim on the cache sent %v, want %v", got, want)
	}

	// Everything else still reads fresh from the API server.
	client.ClearActions()
	if _, err := actions.Reconcile(ctx, pool); err != nil {
		t.Fatal(err)
	}
	lists := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" {
			lists++
		}
	}
	if lists == 0 || cache.reads != 1 {
		t.Fatalf("reconcile made %d list requests and %d cache reads; want fresh lists and no cache read", lists, cache.reads)
	}
	// The engine the dashboard was given is not changed.
	if kc := eng.Cluster.(*kube.Cluster); kc.Reader != nil {
		t.Fatal("cachedClaims set the Reader of the fresh engine")
	}
}

// The dashboard's console sessions are audited with the engine's Auditor,
// whatever wraps the engine as the dashboard's actions; read-only has no
// console.
func TestDashboardConsoleIsAudited(t *testing.T) {
	var entries []engine.AuditEntry
	eng := &engine.Engine{Cluster: kube.NewCluster(fake.NewClientset(), "vdi"), Namespace: "vdi", Now: time.Now,
		Audit: func(_ context.Context, e engine.AuditEntry) { entries = append(entries, e) }}
	conn := &connection{client: fake.NewClientset(), namespace: "vdi", cfg: &rest.Config{}}
	dash := cachedClaims(eng, &snapshotReader{})
	r := newClusterReach(conn, false, func(string) tui.Actions { return dash },
		func(string) func(context.Context, engine.AuditEntry) { return eng.Audit })
	c, ok := r.Console("").(auditedConsole)
	if !ok || c.auditIn == nil {
		t.Fatalf("console %T is not audited", r.Console(""))
	}
	auditConsole(context.Background(), c.auditIn("vdi"), "desk-2", nil)
	if len(entries) != 1 || entries[0].Action != "console" || entries[0].Pool != "desk" || entries[0].Member != "desk-2" {
		t.Fatalf("audit entries %+v", entries)
	}
	ro := newClusterReach(conn, true, nil, nil)
	if ro.Console("") != nil || ro.Logs("") == nil {
		t.Fatalf("read-only: console %v, logs %v", ro.Console("") != nil, ro.Logs("") != nil)
	}
}
