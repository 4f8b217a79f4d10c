package controller

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// A reconciler whose clock ran an hour fast left its Lease on a member that
// needs nothing else. The controller counts it from when it first saw it:
// 9 minutes later it stays, 10 minutes later it is removed (an unlock), not
// an hour later.
func TestSkewedLeaseIsStaleTenMinutesAfterFirstSight(t *testing.T) {
	ahead := engine.ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(time.Hour))
	ahead.ResourceVersion = "1"
	client := fake.NewClientset(append(convergedPool("desk", 1), ahead)...)
	now := testNow
	c := newTestController(t, client, func(o *Options) { o.Now = func() time.Time { return now } })
	ctx, k := context.Background(), engine.PoolRef{Namespace: testNS, Name: "desk"}
	leaseThere := func() bool {
		_, err := client.CoordinationV1().Leases(testNS).Get(ctx, engine.LeaseName("desk-1"), metav1.GetOptions{})
		return err == nil
	}
	if _, err := c.sync(ctx, k); err != nil {
		t.Fatal(err)
	}
	if !leaseThere() {
		t.Fatal("the Lease went at first sight")
	}
	now = testNow.Add(9 * time.Minute)
	if _, err := c.sync(ctx, k); err != nil {
		t.Fatal(err)
	}
	if !leaseThere() {
		t.Fatal("the Lease went 9 minutes after first sight")
	}
	now = testNow.Add(engine.ReconcilerLeaseTTL)
	res, err := c.sync(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := res.Counts(); d[engine.StepUnlock] != 1 || d[engine.StepStart] != 0 {
		t.Fatalf("counts %v, want one unlock", d)
	}
	if leaseThere() {
		t.Fatal("the Lease stays 10 minutes after first sight")
	}
}
