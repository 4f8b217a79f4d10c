package engine

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func diagNodes() []*corev1.Node {
	node := func(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	return []*corev1.Node{
		node("node-a", map[string]string{"kubernetes.io/hostname": "node-a"}),
		node("node-b", map[string]string{"kubernetes.io/hostname": "node-b"}),
		node("vk-sandbox-0", map[string]string{SandboxdNodeLabel: "sandboxd", "type": "virtual-kubelet"},
			corev1.Taint{Key: ProviderTaintKey, Value: "sandboxd", Effect: corev1.TaintEffectNoSchedule}),
		node("vk-cocoon-0", map[string]string{CocoonNodeLabel: "default", "type": "virtual-kubelet"},
			corev1.Taint{Key: ProviderTaintKey, Value: "cocoon", Effect: corev1.TaintEffectNoSchedule}),
	}
}

func diagSpec(rt *Runtime) Spec {
	s := Spec{Image: "ghcr.io/cocoonstack/sandbox/rt:24.04", Size: 3, Runtime: rt}
	s.Default()
	return s
}

func pendingUnschedulable(pod *corev1.Pod, msg string) {
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}}
}

func warning(reason, msg string) corev1.Event {
	return corev1.Event{Type: corev1.EventTypeWarning, Reason: reason, Message: msg, LastTimestamp: metav1.NewTime(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))}
}

func TestDiagnose(t *testing.T) {
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	sandboxd := &Runtime{Backend: BackendSandboxd, Template: "ghcr.io/cocoonstack/sandbox/rt:24.04", Net: "none", Size: "small"}
	cocoon := &Runtime{Backend: BackendCocoon, Image: "ubuntu-dev-base"}
	cases := []struct {
		name       string
		rt         *Runtime
		mutate     func(p *corev1.Pod)
		events     []corev1.Event
		nodes      []*corev1.Node
		errs       []string
		noPod      bool
		wantReason string
		wantFix    string
	}{
		{
			name: "no node matches the selector (nodes readable)",
			rt:   &Runtime{Backend: BackendCocoon, Image: "ubuntu-dev-base", Pool: "gpu"},
			mutate: func(p *corev1.Pod) {
				pendingUnschedulable(p, "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")
			},
			nodes:      diagNodes(),
			wantReason: "no node matches the node selector cocoonstack.io/pool=gpu",
			wantFix:    "VK_NODE_POOL",
		},
		{
			name: "no node matches the selector (from the message alone)",
			rt:   sandboxd,
			mutate: func(p *corev1.Pod) {
				pendingUnschedulable(p, "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
			},
			wantReason: "no node matches the node selector sandbox.cocoonstack.io/runtime=sandboxd",
			wantFix:    "--node-labels",
		},
		{
			name: "toleration missing for the virtual node's taint",
			rt:   sandboxd,
			mutate: func(p *corev1.Pod) {
				p.Spec.Tolerations = nil
				pendingUnschedulable(p, "0/4 nodes are available: 1 node(s) had untolerated taint {virtual-kubelet.io/provider: sandboxd}, 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")
			},
			nodes:      diagNodes(),
			wantReason: "taint not tolerated: virtual-kubelet.io/provider=sandboxd:NoSchedule on vk-sandbox-0",
			wantFix:    "Exists NoSchedule",
		},
		{
			name: "toleration missing, nodes not readable",
			rt:   sandboxd,
			mutate: func(p *corev1.Pod) {
				p.Spec.Tolerations = nil
				pendingUnschedulable(p, "0/4 nodes are available: 1 node(s) had untolerated taint {virtual-kubelet.io/provider: sandboxd}, 3 node(s) didn't match Pod's node affinity/selector.")
			},
			wantReason: "the virtual node's taint virtual-kubelet.io/provider is not tolerated",
			wantFix:    "Exists NoSchedule",
		},
		{
			name: "spec.nodeName pinned to a virtual node",
			rt:   nil,
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = "vk-sandbox-0"
				p.Status.Phase = corev1.PodPending
			},
			nodes:      diagNodes(),
			wantReason: "pinned to virtual node vk-sandbox-0 by spec.nodeName",
			wantFix:    "scheduler was bypassed",
		},
		{
			name: "provider CreatePod failure: missing template annotation",
			rt:   sandboxd,
			mutate: func(p *corev1.Pod) {
				delete(p.Annotations, SandboxdAnnotationTemplate)
				p.Spec.NodeName = "vk-sandbox-0"
				p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodPending, "ProviderFailed", "sandboxd: annotation sandbox.cocoonstack.io/template is required"
			},
			events:     []corev1.Event{warning("ProviderCreateFailed", "sandboxd: annotation sandbox.cocoonstack.io/template is required")},
			nodes:      diagNodes(),
			wantReason: "missing annotation sandbox.cocoonstack.io/template",
			wantFix:    "--template",
		},
		{
			name: "provider CreatePod failure: missing cocoon VM name",
			rt:   cocoon,
			mutate: func(p *corev1.Pod) {
				delete(p.Annotations, CocoonAnnotationVMName)
				p.Spec.NodeName = "vk-cocoon-0"
				p.Status.Phase = corev1.PodPending
			},
			events:     []corev1.Event{warning("ProviderCreateFailed", "vm.cocoonstack.io/name annotation is required")},
			nodes:      diagNodes(),
			wantReason: "missing annotation vm.cocoonstack.io/name",
			wantFix:    "per-member VM name",
		},
		{
			name: "provider CreatePod failure: runtime mismatch",
			rt:   sandboxd,
			mutate: func(p *corev1.Pod) {
				p.Annotations[SandboxdAnnotationRuntime] = "kata"
				p.Spec.NodeName = "vk-sandbox-0"
				p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodPending, "ProviderFailed", "unsupported runtime \"kata\": this node serves sandboxd"
			},
			nodes:      diagNodes(),
			wantReason: `runtime annotation is "kata", not sandboxd`,
			wantFix:    "sandbox.cocoonstack.io/runtime=sandboxd",
		},
		{
			name: "provider CreatePod failure: no warm capacity for the key",
			rt:   sandboxd,
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = "vk-sandbox-0"
				p.Status.Phase = corev1.PodPending
			},
			events:     []corev1.Event{warning("ProviderCreateFailed", "claim sandbox: no warm capacity for pool key rt:24.04/none/small")},
			nodes:      diagNodes(),
			wantReason: "no warm capacity for (template ghcr.io/cocoonstack/sandbox/rt:24.04, net none, size small)",
			wantFix:    "SandboxWarmPool replicas",
		},
		{
			name: "Pod marked Failed under restartPolicy Never",
			rt:   sandboxd,
			mutate: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Spec.NodeName = "vk-sandbox-0"
				p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "ProviderFailed", "claim sandbox: no warm capacity"
			},
			nodes:      diagNodes(),
			wantReason: "no warm capacity for",
			wantFix:    "restartPolicy Never",
		},
		{
			name: "Pod failed under restartPolicy Never without a provider reason",
			rt:   nil,
			mutate: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Status.Phase = corev1.PodFailed
			},
			wantReason: "the Pod failed under restartPolicy Never",
			wantFix:    "never retried",
		},
		{
			name:       "create denied by cocoon-webhook",
			rt:         cocoon,
			noPod:      true,
			errs:       []string{`create desk-1: create Pod: admission webhook "cocoon-webhook.cocoonstack.io" denied the request: pod creator system:serviceaccount:vdi:ctpool is not in POD_CREATORS`},
			wantReason: "create denied by cocoon-webhook",
			wantFix:    "POD_CREATORS",
		},
		{
			name: "insufficient memory",
			rt:   nil,
			mutate: func(p *corev1.Pod) {
				pendingUnschedulable(p, "0/4 nodes are available: 2 Insufficient memory, 2 node(s) had untolerated taint {virtual-kubelet.io/provider: sandboxd}. preemption: 0/4 nodes are available: 2 No preemption victims found for incoming pod.")
			},
			nodes:      diagNodes(),
			wantReason: "not enough capacity: memory",
			wantFix:    "starts by itself",
		},
		{
			name: "image pull back-off",
			rt:   nil,
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = "node-a"
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
			},
			wantReason: "image cannot be pulled",
			wantFix:    "registry",
		},
		{
			name: "registry refused: no pull secrets",
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = "node-a"
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull",
					Message: `failed to pull and unpack image "registry.example/desk:1": failed to resolve reference "registry.example/desk:1": unexpected status from HEAD request: 401 Unauthorized`}}}}
			},
			wantReason: "the registry refused the pull credentials",
			wantFix:    "the pool names no imagePullSecrets: create a Secret of type kubernetes.io/dockerconfigjson",
		},
		{
			name: "registry refused: the back-off's event names it, pull secrets named",
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = "node-a"
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror"}}
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.example/desk:1"`}}}}
			},
			events:     []corev1.Event{warning("Failed", `Failed to pull image "registry.example/desk:1": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`)},
			wantReason: "the registry refused the pull credentials",
			wantFix:    "the member pulls with the Secrets regcred, mirror: check that one holds a login",
		},
		{
			name: "registry refused: no basic auth credentials",
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = "node-a"
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "rpc error: code = Unknown desc = no basic auth credentials"}}}}
			},
			wantReason: "the registry refused the pull credentials",
			wantFix:    "Secrets regcred",
		},
		{
			name: "registry 403",
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = "node-a"
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "unexpected status code 403 Forbidden"}}}}
			},
			wantReason: "the registry refused the pull credentials",
			wantFix:    "--image-pull-secret NAME",
		},
		{
			name: "pull failure that is no refusal of credentials",
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = "node-a"
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "dial tcp: lookup registry.example: no such host"}}}}
			},
			events:     []corev1.Event{warning("Failed", "Failed to pull image: dial tcp: lookup registry.example: no such host")},
			wantReason: "image cannot be pulled",
			wantFix:    "registry, credentials",
		},
		{
			name: "image never pulled",
			rt:   nil,
			mutate: func(p *corev1.Pod) {
				p.Spec.NodeName = "node-a"
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: "ErrImageNeverPull", Message: `Container image "d:1" is not present with pull policy of Never`}}}}
			},
			wantReason: "pull policy is Never",
			wantFix:    "load the image",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := diagSpec(tc.rt)
			snap := Snapshot{Namespace: "vdi", Pool: "desk", ConfigMap: BuildConfigMap("vdi", "desk", spec)}
			snap.PVCs = append(snap.PVCs, BuildPVC("vdi", "desk", 1, spec))
			if !tc.noPod {
				pod := BuildPod("vdi", "desk", 1, spec)
				if tc.mutate != nil {
					tc.mutate(pod)
				}
				snap.Pods = append(snap.Pods, pod)
			} else {
				snap.PVCs = nil
			}
			v := Observe(snap, now)
			d := Diagnose(v.Member("desk-1"), tc.events, tc.nodes, tc.errs)
			if !strings.Contains(d.Reason, tc.wantReason) {
				t.Errorf("reason = %q, want it to contain %q", d.Reason, tc.wantReason)
			}
			if !strings.Contains(d.Fix, tc.wantFix) {
				t.Errorf("fix = %q, want it to contain %q", d.Fix, tc.wantFix)
			}
		})
	}
}

// A claimed member without its Pod, or without its Pod and data, within
// the size and above it: the diagnosis says what a reconcile does with it.
func TestDiagnoseClaimedMemberLost(t *testing.T) {
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		size       int // the pool's; the member is desk-2
		pvc        bool
		wantReason string
		wantFix    string
	}{
		{"Pod gone", 2, true, "stopped: the PVC exists but no Pod", "starts it with its user's data PVC; the claim is kept"},
		{"Pod gone, above the size", 1, true, "stopped: the PVC exists but no Pod", "starts it with its user's data PVC; the claim is kept"},
		{"Pod and data gone", 2, false, "claimed, but its Pod and data PVC are gone", "builds it again for its user"},
		{"Pod and data gone, above the size", 1, false, "claimed above the pool's size, and its Pod and data PVC are gone", "not built again (the pool was made smaller): release it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := diagSpec(nil)
			spec.Size = tc.size
			snap := Snapshot{Namespace: "vdi", Pool: "desk", ConfigMap: BuildConfigMap("vdi", "desk", spec),
				Leases: []*coordinationv1.Lease{ClaimLease("vdi", "desk", "desk-2", "ann@example.com", now)}}
			if tc.pvc {
				snap.PVCs = []*corev1.PersistentVolumeClaim{BuildPVC("vdi", "desk", 2, spec)}
			}
			v := Observe(snap, now)
			m := v.Member("desk-2")
			if m == nil || !m.Claimed || m.AboveSize != (tc.size < 2) {
				t.Fatalf("member %+v", m)
			}
			d := Diagnose(m, nil, nil, nil)
			if !strings.Contains(d.Reason, tc.wantReason) || !strings.Contains(d.Fix, tc.wantFix) {
				t.Errorf("diagnosis %q / %q, want %q / %q", d.Reason, d.Fix, tc.wantReason, tc.wantFix)
			}
		})
	}
}

func TestDiagnoseSurfacesClaimID(t *testing.T) {
	spec := diagSpec(&Runtime{Backend: BackendSandboxd, Template: "t"})
	pod := BuildPod("vdi", "desk", 1, spec)
	pod.Annotations[SandboxdAnnotationClaimID] = "claim-7f3a"
	pod.Status.Phase = corev1.PodPending
	snap := Snapshot{Namespace: "vdi", Pool: "desk", ConfigMap: BuildConfigMap("vdi", "desk", spec), Pods: []*corev1.Pod{pod}, PVCs: []*corev1.PersistentVolumeClaim{BuildPVC("vdi", "desk", 1, spec)}}
	v := Observe(snap, time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	if d := Diagnose(v.Member("desk-1"), nil, nil, nil); d.ClaimID != "claim-7f3a" {
		t.Fatalf("claim id = %q", d.ClaimID)
	}
}

func TestFirstSentence(t *testing.T) {
	cases := []struct {
		name, msg, want string
	}{
		{
			name: "scheduler message with the preemption verdict",
			msg:  "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) had untolerated taint {virtual-kubelet.io/provider: sandboxd}. preemption: 0/4 nodes are available: 2 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
			want: "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) had untolerated taint {virtual-kubelet.io/provider: sandboxd}.",
		},
		{
			name: "scheduler message without preemption",
			msg:  "0/3 nodes are available: 3 Insufficient memory.",
			want: "0/3 nodes are available: 3 Insufficient memory.",
		},
		{
			name: "dotted resource names and taint keys do not end the sentence",
			msg:  "0/5 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 4 Insufficient nvidia.com/gpu. preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling..",
			want: "0/5 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 4 Insufficient nvidia.com/gpu.",
		},
		{
			name: "a PreFilter refusal",
			msg:  "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
			want: "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
		},
		{
			name: "a message without a sentence end is whole",
			msg:  "CrashLoopBackOff: back-off 5m0s restarting failed container=desktop pod=kiosk-20",
			want: "CrashLoopBackOff: back-off 5m0s restarting failed container=desktop pod=kiosk-20",
		},
		{
			name: "a line break ends the first sentence",
			msg:  "ErrImagePull: rpc error: code = NotFound\nfailed to resolve reference registry.example/desktop:9",
			want: "ErrImagePull: rpc error: code = NotFound",
		},
		{
			name: "surrounding white space is trimmed",
			msg:  "  \t0/1 nodes are available: 1 Insufficient cpu.   ",
			want: "0/1 nodes are available: 1 Insufficient cpu.",
		},
		{
			name: "a leading period does not make an empty sentence",
			msg:  ". then words",
			want: ". then words",
		},
		{
			name: "a period before a tab ends the sentence",
			msg:  "one.\ttwo.",
			want: "one.",
		},
		{name: "empty", msg: "", want: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := FirstSentence(c.msg); got != c.want {
				t.Errorf("FirstSentence(%q)\n got %q\nwant %q", c.msg, got, c.want)
			}
		})
	}
}
