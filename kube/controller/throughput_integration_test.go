//go:build integration && perf

// Performance runs fill the shared plane with hundreds of Pods, so they carry
// the perf tag and run alone (make bench-integration), never beside the
// other integration tests.
package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// reconciles sums the reconcile counts and durations of every pool in a scrape.
func reconciles(t *testing.T, in *instance) (int, time.Duration) {
	t.Helper()
	m, err := scrapeURL(in.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	n, sum := 0.0, 0.0
	for k, v := range m {
		switch {
		case strings.HasPrefix(k, "ctpool_reconcile_duration_seconds_count{"):
			n += v
		case strings.HasPrefix(k, "ctpool_reconcile_duration_seconds_sum{"):
			sum += v
		}
	}
	return int(n), time.Duration(sum * float64(time.Second))
}

// --all on several pools, under each way of reading: how long until every
// pool has converged, how many requests that took, and what an idle resync
// costs. The numbers are logged; the test checks convergence and that an
// idle resync of the default (hybrid) reads makes no request at all.
func TestIntegrationAllPoolsReadModes(t *testing.T) {
	const pools, size = 5, 4
	cases := []struct {
		name    string
		reads   controller.ReadMode
		workers int
	}{
		{"hybrid-4-workers", controller.ReadHybrid, 4},
		{"hybrid-1-worker", controller.ReadHybrid, 1},
		{"fresh-4-workers", controller.ReadFresh, 4},
		{"cache-4-workers", controller.ReadCache, 4},
	}
	var report []string
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := kubetest.Require(t)
			names := make([]string, pools)
			for i := range names {
				names[i] = fmt.Sprintf("pool%d", i+1)
				definePool(t, env, names[i], smallSpec("registry.example/desktop:1", size))
			}
			start := time.Now()
			in := startInstance(t, env, "reconciler", func(o *controller.Options) {
				o.Reads, o.Workers, o.Resync = tc.reads, tc.workers, time.Second
				o.Logf = nil
			})
			env.WaitFor(t, convergeTimeout, "every pool to converge", func() (bool, error) {
				for _, p := range names {
					if !converged(observe(t, env, p), size) {
						return false, nil
					}
				}
				return true, nil
			})
			took := time.Since(start)
			conv := in.api.reset()
			n0, d0 := reconciles(t, in)
			env.WaitFor(t, 30*time.Second, "three idle resyncs of every pool", func() (bool, error) {
				n, _ := reconciles(t, in)
				return n-n0 >= 3*pools, nil
			})
			idle := in.api.reset()
			n1, d1 := reconciles(t, in)
			n := n1 - n0
			line := fmt.Sprintf("%-17s converged %d pools x %d members in %6s: %3d writes, %3d reads; idle: %d reconciles of %s on average, %d reads, %d writes",
				tc.name, pools, size, took.Round(10*time.Millisecond), conv["write"], conv["read"], n, ((d1 - d0) / time.Duration(n)).Round(time.Microsecond), idle["read"], idle["write"])
			report = append(report, line)
			t.Log(line)
			if tc.reads == controller.ReadHybrid && idle["read"]+idle["write"] != 0 {
				t.Errorf("idle resyncs with hybrid reads made requests: %v", idle)
			}
			if idle["write"] != 0 {
				t.Errorf("idle resyncs wrote: %v", idle)
			}
		})
	}
	for _, l := range report {
		t.Log(l)
	}
}
