//go:build integration

package systest_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
)

// scaleMembers is the size of the pool TestIntegrationStatusOfALargeUnschedulablePool
// builds: 500 in make test, CTPOOL_SCALE_MEMBERS (make scale: 10,000) for
// the size of a real pool.
func scaleMembers(t *testing.T) int {
	n := 500
	if s := os.Getenv("CTPOOL_SCALE_MEMBERS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("CTPOOL_SCALE_MEMBERS=%q: want a positive number", s)
		}
		n = v
	}
	return n
}

// TestIntegrationStatusOfALargeUnschedulablePool: every member of a large
// pool asks for more memory than any node has, so the scheduler marks each
// Unschedulable with its message; the status a reconcile then records keeps
// a row for every member with its message, well within the ConfigMap's
// 1 MiB, and the pool is deleted in one run. The figures are logged.
func TestIntegrationStatusOfALargeUnschedulablePool(t *testing.T) {
	env := kubetest.Require(t)
	size := scaleMembers(t)
	eng := pooltest.Engine(env)
	ctx := context.Background()
	spec := pooltest.SmallSpec(pooltest.Image, size)
	spec.Memory = "500Gi"

	start := time.Now()
	if _, err := eng.Apply(ctx, "big", spec); err != nil {
		t.Fatalf("apply: %v", err)
	}
	t.Logf("fill: %d members created in %s", size, time.Since(start).Round(time.Second))

	// The scheduler marks the Pods one after the other.
	var v engine.PoolView
	env.WaitFor(t, time.Duration(size/10+120)*time.Second, "every member Unschedulable", func() (bool, error) {
		v = observe(t, eng, "big")
		return v.Status.Unschedulable == size, nil
	})
	res, err := eng.Reconcile(ctx, "big")
	if err != nil {
		t.Fatalf("reconcile of %d Unschedulable members: %v", size, err)
	}
	if !res.StatusWritten {
		t.Fatal("the status was not written")
	}
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(ctx, engine.ConfigMapName("big"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := cm.Data[engine.KeyStatus]
	st, err := engine.ParseStatus(data)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status of %d Unschedulable members: %d bytes, %d distinct messages", size, len(data), strings.Count(data[strings.Index(data, "messages:"):strings.Index(data, "members:")], "\n- "))
	if len(data) >= 900<<10 {
		t.Errorf("status of %d bytes, want under 900 KiB", len(data))
	}
	if st.Unschedulable != size || len(st.Members) != size || st.RowsCut != 0 || st.MessagesCut != 0 {
		t.Fatalf("status: unschedulable %d, rows %d, rowsCut %d, messagesCut %d; want %d of each and none cut",
			st.Unschedulable, len(st.Members), st.RowsCut, st.MessagesCut, size)
	}
	for _, r := range st.Members {
		if r.State != engine.StateUnschedulable || !strings.Contains(r.Message, "nodes are available") {
			t.Fatalf("row %+v: want Unschedulable with the scheduler's message", r)
		}
	}

	start = time.Now()
	if _, err := eng.Delete(ctx, "big"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	t.Logf("delete: %d members removed in %s", size, time.Since(start).Round(time.Second))
}
