package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeWith is a node named name with the given Ready conditions and taints.
func nodeWith(name string, conds []corev1.NodeCondition, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}, Status: corev1.NodeStatus{Conditions: conds}}
}

func readyCond(st corev1.ConditionStatus, reason, msg string, since time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: corev1.NodeReady, Status: st, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(since)}
}

// kubeletStopped is a node whose kubelet stopped posting its status, as the
// node lifecycle controller marks it: Ready=Unknown and the unreachable taints.
func kubeletStopped(name string, since time.Time) *corev1.Node {
	return nodeWith(name,
		[]corev1.NodeCondition{readyCond(corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", since)},
		corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute})
}

func TestNodeDown(t *testing.T) {
	since := time.Date(2026, 1, 2, 9, 12, 3, 0, time.UTC)
	memoryPressure := corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}
	cases := []struct {
		name string
		node *corev1.Node
		want string
	}{
		{"nil", nil, ""},
		{"Ready=True", nodeWith("n", []corev1.NodeCondition{readyCond(corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status", since)}), ""},
		{"Ready=True under memory pressure", nodeWith("n", []corev1.NodeCondition{memoryPressure, readyCond(corev1.ConditionTrue, "", "", since)}), ""},
		{"no conditions at all: unknown, not down", nodeWith("n", nil), ""},
		{"no Ready condition, other conditions: unknown, not down", nodeWith("n", []corev1.NodeCondition{memoryPressure}), ""},
		{"cordoned is not down", nodeWith("n", []corev1.NodeCondition{readyCond(corev1.ConditionTrue, "", "", since)},
			corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}), ""},
		{"kubelet stopped", kubeletStopped("n", since),
			"Ready=Unknown since 2026-01-02T09:12:03Z: Kubelet stopped posting node status.; node.kubernetes.io/unreachable:NoSchedule; node.kubernetes.io/unreachable:NoExecute"},
		{"Ready=False, reason only", nodeWith("n", []corev1.NodeCondition{readyCond(corev1.ConditionFalse, "KubeletNotReady", "", since)}),
			"Ready=False since 2026-01-02T09:12:03Z: KubeletNotReady"},
		{"Ready=False without a time or words", nodeWith("n", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}), "Ready=False"},
		{"Ready with an empty status", nodeWith("n", []corev1.NodeCondition{{Type: corev1.NodeReady}}), `Ready=""`},
		{"not-ready taint on a Ready node (the condition not yet caught up)", nodeWith("n", []corev1.NodeCondition{readyCond(corev1.ConditionTrue, "", "", since)},
			corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}), "node.kubernetes.io/not-ready:NoSchedule"},
		{"unreachable taint with no conditions", nodeWith("n", nil, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}),
			"node.kubernetes.io/unreachable:NoExecute"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NodeDown(c.node); got != c.want {
				t.Errorf("NodeDown = %q, want %q", got, c.want)
			}
		})
	}
}

func TestNodeDownMap(t *testing.T) {
	since := time.Date(2026, 1, 2, 9, 12, 3, 0, time.UTC)
	if m := NodeDownMap(nil); m == nil || len(m) != 0 {
		t.Errorf("NodeDownMap(nil) = %#v, want an empty map (known: no node is down)", m)
	}
	m := NodeDownMap([]*corev1.Node{kubeletStopped("node-b", since), nodeWith("node-a", []corev1.NodeCondition{readyCond(corev1.ConditionTrue, "", "", since)})})
	if len(m) != 1 || m["node-b"] == "" {
		t.Errorf("NodeDownMap = %#v, want node-b only", m)
	}
}

// TestObserveNodeDown: a member whose Pod is bound to a down node carries
// the node's evidence; a member on a healthy node, with no Pod, or whose Pod
// is not bound yet does not; NodeDown nil leaves every member as before. A
// member merely NotReady because its node is down is Starting, not Failed,
// and stays free.
func TestObserveNodeDown(t *testing.T) {
	spec := baseSpec(4)
	on := func(node string) podMod { return func(p *corev1.Pod) { p.Spec.NodeName = node } }
	notReady := cond(corev1.PodReady, corev1.ConditionFalse, "", "")
	snap := Snapshot{Namespace: testNS, Pool: "desk", ConfigMap: BuildConfigMap(testNS, "desk", spec),
		Pods: []*corev1.Pod{
			podOf(spec, 1, running, notReady, on("node-b")),
			podOf(spec, 2, running, ready, on("node-a")),
			podOf(spec, 3, pending),
		},
		PVCs: []*corev1.PersistentVolumeClaim{pvcOf(spec, 1), pvcOf(spec, 2), pvcOf(spec, 3), pvcOf(spec, 4)},
	}
	down := map[string]string{"node-b": "Ready=Unknown", "": "never a member's"}
	cases := []struct {
		name     string
		nodeDown map[string]string
		want     map[string]string // member -> NodeDown
	}{
		{"nodes unknown", nil, map[string]string{}},
		{"no node down", map[string]string{}, map[string]string{}},
		{"node-b down", down, map[string]string{"desk-1": "Ready=Unknown"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := snap
			s.NodeDown = c.nodeDown
			v := Observe(s, testNow)
			for i := range v.Members {
				m := &v.Members[i]
				if m.NodeDown != c.want[m.Name] {
					t.Errorf("%s: NodeDown = %q, want %q", m.Name, m.NodeDown, c.want[m.Name])
				}
			}
			m1 := v.Member("desk-1")
			if m1.State != StateStarting || !m1.Free {
				t.Errorf("desk-1 on a down node: state %s, free %v; want Starting and free (not Failed)", m1.State, m1.Free)
			}
			if v.Status.Failed != 0 {
				t.Errorf("failed count %d, want 0", v.Status.Failed)
			}
			// PoolState keeps the snapshot's nodes for the members it
			// re-observes.
			ps := NewPoolState(s, testNow)
			p1 := s.Pods[0].DeepCopy()
			p1.ResourceVersion = "2"
			if _, ok := ps.Update(PoolUpdate{Members: map[string]MemberObjects{"desk-1": {Pod: p1, PVC: s.PVCs[0]}}}, testNow.Add(time.Second)); !ok {
				t.Fatal("PoolState.Update refused a member change")
			}
			if got := ps.View().Member("desk-1").NodeDown; got != c.want["desk-1"] {
				t.Errorf("after PoolState.Update: desk-1 NodeDown = %q, want %q", got, c.want["desk-1"])
			}
		})
	}
}

// TestDiagnoseNodeDown: when the Pod's node is down, the diagnosis names the
// node first, with its evidence, over every stale reading of the Pod (not
// Ready, a crash, a failure, Ready itself), but not over a blocked member;
// with NodeDown nil the Pod's own reading stands.
func TestDiagnoseNodeDown(t *testing.T) {
	spec := baseSpec(2)
	since := time.Date(2026, 1, 2, 9, 12, 3, 0, time.UTC)
	evidence := NodeDown(kubeletStopped("node-b", since))
	on := func(p *corev1.Pod) { p.Spec.NodeName = "node-b" }
	notReady := cond(corev1.PodReady, corev1.ConditionFalse, "", "")
	cases := []struct {
		name       string
		pod        *corev1.Pod
		foreign    bool // desk-1's PVC is another pool's: the member is blocked
		nodeDown   map[string]string
		wantReason string
		wantFix    string
	}{
		{"not ready on a down node", podOf(spec, 1, running, notReady, on), false, map[string]string{"node-b": evidence},
			"node node-b is down", "the desktop is probably fine: its claim and data PVC are kept"},
		{"crash loop on a down node", podOf(spec, 1, running, waitingIn("CrashLoopBackOff", "back-off", false), on), false, map[string]string{"node-b": evidence},
			"node node-b is down", "comes back when node node-b does (check the node's kubelet"},
		{"still Ready on a down node", podOf(spec, 1, running, ready, on), false, map[string]string{"node-b": evidence},
			"node node-b is down", "nothing is replaced while the node is down"},
		{"Pod failed on a down node", podOf(spec, 1, phase(corev1.PodFailed), on), false, map[string]string{"node-b": evidence},
			"node node-b is down", "probably fine"},
		{"being deleted on a down node", podOf(spec, 1, running, on, deletingPod), false, map[string]string{"node-b": evidence},
			"node node-b is down", "stays Terminating until node node-b is back"},
		{"blocked wins over the node", podOf(spec, 1, running, notReady, on), true, map[string]string{"node-b": evidence},
			"", ""},
		{"nodes unknown: the Pod's reading", podOf(spec, 1, running, notReady, on), false, nil,
			"running, not Ready yet", ""},
		{"another node is down: the Pod's reading", podOf(spec, 1, running, waitingIn("CrashLoopBackOff", "back-off", false), on), false, map[string]string{"node-a": evidence},
			"the desktop container keeps crashing", "read its logs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pvc := pvcOf(spec, 1)
			if c.foreign {
				pvc.Labels[LabelPool] = "other"
			}
			snap := Snapshot{Namespace: testNS, Pool: "desk", ConfigMap: BuildConfigMap(testNS, "desk", spec),
				Pods: []*corev1.Pod{c.pod}, PVCs: []*corev1.PersistentVolumeClaim{pvc}, NodeDown: c.nodeDown}
			v := Observe(snap, testNow)
			m := v.Member("desk-1")
			if c.foreign && m.Blocked == "" {
				t.Fatal("the member is not blocked: the case tests nothing")
			}
			d := Diagnose(m, nil, nil, nil)
			if c.wantReason == "" {
				if strings.Contains(d.Reason, "is down") {
					t.Errorf("reason = %q, want no node reading", d.Reason)
				}
				return
			}
			if !strings.Contains(d.Reason, c.wantReason) {
				t.Errorf("reason = %q, want it to contain %q", d.Reason, c.wantReason)
			}
			if !strings.Contains(d.Fix, c.wantFix) {
				t.Errorf("fix = %q, want it to contain %q", d.Fix, c.wantFix)
			}
			if c.wantReason == "node node-b is down" && d.Evidence != evidence {
				t.Errorf("evidence = %q, want the node's %q", d.Evidence, evidence)
			}
		})
	}
}

// TestClaimRanksDownNodesLast: among free members, those whose node is down
// come after every other (in the usual order among themselves), and are
// still handed out when nothing else is free; with NodeDown nil the usual
// order stands.
func TestClaimRanksDownNodesLast(t *testing.T) {
	spec := baseSpec(4)
	down := map[string]string{"node-b": "Ready=Unknown"}
	cases := []struct {
		name     string
		states   []State  // of desk-1, desk-2, ...
		nodes    []string // the node of each member's Pod
		nodeDown map[string]string
		want     string
	}{
		{"Ready on a down node after Starting and Stopped", []State{StateReady, StateStarting, StateStopped, StateFailed}, []string{"node-b", "node-a", "", "node-a"}, down, "desk-2"},
		{"Ready on a down node after Stopped", []State{StateReady, StateStopped, StateFailed, StateFailed}, []string{"node-b", "", "node-a", "node-a"}, down, "desk-2"},
		{"the usual order among down members", []State{StateStarting, StateReady, StateFailed, StateFailed}, []string{"node-b", "node-b", "node-a", "node-a"}, down, "desk-2"},
		{"a down node's member when nothing else is free", []State{StateFailed, StateReady, StateFailed, StateFailed}, []string{"node-a", "node-b", "node-a", "node-a"}, down, "desk-2"},
		{"nodes unknown: the usual order", []State{StateReady, StateStarting, StateStopped, StateFailed}, []string{"node-b", "node-a", "", "node-a"}, nil, "desk-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", spec, 0)
			for i, s := range c.states {
				seedMember(f, i+1, spec, s)
				if p := f.pods[MemberName("desk", i+1)]; p != nil {
					p.Spec.NodeName = c.nodes[i]
				}
			}
			f.nodeDown = c.nodeDown
			res, err := e.Claim(context.Background(), "desk", "alice@example.com")
			if err != nil || res.Member != c.want {
				t.Fatalf("Claim = %+v, %v; want %s", res, err, c.want)
			}
		})
	}
}

// TestReconcileNodeDown: a reconcile never replaces a member because its
// node is down: a drifted or failed member on a down node waits (and the
// reconcile says so), a member NotReady on a down node is not failed; a
// member on a healthy node, one above the size and a stopped one are worked
// on as always; with NodeDown nil every member is worked on as before.
func TestReconcileNodeDown(t *testing.T) {
	spec := baseSpec(3)
	down := map[string]string{"node-b": "Ready=Unknown since 2026-01-02T09:12:03Z"}
	notReady := func(p *corev1.Pod) {
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}
	}
	crashing := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	}
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	cases := []struct {
		name     string
		member   int // desk-<member>
		built    Spec
		mutate   func(*corev1.Pod)
		node     string
		nodeDown map[string]string
		replaced bool   // the member's Pod and PVC are deleted and made again
		deleted  bool   // the member is deleted (above the size)
		skipped  string // the reconcile's skip of the member
	}{
		{"drifted, node down: waits", 1, driftedSpec(3), nil, "node-b", down, false, false, "node node-b is down: replaced once it is back"},
		{"drifted, nodes unknown: replaced", 1, driftedSpec(3), nil, "node-b", nil, true, false, ""},
		{"drifted, another node down: replaced", 1, driftedSpec(3), nil, "node-a", down, true, false, ""},
		{"crash loop, node down: waits", 2, spec, crashing, "node-b", down, false, false, "node node-b is down: replaced once it is back"},
		{"crash loop, nodes unknown: replaced (its backoff ended)", 2, spec, crashing, "node-b", nil, true, false, ""},
		{"Pod failed, node down: waits", 2, spec, failed, "node-b", down, false, false, "node node-b is down: replaced once it is back"},
		{"Pod failed, no node down: replaced (its backoff ended)", 2, spec, failed, "node-b", map[string]string{}, true, false, ""},
		{"not ready, node down: not failed, left alone", 3, spec, notReady, "node-b", down, false, false, ""},
		{"not ready, nodes unknown: left alone", 3, spec, notReady, "node-b", nil, false, false, ""},
		{"above the size, node down: deleted (the size, not the node)", 4, spec, nil, "node-b", down, false, true, ""},
		{"above the size, nodes unknown: deleted", 4, spec, nil, "node-b", nil, false, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", spec, 3)
			name := MemberName("desk", c.member)
			p, pvc := readyMember("desk", c.member, c.built)
			if c.mutate != nil {
				c.mutate(p)
			}
			p.Spec.NodeName = c.node
			delete(f.pods, name)
			delete(f.pvcs, PVCName(name))
			f.add(p, pvc)
			for _, other := range []string{"desk-1", "desk-2", "desk-3"} {
				if other != name {
					f.pods[other].Spec.NodeName = "node-b" // healthy members on the down node: untouched
				}
			}
			f.nodeDown = c.nodeDown
			if c.member == 2 && c.replaced {
				// A failing member is replaced once its backoff ends
				// (TestReconcileBacksOffFailingMembers).
				recordBackoff(t, f, name, &Backoff{Failures: 1, RetryAt: testNow})
			}
			v := Observe(mustSnapshot(t, f), testNow)
			if got := NeedsWork(v); got != (c.replaced || c.deleted) {
				t.Errorf("NeedsWork = %v, want %v", got, c.replaced || c.deleted)
			}
			res, err := e.Reconcile(context.Background(), "desk")
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			writes := memberWrites(f.writes(), name)
			gotReplaced := hasAct(writes, "delete", "Pod", name) && hasAct(writes, "create", "Pod", name) && hasAct(writes, "delete", "PersistentVolumeClaim", PVCName(name))
			gotDeleted := hasAct(writes, "delete", "Pod", name) && !hasAct(writes, "create", "Pod", name)
			if gotReplaced != c.replaced || gotDeleted != c.deleted {
				t.Errorf("%s: replaced %v, deleted %v; want %v, %v (writes %v)", name, gotReplaced, gotDeleted, c.replaced, c.deleted, writes)
			}
			if !c.replaced && !c.deleted && len(writes) > 0 {
				t.Errorf("%s: writes %v, want none", name, writes)
			}
			for _, other := range []string{"desk-1", "desk-2", "desk-3"} {
				if w := memberWrites(f.writes(), other); other != name && len(w) > 0 {
					t.Errorf("healthy %s on the down node: writes %v, want none", other, w)
				}
			}
			skipped := ""
			for _, a := range res.Actions {
				if a.Member == name && a.Skipped != "" {
					skipped = a.Skipped
				}
			}
			if skipped != c.skipped {
				t.Errorf("%s: skipped %q, want %q", name, skipped, c.skipped)
			}
		})
	}
}
