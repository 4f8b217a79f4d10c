//go:build integration

package systest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
)

func sandboxdSpec(size int) engine.Spec {
	s := pooltest.SmallSpec("ghcr.io/cocoonstack/sandbox/rt:24.04", size)
	s.Runtime = &engine.Runtime{Backend: engine.BackendSandboxd, Template: s.Image, Net: "none", Size: "small"}
	s.Default()
	return s
}

func listNodes(t *testing.T, env *kubetest.Env) []*corev1.Node {
	t.Helper()
	nl, err := env.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	nodes := make([]*corev1.Node, len(nl.Items))
	for i := range nl.Items {
		nodes[i] = &nl.Items[i]
	}
	return nodes
}

// A sandboxd member lands on the sandboxd virtual node; a member Pod whose
// toleration was removed stays Pending with the real scheduler's message and
// the diagnosis names the taint.
func TestIntegrationSandboxdPlacementAndMissingToleration(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	ctx := context.Background()
	applyReady(t, env, eng, "sbx", sandboxdSpec(1))
	v := observe(t, eng, "sbx")
	m := v.Member("sbx-1")
	if m.Node != "vk-sandbox-0" {
		t.Fatalf("sandboxd member on node %q, want vk-sandbox-0", m.Node)
	}

	// The same Pod without its toleration, as a hand-made template would be.
	bad := engine.BuildPod(env.Namespace, "sbx", 2, sandboxdSpec(2))
	bad.Spec.Tolerations = nil
	if _, err := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Create(ctx, engine.BuildPVC(env.Namespace, "sbx", 2, sandboxdSpec(2)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, 30*time.Second, "sbx-2-data Bound", func() (bool, error) {
		pvc, err := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Get(ctx, "sbx-2-data", metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, nil
	})
	if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var bm *engine.Member
	env.WaitFor(t, 60*time.Second, "sbx-2 Unschedulable", func() (bool, error) {
		v = observe(t, eng, "sbx")
		bm = v.Member("sbx-2")
		return bm != nil && bm.State == engine.StateUnschedulable && strings.Contains(bm.Message, "taint"), nil
	})
	if !strings.Contains(bm.Message, "untolerated taint") {
		t.Fatalf("scheduler message %q does not mention the untolerated taint", bm.Message)
	}
	d := engine.Diagnose(bm, nil, listNodes(t, env), nil)
	if !strings.Contains(d.Reason, engine.ProviderTaintKey) || !strings.Contains(d.Reason, "vk-sandbox-0") {
		t.Fatalf("diagnosis %+v does not name the taint on vk-sandbox-0", d)
	}
	if !strings.Contains(d.Fix, "Exists NoSchedule") {
		t.Fatalf("diagnosis fix %q does not say which toleration to add", d.Fix)
	}
}

func TestIntegrationCocoonNoMatchingNode(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	spec := pooltest.SmallSpec("ubuntu-dev-base", 1)
	spec.Runtime = &engine.Runtime{Backend: engine.BackendCocoon, Image: "ubuntu-dev-base", Pool: "gpu-pool"}
	spec.Default()
	if _, err := eng.Apply(context.Background(), "coc", spec); err != nil {
		t.Fatal(err)
	}
	var m *engine.Member
	env.WaitFor(t, 60*time.Second, "coc-1 Unschedulable", func() (bool, error) {
		v := observe(t, eng, "coc")
		m = v.Member("coc-1")
		return m != nil && m.State == engine.StateUnschedulable, nil
	})
	d := engine.Diagnose(m, nil, listNodes(t, env), nil)
	if d.Reason != "no node matches the node selector cocoonstack.io/pool=gpu-pool" {
		t.Fatalf("diagnosis %q (scheduler said %q)", d.Reason, m.Message)
	}
}
