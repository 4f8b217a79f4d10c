package engine

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// NodeDown returns "" when node n is fine, and otherwise the node's own words
// for why it is down: its Ready condition when that is not True ("Ready=Unknown
// since 2026-01-02T09:12:03Z: Kubelet stopped posting node status."), then each
// taint node.kubernetes.io/unreachable or node.kubernetes.io/not-ready
// ("node.kubernetes.io/unreachable:NoSchedule"), joined by "; ".
//
// A node with no Ready condition at all (a hand-made Node, or one whose
// kubelet has never reported) is unknown, not down: nothing says its
// kubelet stopped. A nil node is not down. The text is the cluster's, not
// sanitised: render it through internal/sanitize.
func NodeDown(n *corev1.Node) string {
	if n == nil {
		return ""
	}
	var parts []string
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady || c.Status == corev1.ConditionTrue {
			continue
		}
		s := "Ready=" + orDefault(string(c.Status), `""`)
		if !c.LastTransitionTime.IsZero() {
			s += " since " + c.LastTransitionTime.UTC().Format(time.RFC3339)
		}
		if why := joinReason("", c.Message, c.Reason); why != "" {
			s += ": " + why
		}
		parts = append(parts, s)
		break
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady {
			parts = append(parts, t.Key+":"+string(t.Effect))
		}
	}
	return strings.Join(parts, "; ")
}

// NodeDownMap is the down nodes of a node list, by name, with NodeDown's
// evidence: never nil (the nodes are known), empty when none is down.
func NodeDownMap(nodes []*corev1.Node) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		if why := NodeDown(n); why != "" {
			out[n.Name] = why
		}
	}
	return out
}
