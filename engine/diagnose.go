package engine

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Diagnosis explains in plain words why a member is not Ready, and what fixes it.
type Diagnosis struct {
	// Reason is short enough for a table cell.
	Reason string
	// Fix tells the admin what to do; empty when nothing is needed.
	Fix string
	// Evidence is the cluster's own words (scheduler message, event) behind the reason.
	Evidence string
	// ClaimID is the sandboxd claim id the provider wrote back, when present.
	ClaimID string
}

// Provider failure reasons virtual-kubelet uses: it patches the Pod status
// with reason ProviderFailed and records a Warning ProviderCreateFailed Event.
const (
	reasonProviderFailed       = "ProviderFailed"
	reasonProviderCreateFailed = "ProviderCreateFailed"
	virtualKubeletTypeLabel    = "type"
	virtualKubeletTypeValue    = "virtual-kubelet"
)

// Diagnose explains a member that is not Ready from its Pod, the Events of
// the Pod and PVC, the nodes (nil when they cannot be read) and the errors of
// the last reconcile. It covers every mistake of runtime-backends.md: no node
// matching the selector, a missing toleration for a virtual node's taint, a
// Pod pinned to a virtual node by spec.nodeName, a provider CreatePod failure
// (missing annotation, runtime mismatch, no warm capacity), a Pod marked
// Failed under restartPolicy Never, a create denied by cocoon-webhook, and
// a create refused by the namespace's Pod Security admission.
// Its fixes name no key of any user interface (DiagnoseWith adds them).
func Diagnose(m *Member, events []corev1.Event, nodes []*corev1.Node, reconcileErrors []string) Diagnosis {
	return DiagnoseWith(m, events, nodes, reconcileErrors, Hints{})
}

// Hints are how a user interface runs the actions a diagnosis's fix
// points at, added after the action's name: Reconcile "ctrl+r" makes "run
// reconcile (ctrl+r)". The zero Hints adds nothing, for a reader with no
// keys (--once, the CLI).
type Hints struct {
	Reconcile string
}

// reconcile is the hint after "reconcile": " (key)", or "".
func (h Hints) reconcile() string {
	if h.Reconcile == "" {
		return ""
	}
	return " (" + h.Reconcile + ")"
}

// DiagnoseWith is Diagnose with the fixes pointing at the actions by h.
func DiagnoseWith(m *Member, events []corev1.Event, nodes []*corev1.Node, reconcileErrors []string, h Hints) Diagnosis {
	var d Diagnosis
	if m == nil {
		return d
	}
	if m.Pod != nil {
		d.ClaimID = m.Pod.Annotations[SandboxdAnnotationClaimID]
	}
	if r, ok := diagnoseNodeDown(m, d.ClaimID); ok {
		return r
	}
	if m.Claimed && m.Claim.Expired {
		d.Reason = "claim expired"
		d.Fix = "nobody else can take this desktop until it is released; force-release it to recover it"
		if m.State == StateReady {
			return d
		}
	}
	if r, ok := diagnoseLifecycle(m, reconcileErrors, h, d.ClaimID); ok {
		return r
	}
	if m.Pod == nil {
		return d
	}
	if r, ok := diagnosePod(m, latestWarning(events), nodes, d.ClaimID); ok {
		return r
	}
	return d
}

// diagnoseLifecycle explains what the member's objects, or their absence,
// say before its Pod is read: a create denied by cocoon-webhook, a Ready
// member (drifted or fine), a Missing or Stopped one (reconcile's work),
// and one being deleted.
func diagnoseLifecycle(m *Member, reconcileErrors []string, h Hints, claimID string) (Diagnosis, bool) {
	if denied := podSecurityDenial(m.Name, reconcileErrors); denied != "" && m.Pod == nil {
		return Diagnosis{Reason: "create refused by Pod Security admission", Evidence: denied, Fix: podSecurityFix(denied, h)}, true
	}
	if denied := webhookDenial(m.Name, reconcileErrors); denied != "" && m.Pod == nil {
		return Diagnosis{Reason: "create denied by cocoon-webhook", Evidence: denied,
			Fix: "the identity that creates member Pods is not in cocoon-webhook's POD_CREATORS: add this reconciler's user or service account to POD_CREATORS, or run the pool on another backend"}, true
	}
	switch m.State {
	case StateReady:
		if m.Serving {
			// A rollout's work: replaced in its turn, within the budget.
			return Diagnosis{Reason: "drifted from the pool definition", Fix: "on an earlier image, it serves claims until the rollout replaces it (ctpool-tui rollout status), or its release rebuilds it", ClaimID: claimID}, true
		}
		if m.Drift {
			return Diagnosis{Reason: "drifted from the pool definition", Fix: "replaced by the next reconcile when unclaimed, or at release", ClaimID: claimID}, true
		}
		return Diagnosis{ClaimID: claimID}, true
	case StateMissing:
		if msg := memberError(m.Name, reconcileErrors); msg != "" {
			return Diagnosis{Reason: "create failed", Evidence: msg, Fix: "see the error; the next reconcile tries again"}, true
		}
		if m.Claimed && m.AboveSize {
			return Diagnosis{Reason: "claimed above the pool's size, and its Pod and data PVC are gone", Fix: "not built again (the pool was made smaller): release it to end the claim"}, true
		}
		if m.Claimed {
			return Diagnosis{Reason: "claimed, but its Pod and data PVC are gone", Fix: "the next reconcile" + h.reconcile() + " builds it again for its user; the claim is kept"}, true
		}
		return Diagnosis{Reason: "not created yet", Fix: "run reconcile" + h.reconcile()}, true
	case StateStopped:
		if m.Claimed {
			return Diagnosis{Reason: "stopped: the PVC exists but no Pod", Fix: "the next reconcile" + h.reconcile() + " starts it with its user's data PVC; the claim is kept"}, true
		}
		return Diagnosis{Reason: "stopped: the PVC exists but no Pod", Fix: "the next reconcile" + h.reconcile() + " starts it"}, true
	case StateTerminating:
		r := Diagnosis{Reason: "being deleted"}
		if m.Pod != nil && len(m.Pod.Finalizers) > 0 {
			r.Fix = "if it stays, check the finalizers: " + strings.Join(m.Pod.Finalizers, ", ")
		} else if m.PVC != nil && len(m.PVC.Finalizers) > 0 {
			r.Fix = "a PVC stays Terminating while a Pod still uses it (finalizers: " + strings.Join(m.PVC.Finalizers, ", ") + ")"
		}
		return r, true
	}
	return Diagnosis{}, false
}

// diagnosePod explains a member from its Pod (not nil) and the latest
// Warning Event ev (nil for none): a Pod pinned to a virtual node, a
// provider's failure, then its state (Unschedulable, Failed, Starting).
func diagnosePod(m *Member, ev *corev1.Event, nodes []*corev1.Node, claimID string) (Diagnosis, bool) {
	pod := m.Pod
	backend := podBackend(pod)
	node := findNode(nodes, pod.Spec.NodeName)

	// A Pod pinned to a virtual node bypasses the scheduler.
	if pod.Spec.NodeName != "" && isVirtualNode(node, pod.Spec.NodeName) && !toleratesProvider(pod) {
		r := Diagnosis{ClaimID: claimID, Reason: "pinned to virtual node " + pod.Spec.NodeName + " by spec.nodeName",
			Fix: "the scheduler was bypassed: the Pod succeeds or fails on its annotations alone; remove spec.nodeName and use the backend's node selector and toleration"}
		if f := providerFailure(pod, ev); f != "" {
			r.Evidence = f
		}
		return r, true
	}
	if f := providerFailure(pod, ev); f != "" {
		return diagnoseProvider(pod, backend, f, claimID), true
	}
	switch m.State {
	case StateUnschedulable:
		return diagnoseUnschedulable(pod, m.Message, nodes, backend, claimID), true
	case StateFailed:
		r := diagnoseFailed(pod, m.Message, ev, claimID)
		if exit := lastExit(pod); exit != "" {
			r.Evidence = joinWords("; ", r.Evidence, exit)
		}
		if b := m.Backoff; b != nil && !m.Claimed {
			// The crash loop the reconciler holds back: named with its
			// count, and when the member is built again.
			r.Reason = fmt.Sprintf("%s (failure %d in a row)", r.Reason, b.Failures)
			r.Fix = fmt.Sprintf("%s; kept for its logs: the reconciler builds it again after %s (the wait doubles with each failure, at most %s; Ready starts it again)",
				r.Fix, b.RetryAt.UTC().Format(time.RFC3339), BackoffMax)
		}
		return r, true
	case StateStarting:
		r := Diagnosis{ClaimID: claimID, Reason: "starting"}
		if pod.Spec.NodeName == "" {
			r.Reason = "waiting for the scheduler"
		} else if pod.Status.Phase == corev1.PodRunning {
			r.Reason = "running, not Ready yet"
		}
		if ev != nil {
			r.Evidence = ev.Reason + ": " + ev.Message
		}
		return r, true
	}
	return Diagnosis{}, false
}

// diagnoseProvider explains the provider's CreatePod failure f on its
// backend: a wrong or missing annotation, or no warm capacity.
func diagnoseProvider(pod *corev1.Pod, backend, f, claimID string) Diagnosis {
	r := Diagnosis{ClaimID: claimID, Evidence: f}
	low := strings.ToLower(f)
	switch {
	case backend == BackendSandboxd && pod.Annotations[SandboxdAnnotationRuntime] != "" && pod.Annotations[SandboxdAnnotationRuntime] != sandboxdRuntimeValue:
		r.Reason = fmt.Sprintf("runtime annotation is %q, not sandboxd", pod.Annotations[SandboxdAnnotationRuntime])
		r.Fix = "a vk-sandbox node serves one runtime: set " + SandboxdAnnotationRuntime + "=sandboxd (re-apply the pool)"
	case backend == BackendSandboxd && pod.Annotations[SandboxdAnnotationTemplate] == "":
		r.Reason = "missing annotation " + SandboxdAnnotationTemplate
		r.Fix = "sandboxd needs the pool template: apply the pool with --template"
	case backend == BackendCocoon && pod.Annotations[CocoonAnnotationVMName] == "":
		r.Reason = "missing annotation " + CocoonAnnotationVMName
		r.Fix = "vk-cocoon needs a per-member VM name: re-apply the pool so members are rebuilt"
	case strings.Contains(low, "annotation"):
		r.Reason = "the provider refused a missing or wrong annotation"
		r.Fix = "compare the Pod's annotations with the backend's contract and re-apply the pool"
	case strings.Contains(low, "warm") || strings.Contains(low, "capacity") || strings.Contains(low, "no available") || strings.Contains(low, "exhausted"):
		r.Reason = "no warm capacity for " + warmKey(pod)
		r.Fix = "raise the SandboxWarmPool replicas for this (template, net, size) key, or use a key that is provisioned"
	default:
		r.Reason = "the provider failed to create the Pod"
		r.Fix = "read the provider's message; the Pod is retried while Pending"
	}
	if pod.Status.Phase == corev1.PodFailed && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		r.Fix += "; under restartPolicy Never the Pod was marked Failed and is not retried: the reconciler replaces it when unclaimed"
	}
	return r
}

// diagnoseFailed explains a Failed member from the kubelet's message and
// the latest Warning Event ev (nil for none), which says more than the
// message of a back-off (the registry's answer to the pull).
func diagnoseFailed(pod *corev1.Pod, msg string, ev *corev1.Event, claimID string) Diagnosis {
	r := Diagnosis{ClaimID: claimID, Evidence: msg}
	pull := strings.Contains(msg, "ImagePullBackOff") || strings.Contains(msg, "ErrImagePull")
	switch {
	case pull && registryRefusedCredentials(msg):
		r.Reason, r.Fix = "the registry refused the pull credentials", pullSecretsFix(pod)
	case pull && ev != nil && registryRefusedCredentials(ev.Message):
		r.Reason, r.Fix = "the registry refused the pull credentials", pullSecretsFix(pod)
		r.Evidence = msg + " (" + ev.Reason + ": " + ev.Message + ")"
	case pull:
		r.Reason = "image cannot be pulled"
		r.Fix = "check the image name and that every node that can run a member can pull it (registry, credentials)"
	case strings.Contains(msg, "ErrImageNeverPull"):
		r.Reason = "image is not on the node, and its pull policy is Never"
		r.Fix = "load the image onto every node that can run a member, or let the Pods pull it"
	case strings.Contains(msg, "InvalidImageName"):
		r.Reason = "the image name does not parse"
		r.Fix = "apply the pool again with a valid --image"
	case strings.Contains(msg, "CrashLoopBackOff"):
		r.Reason = "the desktop container keeps crashing"
		r.Fix = "read its logs; with --init the image's entrypoint must not exit"
	case strings.Contains(msg, "CreateContainerError"):
		r.Reason = "the container cannot be created"
		r.Fix = "see the message; often a bad command or mount"
	case strings.Contains(msg, "PVC") && strings.Contains(msg, "missing"):
		r.Reason = "the data PVC is missing"
		r.Fix = "replaced by the next reconcile when unclaimed"
	case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
		r.Reason = "the Pod failed under restartPolicy Never"
		r.Fix = "it is never retried; the reconciler replaces it when unclaimed"
	default:
		r.Reason = "the Pod failed"
		r.Fix = "the reconciler replaces it when unclaimed"
	}
	return r
}

// registryRefusals are the words of a registry (through the container
// runtime) that refused a pull for its credentials: none given, or wrong.
var registryRefusals = []string{
	"401 unauthorized", "403 forbidden", "authorization failed", "pull access denied",
	"no basic auth credentials", "authentication required", "denied: requested access",
}

// registryRefusedCredentials says whether an image pull failure's message
// is the registry refusing the pull's credentials.
func registryRefusedCredentials(msg string) bool {
	low := strings.ToLower(msg)
	for _, w := range registryRefusals {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// pullSecretsFix names the Secrets the member Pod pulls with, or their
// absence, and what to do.
func pullSecretsFix(pod *corev1.Pod) string {
	names := make([]string, 0, len(pod.Spec.ImagePullSecrets))
	for _, s := range pod.Spec.ImagePullSecrets {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return "the pool names no imagePullSecrets: create a Secret of type kubernetes.io/dockerconfigjson with a login to the image's registry " +
			"(kubectl create secret docker-registry) and apply the pool with --image-pull-secret NAME; or check the image name (a registry also answers so for an image that does not exist)"
	}
	return "the member pulls with the Secrets " + strings.Join(names, ", ") + ": check that one holds a login to the image's registry that may pull this image, and renew it if it expired " +
		"(the next Pod pulls with the Secrets' current contents); or check the image name (a registry also answers so for an image that does not exist)"
}

// diagnoseNodeDown explains a member whose Pod's node is down
// (Member.NodeDown). It comes before every reading of the Pod's own status
// (not Ready, probes, crashes, a failure): the kubelet that would update them
// is gone, so they are stale, and the desktop is probably fine. A blocked
// member is left to its block, and a member being deleted stays so until
// the node is back to confirm it.
func diagnoseNodeDown(m *Member, claimID string) (Diagnosis, bool) {
	if m.NodeDown == "" || m.Pod == nil || m.Blocked != "" {
		return Diagnosis{}, false
	}
	r := Diagnosis{ClaimID: claimID, Evidence: m.NodeDown, Reason: "node " + m.Node + " is down"}
	if m.State == StateTerminating {
		r.Fix = "the Pod stays Terminating until node " + m.Node + " is back and its kubelet confirms the delete (check the node's kubelet and container runtime)"
		return r, true
	}
	r.Fix = "the desktop is probably fine: its claim and data PVC are kept, and nothing is replaced while the node is down; " +
		"the member comes back when node " + m.Node + " does (check the node's kubelet and container runtime)"
	return r, true
}

// FirstSentence is the part of a member's message that a narrow table cell
// shows: the text up to and including the first period that ends the text or
// is followed by white space, or up to the first line break, whichever comes
// first; a message with neither is returned whole. Surrounding white space is
// trimmed.
//
// kube-scheduler writes an Unschedulable Pod's message (its FitError) as
//
//	0/N nodes are available: 2 Insufficient cpu, 2 node(s) had untolerated taint {k: v}. preemption: 0/N nodes are available: ...
//
// that is the node count, then every filter's reason sorted and joined by ", "
// and ended by ".", then the preemption plugin's verdict. The first sentence
// is therefore the node count with every reason, and it leaves out only the
// preemption verdict. Periods inside a reason are never followed by a space
// (resource names, taint keys and labels such as nvidia.com/gpu or
// node.kubernetes.io/unreachable), so they do not end the sentence. When a
// PreFilter plugin refuses the Pod, its message takes the place of the
// reasons and is ended the same way ("0/N nodes are available: pod has unbound
// immediate PersistentVolumeClaims.").
func FirstSentence(msg string) string {
	msg = strings.TrimSpace(msg)
	for i := 0; i < len(msg); i++ {
		switch msg[i] {
		case '\n', '\r', '\v', '\f':
			return strings.TrimSpace(msg[:i])
		case '.':
			if i > 0 && (i+1 == len(msg) || isSentenceSpace(msg[i+1])) {
				return msg[:i+1]
			}
		}
	}
	return msg
}

func isSentenceSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// providerFailure returns the provider's CreatePod failure from the Pod
// status or a ProviderCreateFailed Event, or "".
func providerFailure(pod *corev1.Pod, ev *corev1.Event) string {
	if pod.Status.Reason == reasonProviderFailed {
		return joinReason(pod.Status.Reason, pod.Status.Message, "")
	}
	if ev != nil && ev.Reason == reasonProviderCreateFailed {
		return ev.Reason + ": " + ev.Message
	}
	return ""
}

// podSecurityDenial is the reconcile error of member whose Pod create the
// namespace's Pod Security admission refused ("violates PodSecurity"), or "".
func podSecurityDenial(member string, errs []string) string {
	for _, e := range errs {
		if MentionsMember(e, member) && strings.Contains(e, "violates PodSecurity") {
			return e
		}
	}
	return ""
}

// podSecurityFix tells how to make admission take the member Pods: the
// namespace enforces a level (named in the API server's message as
// "level:version") stricter than the pool's.
func podSecurityFix(msg string, h Hints) string {
	enforced := "a level"
	if _, rest, ok := strings.Cut(msg, `violates PodSecurity "`); ok {
		if v, _, ok := strings.Cut(rest, `"`); ok && v != "" && len(v) <= 40 && strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789.:-") == "" {
			enforced = v
		}
	}
	return "the namespace's label " + LabelPodSecurityEnforce + " enforces " + enforced + ", stricter than the pool's podSecurity: relabel the namespace to the pool's level, " +
		"or apply the pool with a podSecurity the namespace admits; then run reconcile" + h.reconcile()
}

func webhookDenial(member string, errs []string) string {
	for _, e := range errs {
		if MentionsMember(e, member) && strings.Contains(e, "denied the request") &&
			(strings.Contains(e, "cocoon") || strings.Contains(e, "POD_CREATORS")) {
			return e
		}
	}
	return ""
}

func memberError(member string, errs []string) string {
	for _, e := range errs {
		if MentionsMember(e, member) {
			return e
		}
	}
	return ""
}

func latestWarning(events []corev1.Event) *corev1.Event {
	var best *corev1.Event
	for i := range events {
		e := &events[i]
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		if best == nil || e.LastTimestamp.After(best.LastTimestamp.Time) {
			best = e
		}
	}
	return best
}

func podBackend(pod *corev1.Pod) string {
	switch {
	case pod.Annotations[SandboxdAnnotationTemplate] != "" || pod.Spec.NodeSelector[SandboxdNodeLabel] != "":
		return BackendSandboxd
	case pod.Annotations[CocoonAnnotationVMName] != "" || pod.Spec.NodeSelector[CocoonNodeLabel] != "":
		return BackendCocoon
	}
	return BackendStandard
}

func warmKey(pod *corev1.Pod) string {
	a := pod.Annotations
	return fmt.Sprintf("(template %s, net %s, size %s)", orDefault(a[SandboxdAnnotationTemplate], "-"), orDefault(a[SandboxdAnnotationNet], "default"), orDefault(a[SandboxdAnnotationSize], "default"))
}

// lastExit is how the Pod's failing container last ended, in the Pod's own
// words: its terminated reason, exit code and message ("" when no
// container has ended). A crash loop's waiting message says only that it
// backs off; this is why.
func lastExit(pod *corev1.Pod) string {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			t := cs.State.Terminated
			if t == nil {
				t = cs.LastTerminationState.Terminated
			}
			if t == nil || (t.ExitCode == 0 && t.Reason == "Completed" && cs.State.Waiting == nil) {
				continue
			}
			return joinWords(": ", "container "+cs.Name+" last exited ("+joinWords(", ", t.Reason, "exit code "+strconv.Itoa(int(t.ExitCode)))+")", t.Message)
		}
	}
	return ""
}

// joinWords joins the parts that are not empty with sep.
func joinWords(sep string, parts ...string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}
