package engine

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// benchSnapshot builds a realistic pool of n members: all Running and Ready,
// every fourth claimed, every tenth drifted.
func benchSnapshot(n int) (Snapshot, time.Time) {
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	spec := Spec{Image: "ghcr.io/example/desktop:2", Size: n}
	spec.Default()
	old := spec
	old.Image = "ghcr.io/example/desktop:1"
	snap := Snapshot{Namespace: "vdi", Pool: "desk", ConfigMap: BuildConfigMap("vdi", "desk", spec)}
	for i := 1; i <= n; i++ {
		s := spec
		if i%10 == 0 {
			s = old
		}
		pod := BuildPod("vdi", "desk", i, s)
		pod.Spec.NodeName = fmt.Sprintf("node-%d", i%50)
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}
		snap.Pods = append(snap.Pods, pod)
		snap.PVCs = append(snap.PVCs, BuildPVC("vdi", "desk", i, s))
		if i%4 == 0 {
			snap.Leases = append(snap.Leases, ClaimLease("vdi", "desk", MemberName("desk", i), fmt.Sprintf("user%d@example.com", i), now.Add(-time.Duration(i)*time.Second)))
		}
	}
	return snap, now
}

// BenchmarkObserve reports ns/member so that sizes compare directly: the
// target is that 10,000 members cost at most 1.5x per member what 100 do.
func BenchmarkObserve(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		snap, now := benchSnapshot(n)
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v := Observe(snap, now)
				if v.Status.Desired != n {
					b.Fatalf("desired %d", v.Status.Desired)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/member")
		})
	}
}

// BenchmarkObserveRetained reports the heap a pool's view holds once
// observed (what the dashboard keeps between rebuilds), per member: the
// heap after a forced GC with the view alive, less the heap before.
func BenchmarkObserveRetained(b *testing.B) {
	for _, n := range []int{100, 10000} {
		snap, now := benchSnapshot(n)
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			var total float64
			for b.Loop() {
				before := heapAlloc()
				v := Observe(snap, now)
				after := heapAlloc()
				runtime.KeepAlive(v)
				total += float64(after) - float64(before)
			}
			b.ReportMetric(total/float64(b.N)/float64(n), "retained-B/member")
		})
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
