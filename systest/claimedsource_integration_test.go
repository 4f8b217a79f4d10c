//go:build integration

package systest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// The sequence of issue 23 on the real API server: claim desk alice; apply a
// new image and disk; delete the Pod; reconcile. The claimed member comes back
// with the old image and source label, stays drifted, and keeps its PVC.
func TestIntegrationClaimedMemberRestartsFromItsRecordedSource(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	ctx := context.Background()
	old := pooltest.SmallSpec(pooltest.Image, 1)
	applyReady(t, env, eng, "desk", old)
	if res, err := eng.Claim(ctx, "desk", "alice"); err != nil || res.Member != "desk-1" {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	pvcs := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace)
	before, err := pvcs.Get(ctx, "desk-1-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if before.Annotations[engine.AnnotationSource] != old.SourceRecord() {
		t.Fatalf("the PVC records %q", before.Annotations[engine.AnnotationSource])
	}
	next := old
	next.Image, next.Disk = "registry.example/desktop:2", "2Gi"
	if _, err := eng.Apply(ctx, "desk", next); err != nil {
		t.Fatalf("apply: %v", err)
	}
	pods := env.Client.CoreV1().Pods(env.Namespace)
	if err := pods.Delete(ctx, "desk-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, 60*time.Second, "desk-1's Pod gone", func() (bool, error) {
		_, err := pods.Get(ctx, "desk-1", metav1.GetOptions{})
		if errors.Is(kube.MapError(err), engine.ErrNotFound) {
			return true, nil
		}
		return false, err
	})
	if _, err := eng.Reconcile(ctx, "desk"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	pod, err := pods.Get(ctx, "desk-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("desk-1 was not started again: %v", err)
	}
	if got := pod.Spec.Containers[0].Image; got != old.Image {
		t.Fatalf("desk-1 runs %s, want its own %s", got, old.Image)
	}
	if got := pod.Labels[engine.LabelSource]; got != old.SourceHash() {
		t.Fatalf("desk-1 is labelled %s, want its own source %s", got, old.SourceHash())
	}
	after, err := pvcs.Get(ctx, "desk-1-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID {
		t.Fatal("the claimed member's PVC was replaced")
	}
	if q := after.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "1Gi" {
		t.Fatalf("the PVC asks for %s", q.String())
	}
	v := observe(t, eng, "desk")
	m := v.Member("desk-1")
	if m == nil || !m.Drift || m.Holder() != "alice" || len(m.Problems) != 0 {
		t.Fatalf("desk-1 observed as %+v", m)
	}
	if v.Status.Drifted != 1 {
		t.Fatalf("status counts %d drifted", v.Status.Drifted)
	}
	// The release ends it: the member is rebuilt from the new definition.
	if _, err := eng.Release(ctx, "desk", "desk-1", "alice"); err != nil {
		t.Fatalf("release: %v", err)
	}
	pod, err = pods.Get(ctx, "desk-1", metav1.GetOptions{})
	if err != nil || pod.Spec.Containers[0].Image != next.Image {
		t.Fatalf("after the release desk-1 is %v, %v", pod, err)
	}
}

// The API server answers a repeated delete of a Service that a finalizer
// holds with success and of a gone one with NotFound: WaitGone of a console
// Service, which sends deletes alone, returns only once it is gone.
func TestIntegrationWaitServiceGoneByDeletes(t *testing.T) {
	env := kubetest.Require(t)
	ctx := context.Background()
	svcs := env.Client.CoreV1().Services(env.Namespace)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "desk-1-console", Finalizers: []string{"ctpool.dev/test-hold"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 5900}}},
	}
	if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := kube.NewCluster(env.Client, env.Namespace)
	if err := c.DeleteService(ctx, "desk-1-console"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	go func() { done <- c.WaitGone(wctx, engine.KindService, "desk-1-console", "") }()
	// Held by its finalizer, the Service stays; so does the wait, over
	// several of its deletes.
	held := time.NewTimer(2 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("WaitGone returned %v while the Service is held", err)
	case <-held.C:
	}
	cur, err := svcs.Get(ctx, "desk-1-console", metav1.GetOptions{})
	if err != nil || cur.DeletionTimestamp == nil {
		t.Fatalf("the Service is %v, %v; want it Terminating", cur, err)
	}
	cur.Finalizers = nil
	if _, err := svcs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitGone = %v", err)
	}
	if _, err := svcs.Get(ctx, "desk-1-console", metav1.GetOptions{}); !errors.Is(kube.MapError(err), engine.ErrNotFound) {
		t.Fatalf("the Service is still there: %v", err)
	}
}
