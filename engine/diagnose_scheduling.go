package engine

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The scheduling part of a diagnosis: an Unschedulable member, read from
// the scheduler's message and checked against the nodes' labels and taints.

// diagnoseUnschedulable reads the scheduler's message and, when the nodes can
// be read, checks the selector and taints against them.
func diagnoseUnschedulable(pod *corev1.Pod, msg string, nodes []*corev1.Node, backend, claimID string) Diagnosis {
	r := Diagnosis{Evidence: msg, ClaimID: claimID}
	sel := pod.Spec.NodeSelector
	if nodes != nil {
		matching := 0
		var untolerated []string
		for _, n := range nodes {
			if !matchesSelector(n.Labels, sel) {
				continue
			}
			matching++
			for _, t := range n.Spec.Taints {
				if t.Effect == corev1.TaintEffectNoSchedule && !tolerates(pod.Spec.Tolerations, t) {
					untolerated = append(untolerated, fmt.Sprintf("%s=%s:%s on %s", t.Key, t.Value, t.Effect, n.Name))
				}
			}
		}
		switch {
		case len(sel) > 0 && matching == 0:
			r.Reason = "no node matches the node selector " + formatSelector(sel)
			r.Fix = selectorFix(backend)
			return r
		case len(untolerated) > 0 && len(untolerated) == matching:
			r.Reason = "taint not tolerated: " + untolerated[0]
			r.Fix = "add the toleration " + ProviderTaintKey + " Exists NoSchedule (ctpool-tui writes it for sandboxd and cocoon pools; re-apply the pool)"
			return r
		}
	}
	switch {
	case strings.Contains(msg, "untolerated taint") && strings.Contains(msg, ProviderTaintKey) && (backend != BackendStandard || !strings.Contains(msg, "Insufficient")):
		r.Reason = "the virtual node's taint " + ProviderTaintKey + " is not tolerated"
		r.Fix = "add the toleration " + ProviderTaintKey + " Exists NoSchedule (re-apply the pool)"
	case strings.Contains(msg, "didn't match Pod's node affinity/selector") && !strings.Contains(msg, "Insufficient"):
		r.Reason = "no node matches the node selector " + formatSelector(sel)
		r.Fix = selectorFix(backend)
	case strings.Contains(msg, "Insufficient"):
		r.Reason = "not enough capacity: " + insufficient(msg)
		r.Fix = "free capacity, add nodes, or lower --cpu/--mem; the member starts by itself when capacity returns"
	case strings.Contains(msg, "unbound immediate PersistentVolumeClaims") || strings.Contains(msg, "persistentvolumeclaim"):
		r.Reason = "the data PVC is not bound"
		r.Fix = "check the StorageClass has a dynamic provisioner"
	default:
		r.Reason = "the scheduler cannot place the Pod"
		r.Fix = "read the scheduler's message"
	}
	return r
}

func selectorFix(backend string) string {
	switch backend {
	case BackendSandboxd:
		return "is vk-sandbox running? Its node must carry " + SandboxdNodeLabel + "=sandboxd (--node-labels)"
	case BackendCocoon:
		return "is vk-cocoon running for this pool? Its node must carry " + CocoonNodeLabel + "=<pool> (VK_NODE_POOL); check --cocoon-pool"
	}
	return "label a node to match, or change the selector"
}

func findNode(nodes []*corev1.Node, name string) *corev1.Node {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

func isVirtualNode(n *corev1.Node, name string) bool {
	if n == nil {
		return strings.HasPrefix(name, "vk-")
	}
	if n.Labels[virtualKubeletTypeLabel] == virtualKubeletTypeValue {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Key == ProviderTaintKey {
			return true
		}
	}
	return false
}

func toleratesProvider(pod *corev1.Pod) bool {
	return tolerates(pod.Spec.Tolerations, corev1.Taint{Key: ProviderTaintKey, Effect: corev1.TaintEffectNoSchedule})
}

func tolerates(tols []corev1.Toleration, t corev1.Taint) bool {
	for _, tol := range tols {
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		if tol.Key != "" && tol.Key != t.Key {
			continue
		}
		switch tol.Operator {
		case corev1.TolerationOpExists:
			return true
		case corev1.TolerationOpEqual, "":
			if tol.Key != "" && tol.Value == t.Value {
				return true
			}
		}
	}
	return false
}

func matchesSelector(labels, sel map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func formatSelector(sel map[string]string) string {
	if len(sel) == 0 {
		return "(none)"
	}
	parts := make([]string, 0, len(sel))
	for k, v := range sel {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func insufficient(msg string) string {
	var res []string
	for _, part := range strings.Split(msg, ",") {
		part = strings.TrimSpace(part)
		if i := strings.Index(part, "Insufficient "); i >= 0 {
			res = append(res, strings.TrimSuffix(part[i+len("Insufficient "):], "."))
		}
	}
	if len(res) == 0 {
		return "resources"
	}
	return strings.Join(res, ", ")
}
