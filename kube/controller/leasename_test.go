package controller

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// unlabelledLease is a Lease written by the contract's name alone.
func unlabelledLease(member, holder string, at time.Time, secs int32) *coordinationv1.Lease {
	mt := metav1.NewMicroTime(at)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: engine.LeaseName(member), Namespace: testNS, ResourceVersion: "1"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &mt, RenewTime: &mt},
	}
}

// The controller keys a Lease known by its name alone to its member's pool,
// and a change of one enqueues that pool.
func TestHandlersEnqueueThePoolOfAnUnlabelledLease(t *testing.T) {
	c := newTestController(t, fake.NewClientset(), nil)
	c.onAdd(unlabelledLease("desk-2-1", "bob", testNow, 3600))
	if got := drainQueue(c); len(got) != 1 || got[0] != (engine.PoolRef{Namespace: testNS, Name: "desk-2"}) {
		t.Fatalf("queued %v, want vdi/desk-2", got)
	}
}

// The controller takes over a stale reconciler Lease written with no label,
// and leaves a user's unlabelled claim alone on a drifted member.
func TestControllerSeesUnlabelledLeases(t *testing.T) {
	objs := convergedPool("desk", 2)
	objs = append(objs,
		unlabelledLease("desk-1", engine.ReconcilerIdentity, testNow.Add(-11*time.Minute), 600),
		unlabelledLease("desk-2", "bob", testNow, 3600))
	client := fake.NewClientset(objs...)
	c, err := New(Options{Client: client, Namespace: testNS, Workers: 1, Resync: time.Hour, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	waitFor(t, 10*time.Second, "the stale Lease taken over and removed", func() bool {
		_, err := client.CoordinationV1().Leases(testNS).Get(ctx, engine.LeaseName("desk-1"), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if l, err := client.CoordinationV1().Leases(testNS).Get(ctx, engine.LeaseName("desk-2"), metav1.GetOptions{}); err != nil || *l.Spec.HolderIdentity != "bob" {
		t.Fatalf("bob's claim: %v", err)
	}
	cancel()
	<-done
}
