//go:build integration && outage

package systest_test

import (
	"testing"
	"time"
)

// chaosOutageOps is the size of the outage run (CTPOOL_CHAOS_OPS overrides it).
const chaosOutageOps = 600

// The randomized run of TestIntegrationRandomizedConcurrency with the API
// server stopped and started again in the middle of one batch, while the
// operations, the command-line reconciles and the controller run: the
// operations of the outage fail, the watches of the recorder resume, and
// every invariant still holds, before, across and after the outage. A step
// the outage cut may leave its reconciler Lease (as a reconciler that died
// would): it must go stale and be finished by a reconcile. For a while after
// the restart the plane's own controllers catch up at their own pace, so the
// settle window is longer then (afterOutage); the run must converge at its end.
//
// CI runs it in the outage pass. The plane's controller-manager runs
// leader-elected (testdata/cluster/up): an outage longer than its renew
// deadline makes it exit and start afresh, as on a real control plane, so its
// PVC protection does not stay backed off for minutes after the restart.
func TestIntegrationRandomizedConcurrencyOutage(t *testing.T) {
	ops := chaosOps(t, chaosOutageOps)
	runChaos(t, ops, ops/60, func(h *chaosHarness) {
		count := func() int {
			return h.counted("operations") + h.counted("operations beyond the batch while the restart ran")
		}
		at := count()
		if err := waitUntil(t.Context(), time.Now().Add(time.Minute), func() bool { return count() >= at+8 }); err != nil {
			t.Fatalf("no operation before the outage: %v", err)
		}
		h.env.StopComponent(t, "kube-apiserver")
		down := count()
		// Operations keep going against the stopped server and fail.
		waitErr := waitUntil(t.Context(), time.Now().Add(time.Minute), func() bool { return count() >= down+6 })
		h.env.StartPlane(t)
		if waitErr != nil {
			t.Errorf("no operation ended during the outage: %v", waitErr)
		}
		h.add("API server restarts", 1)
	})
}
