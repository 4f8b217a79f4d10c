//go:build integration && outage && linux

package main

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// 2.7: the real node fails and comes back. While its kubelet (or its
// container runtime) is stopped, status marks the member's node down and the
// diagnosis blames the node, not the desktop; a reconcile in the meantime
// touches nothing. Once it runs again the member is Ready on the same Pod and
// the same container, with its claim, Lease and PVC untouched, and a free
// member drifted during the outage is replaced only then.
//
// The node goes down by the control plane's own judgement: the
// node-lifecycle-controller (30 s grace, testdata/cluster/up) for a silent
// kubelet, the kubelet itself for a runtime that stopped answering (30 s,
// "container runtime is down"). Outage tests: they stop a component of the
// plane, so they run alone (the outage step of make test).
func TestIntegrationRealNodeOutage(t *testing.T) {
	for _, tc := range []struct {
		component string
		pool      string
		// evidence is what the node says while it is down, in the
		// member's nodeDown marker.
		evidence string
	}{
		{"kubelet", "ndk", "Kubelet stopped posting node status"},
		{"containerd", "ndc", "container runtime is down"},
	} {
		t.Run(tc.component, func(t *testing.T) { nodeOutage(t, tc.component, tc.pool, tc.evidence) })
	}
}

// desktopFacts are what must survive a node outage unchanged.
type desktopFacts struct {
	pod, pvc, lease types.UID
	holder          string
	container       string
	restarts        int32
	boots           string
}

func readFacts(t *testing.T, env *kubetest.Env, pool, member string) desktopFacts {
	t.Helper()
	ctx, ns := t.Context(), env.Namespace
	pod, err := env.Client.CoreV1().Pods(ns).Get(ctx, member, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, engine.PVCName(member), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := env.Client.CoordinationV1().Leases(ns).Get(ctx, engine.LeaseName(member), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := desktopFacts{pod: pod.UID, pvc: pvc.UID, lease: lease.UID,
		boots: mustSh(t, env, pool, member, "cat /var/log/desktop-boots")}
	if lease.Spec.HolderIdentity != nil {
		f.holder = *lease.Spec.HolderIdentity
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == engine.ContainerName {
			f.container, f.restarts = s.ContainerID, s.RestartCount
		}
	}
	return f
}

// rawMember is one member of `status -o json` as plain JSON, for fields
// the test reads by their wire names.
func rawMember(t *testing.T, env *kubetest.Env, pool, member string) map[string]any {
	t.Helper()
	_, out, _ := runCmd(t, "-n", env.Namespace, "status", pool, "-o", "json")
	var rep struct {
		Pools []struct {
			Members []map[string]any `json:"members"`
		} `json:"pools"`
	}
	if json.Unmarshal([]byte(out), &rep) != nil {
		return nil
	}
	for _, p := range rep.Pools {
		for _, m := range p.Members {
			if m["name"] == member {
				return m
			}
		}
	}
	return nil
}

func nodeOutage(t *testing.T, component, pool, evidence string) {
	env := realEnv(t)
	ns := env.Namespace
	realPool(t, env, pool, kubetest.ImageDebian, 2, "--init")
	code, out, errOut := runCmd(t, "-n", ns, "claim", pool, "alice")
	if code != exitOK {
		t.Fatalf("claim %s alice: exit %d\n%s%s", pool, code, out, errOut)
	}
	member := strings.TrimSpace(out)
	// The other member stays free: the one a reconcile would replace.
	free := engine.MemberName(pool, 1)
	if free == member {
		free = engine.MemberName(pool, 2)
	}
	freePod, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), free, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustSh(t, env, pool, member, "echo alice >/data/work")
	before := readFacts(t, env, pool, member)
	if before.holder != "alice" || before.container == "" || strings.Count(before.boots, "boot ") != 1 {
		t.Fatalf("before the outage: %+v; want alice's claim, a running container, one boot", before)
	}

	// Whatever happens below, the node's component runs again after the
	// test: the tests after it need the real node.
	t.Cleanup(func() { env.StartPlane(t) })
	env.StopComponent(t, component)

	var m map[string]any
	env.WaitFor(t, realNodeTimeout, "status to mark "+member+"'s node down", func() (bool, error) {
		m = rawMember(t, env, pool, member)
		down, _ := m["nodeDown"].(string)
		return strings.Contains(down, evidence), nil
	})
	rep, _ := memberReport(t, env, pool, member)
	if rep.Diagnosis == nil || !strings.Contains(rep.Diagnosis.Reason, "node "+kubetest.RealNode+" is down") {
		t.Errorf("the diagnosis while the node is down: %+v; want it to say node %s is down (member %v)", rep.Diagnosis, kubetest.RealNode, m)
	}
	if rep.Holder != "alice" {
		t.Errorf("the holder while the node is down: %q, want alice", rep.Holder)
	}
	// A new image while the node is down drifts both members; neither the
	// apply's reconcile nor another one replaces or deletes anything: a
	// Pod deleted on a down node stays Terminating, and its successor could
	// not start before the node is back anyway.
	if code, out, errOut := runCmd(t, "-n", ns, "apply", pool, "--image", kubetest.ImageBusybox, "--size", "2",
		"--cpu", "200m", "--mem", "256Mi", "--disk", "1Gi", "--init",
		"--runtime-class", kubetest.RealNodeRuntimeClass, "--storage-class", kubetest.RealNodeStorageClass); code != exitOK && code != exitAttention {
		t.Fatalf("apply %s while the node is down: exit %d\n%s%s", pool, code, out, errOut)
	}
	if code, out, errOut := runCmd(t, "-n", ns, "reconcile", pool); code != exitOK && code != exitAttention {
		t.Fatalf("reconcile %s while the node is down: exit %d\n%s%s", pool, code, out, errOut)
	}
	for _, want := range []struct {
		name string
		uid  types.UID
	}{{member, before.pod}, {free, freePod.UID}} {
		pod, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), want.name, metav1.GetOptions{})
		if err != nil || pod.UID != want.uid || pod.DeletionTimestamp != nil {
			t.Fatalf("%s after an apply and a reconcile while its node is down: %v, UID %s (was %s), deleting %v; want the same Pod, left alone",
				want.name, err, podUID(pod), want.uid, pod != nil && pod.DeletionTimestamp != nil)
		}
	}

	env.StartPlane(t)
	env.WaitFor(t, realNodeTimeout, member+" Ready again on its node", func() (bool, error) {
		m = rawMember(t, env, pool, member)
		_, down := m["nodeDown"]
		return m != nil && m["state"] == string(engine.StateReady) && !down, nil
	})
	// Back up, the free drifted member is replaced (alice's waits for her
	// release).
	env.WaitFor(t, realNodeTimeout, free+" replaced with the new image", func() (bool, error) {
		if code, out, errOut := runCmd(t, "-n", ns, "reconcile", pool); code != exitOK && code != exitAttention {
			t.Fatalf("reconcile %s after the outage: exit %d\n%s%s", pool, code, out, errOut)
		}
		p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), free, metav1.GetOptions{})
		return err == nil && p.UID != freePod.UID && p.Spec.Containers[0].Image == kubetest.ImageBusybox, nil
	})
	after := readFacts(t, env, pool, member)
	if after != before {
		t.Errorf("after the %s came back:\n  %+v\nwant what it was before:\n  %+v", component, after, before)
	}
	if out := mustSh(t, env, pool, member, "cat /data/work"); out != "alice\n" {
		t.Errorf("alice's /data/work after the outage: %q", out)
	}
}

func podUID(p *corev1.Pod) types.UID {
	if p == nil {
		return ""
	}
	return p.UID
}
