package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The controller reads the nodes beside the pools: a drifted free member
// whose node is down is left alone by every read mode (the cache's view too,
// not only the fresh read), and once the node is back the pools are queued
// again and the member is replaced.
func TestControllerWaitsForADownNode(t *testing.T) {
	for _, mode := range []ReadMode{ReadCache, ReadHybrid, ReadFresh} {
		t.Run([]string{"hybrid", "cache", "fresh"}[mode], func(t *testing.T) {
			old := testSpec("registry.example/desktop:1", 1)
			pod := readyPod(engine.BuildPod(testNS, "desk", 1, old))
			pod.Spec.NodeName = "n1"
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
					Message: "Kubelet stopped posting node status."}}}}
			client := fake.NewClientset([]runtime.Object{
				engine.BuildConfigMap(testNS, "desk", testSpec("registry.example/desktop:2", 1)), // drifted
				pod, engine.BuildPVC(testNS, "desk", 1, old), node}...)
			c := newTestController(t, client, func(o *Options) { o.Reads = mode })
			waitFor(t, 5*time.Second, "the node informer's first list", func() bool { return c.set.nodes.Down() != nil })
			ctx := context.Background()
			drainQueue(c)
			client.ClearActions()
			if _, err := c.sync(ctx, engine.PoolRef{Namespace: testNS, Name: "desk"}); err != nil {
				t.Fatal(err)
			}
			if w := memberWrites(client); len(w) != 0 {
				t.Fatalf("a reconcile while desk-1's node is down wrote %v; want nothing", w)
			}

			// The reconcile's own write (the pool's status) queues the pool
			// again: wait for that, then drain the queue, so that only the
			// node can queue it below.
			cm, err := client.CoreV1().ConfigMaps(testNS).Get(ctx, engine.ConfigMapName("desk"), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "the cache to hold the pool's status", func() bool {
				s, _ := c.set.snapshot(ctx, engine.PoolRef{Namespace: testNS, Name: "desk"})
				return s.ConfigMap != nil && s.ConfigMap.ResourceVersion == cm.ResourceVersion && c.queue.Len() > 0
			})
			drainQueue(c)

			node.Status.Conditions[0].Status = corev1.ConditionTrue
			if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "desk queued again when its node is back", func() bool {
				return c.set.nodes.Down() != nil && len(c.set.nodes.Down()) == 0 && c.queue.Len() > 0
			})
			if keys := drainQueue(c); !slices.Contains(keys, engine.PoolRef{Namespace: testNS, Name: "desk"}) {
				t.Fatalf("queued %v; want desk", keys)
			}
			if mode != ReadFresh {
				waitFor(t, 5*time.Second, "the cache to see the node back", func() bool {
					s, _ := c.set.snapshot(ctx, engine.PoolRef{Namespace: testNS, Name: "desk"})
					return s.NodeDown != nil && len(s.NodeDown) == 0
				})
			}
			if _, err := c.sync(ctx, engine.PoolRef{Namespace: testNS, Name: "desk"}); err != nil {
				t.Fatal(err)
			}
			if w := strings.Join(memberWrites(client), "; "); !strings.Contains(w, "delete pods desk-1") {
				t.Fatalf("a reconcile once desk-1's node is back wrote %q; want desk-1 replaced", w)
			}
		})
	}
}
