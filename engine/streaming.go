package engine

import corev1 "k8s.io/api/core/v1"

// noStreamingReason is why a sandboxd member has no console and no logs
// (runtime-backends.md: the provider serves none of these subresources).
const noStreamingReason = "the sandboxd provider serves no exec/logs/attach/port-forward"

// PodBackend tells a member Pod's runtime backend from its annotations and
// node selector: the Pod, not the pool definition, says where it runs.
func PodBackend(pod *corev1.Pod) string { return podBackend(pod) }

// MemberBackend is the backend of a member: its Pod's when it has one, the
// pool definition's otherwise.
func MemberBackend(spec Spec, pod *corev1.Pod) string {
	if pod != nil {
		return podBackend(pod)
	}
	return spec.BackendName()
}

// StreamingUnavailable says why a backend cannot stream logs or run exec
// sessions, or "" when it can.
func StreamingUnavailable(backend string) string {
	if backend == BackendSandboxd {
		return noStreamingReason
	}
	return ""
}
