package controller

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// BenchmarkSyncIdle is the cost of the resync of a pool that is in line: with
// the default reads no request is made, so this is CPU only (the cache
// lookup, Observe for needsWork, the engine's reconcile, the metrics).
func BenchmarkSyncIdle(b *testing.B) {
	for _, size := range []int{4, 50} {
		b.Run(map[int]string{4: "4-members", 50: "50-members"}[size], func(b *testing.B) {
			client := fake.NewClientset(convergedPool("desk", size)...)
			c := newTestController(b, client, nil)
			ctx := context.Background()
			k := engine.PoolRef{Namespace: testNS, Name: "desk"}
			if _, err := c.sync(ctx, k); err != nil { // record the status once
				b.Fatal(err)
			}
			waitFor(b, 5*time.Second, "status in cache", func() bool {
				s, _ := c.set.snapshot(ctx, k)
				return s.ConfigMap.Data[engine.KeyStatus] != ""
			})
			client.ClearActions()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := c.sync(ctx, k); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if n := len(client.Actions()); n != 0 {
				b.Fatalf("%d requests", n)
			}
		})
	}
}
