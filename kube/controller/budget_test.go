package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// TestControllerRepairsADeletedBudget: the reconciler caches the pools'
// PodDisruptionBudgets; one deleted by hand queues its pool, whose
// reconcile creates it again.
func TestControllerRepairsADeletedBudget(t *testing.T) {
	client := fake.NewClientset(convergedPool("desk", 2)...)
	c := newTestController(t, client, nil)
	ctx := context.Background()
	desk := engine.PoolRef{Namespace: testNS, Name: "desk"}
	if _, err := c.sync(ctx, desk); err != nil {
		t.Fatal(err)
	}
	pdbs := client.PolicyV1().PodDisruptionBudgets(testNS)
	if _, err := pdbs.Get(ctx, engine.DisruptionBudgetName("desk"), metav1.GetOptions{}); err != nil {
		t.Fatalf("the reconcile made no budget: %v", err)
	}
	waitFor(t, 5*time.Second, "the budget in the cache", func() bool { return c.set.budgets.Read(testNS, "desk") != nil })
	drainQueue(c)
	if err := pdbs.Delete(ctx, engine.DisruptionBudgetName("desk"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var queued []engine.PoolRef
	waitFor(t, 5*time.Second, "the pool queued by the budget's deletion", func() bool {
		queued = append(queued, drainQueue(c)...)
		return slices.Contains(queued, desk)
	})
	if _, err := c.sync(ctx, desk); err != nil {
		t.Fatal(err)
	}
	if _, err := pdbs.Get(ctx, engine.DisruptionBudgetName("desk"), metav1.GetOptions{}); err != nil {
		t.Fatalf("the deleted budget was not created again: %v", err)
	}
}
