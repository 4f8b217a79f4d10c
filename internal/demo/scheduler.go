package demo

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scheduler timing at Speed 1: a new Pod waits this long before its first
// attempt, and an unchanged failure is re-announced (Event count) this often.
const (
	schedLatencyMin = 200 * time.Millisecond
	schedLatencyMax = 700 * time.Millisecond
	schedReannounce = 15 * time.Second
)

// nodeUse is what the Pods bound to a node request.
type nodeUse struct {
	cpuMilli, memBytes, pods int64
}

// schedule plays kube-scheduler for the Pending Pods without a node, oldest
// first: the Pod goes to the feasible node with the most room left (node
// selector, taints and tolerations, cpu, memory and Pod count are checked in
// the scheduler's order); when none is feasible, it gets PodScheduled=False,
// reason Unschedulable, with the scheduler's message, and a FailedScheduling
// Event. A Pod waits quietly until its claims are Bound (a simplification:
// the real scheduler reports unbound immediate claims).
func (s *Sim) schedule(ctx context.Context, nodes []corev1.Node, pods []corev1.Pod, pvcs []corev1.PersistentVolumeClaim) {
	bound := map[string]bool{}
	for _, c := range pvcs {
		if c.Status.Phase == corev1.ClaimBound && c.DeletionTimestamp == nil {
			bound[c.Name] = true
		}
	}
	use := map[string]*nodeUse{}
	for i := range nodes {
		use[nodes[i].Name] = &nodeUse{}
	}
	var pending []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != "" {
			if u := use[p.Spec.NodeName]; u != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				cpu, mem := podRequests(p)
				u.cpuMilli += cpu
				u.memBytes += mem
				u.pods++
			}
			continue
		}
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending &&
			(p.Spec.SchedulerName == "" || p.Spec.SchedulerName == corev1.DefaultSchedulerName) {
			pending = append(pending, p)
		}
	}
	sort.SliceStable(pending, func(i, j int) bool {
		a, b := pending[i], pending[j]
		if pa, pb := priority(a), priority(b); pa != pb {
			return pa > pb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	for _, p := range pending {
		ps := s.podState(p)
		if !s.due(ps.schedAt) || !claimsBound(p, bound) {
			continue
		}
		node, msg := fit(p, nodes, use)
		if node == "" {
			s.unschedulable(ctx, p, ps, msg)
			continue
		}
		if s.bind(ctx, p, ps, node) {
			cpu, mem := podRequests(p)
			u := use[node]
			u.cpuMilli += cpu
			u.memBytes += mem
			u.pods++
		}
	}
}

// bind assigns the Pod to the node (what the binding subresource does).
func (s *Sim) bind(ctx context.Context, p *corev1.Pod, ps *podSim, node string) bool {
	b := p.DeepCopy()
	b.Spec.NodeName = node
	setPodCondition(&b.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, s.now)
	out, err := s.client.CoreV1().Pods(p.Namespace).Update(ctx, b, metav1.UpdateOptions{})
	if err != nil {
		s.note("bind "+p.Name, err)
		return false
	}
	ps.schedMsg = ""
	s.record(ctx, podRef(out), corev1.EventTypeNormal, "Scheduled",
		fmt.Sprintf("Successfully assigned %s/%s to %s", p.Namespace, p.Name, node), sourceScheduler, "")
	return true
}

// unschedulable records a failed attempt: the condition when its message
// changed, and a FailedScheduling Event (a repeat raises its count).
func (s *Sim) unschedulable(ctx context.Context, p *corev1.Pod, ps *podSim, msg string) {
	cur := podCondition(&p.Status, corev1.PodScheduled)
	if cur == nil || cur.Status != corev1.ConditionFalse || cur.Reason != corev1.PodReasonUnschedulable || cur.Message != msg {
		u := p.DeepCopy()
		setPodCondition(&u.Status, corev1.PodCondition{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: msg,
		}, s.now)
		if _, err := s.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			s.note("mark "+p.Name+" unschedulable", err)
			return
		}
	}
	if msg != ps.schedMsg || s.due(ps.schedEventAt) {
		ps.schedMsg = msg
		ps.schedEventAt = s.now.Add(s.scale(schedReannounce))
		s.record(ctx, podRef(p), corev1.EventTypeWarning, "FailedScheduling", msg, sourceScheduler, "")
	}
}

// fit returns the best feasible node, or the scheduler's message of why there
// is none.
func fit(p *corev1.Pod, nodes []corev1.Node, use map[string]*nodeUse) (string, string) {
	if len(nodes) == 0 {
		return "", "no nodes available to schedule pods"
	}
	reasons := map[string]int{}
	preemption := map[string]int{}
	best, bestScore := "", -1.0
	cpu, mem := podRequests(p)
	for i := range nodes {
		n := &nodes[i]
		why, resolvable := filterNode(p, n, use[n.Name], cpu, mem)
		if len(why) == 0 {
			if sc := score(n, use[n.Name], cpu, mem); sc > bestScore {
				best, bestScore = n.Name, sc
			}
			continue
		}
		for _, w := range why {
			reasons[w]++
		}
		if resolvable {
			preemption["No preemption victims found for incoming pod"]++
		} else {
			preemption["Preemption is not helpful for scheduling"]++
		}
	}
	if best != "" {
		return best, ""
	}
	return "", fmt.Sprintf("0/%d nodes are available: %s. preemption: 0/%d nodes are available: %s.",
		len(nodes), histogram(reasons), len(nodes), histogram(preemption))
}

// filterNode runs the filters in the default profile's order and stops at
// the first that fails, as the scheduler does. resolvable is true when
// preemption could help (resources), false otherwise.
func filterNode(p *corev1.Pod, n *corev1.Node, u *nodeUse, cpu, mem int64) (reasons []string, resolvable bool) {
	if n.Spec.Unschedulable {
		return []string{"node(s) were unschedulable"}, false
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !tolerated(p.Spec.Tolerations, t) {
			return []string{fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)}, false
		}
	}
	for k, v := range p.Spec.NodeSelector {
		if n.Labels[k] != v {
			return []string{"node(s) didn't match Pod's node affinity/selector"}, false
		}
	}
	if u == nil {
		u = &nodeUse{}
	}
	alloc := n.Status.Allocatable
	if maxPods := alloc.Pods().Value(); u.pods+1 > maxPods {
		reasons = append(reasons, "Too many pods")
	}
	if cpu > 0 && u.cpuMilli+cpu > alloc.Cpu().MilliValue() {
		reasons = append(reasons, "Insufficient cpu")
	}
	if mem > 0 && u.memBytes+mem > alloc.Memory().Value() {
		reasons = append(reasons, "Insufficient memory")
	}
	return reasons, true
}

// score prefers the node with the most room left after placing the Pod
// (the default LeastAllocated strategy, which spreads Pods).
func score(n *corev1.Node, u *nodeUse, cpu, mem int64) float64 {
	if u == nil {
		u = &nodeUse{}
	}
	alloc := n.Status.Allocatable
	free := func(used, req, total int64) float64 {
		if total <= 0 {
			return 0
		}
		return float64(total-used-req) / float64(total)
	}
	return (free(u.cpuMilli, cpu, alloc.Cpu().MilliValue()) + free(u.memBytes, mem, alloc.Memory().Value())) / 2
}

// tolerated reports whether a toleration matches the taint.
func tolerated(tols []corev1.Toleration, t *corev1.Taint) bool {
	for _, tol := range tols {
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		switch tol.Operator {
		case corev1.TolerationOpExists:
			if tol.Key == "" || tol.Key == t.Key {
				return true
			}
		case corev1.TolerationOpEqual, "":
			if tol.Key == t.Key && tol.Value == t.Value {
				return true
			}
		}
	}
	return false
}

// histogram renders reason counts as the scheduler does: "count reason",
// sorted as strings, joined with commas.
func histogram(m map[string]int) string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// podRequests sums the containers' cpu (milli) and memory (bytes) requests;
// an init container that asks for more counts instead.
func podRequests(p *corev1.Pod) (cpu, mem int64) {
	for _, c := range p.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value()
	}
	for _, c := range p.Spec.InitContainers {
		cpu = max(cpu, c.Resources.Requests.Cpu().MilliValue())
		mem = max(mem, c.Resources.Requests.Memory().Value())
	}
	return cpu, mem
}

func priority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// claimsBound reports whether every claim the Pod mounts is Bound.
func claimsBound(p *corev1.Pod, bound map[string]bool) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && !bound[v.PersistentVolumeClaim.ClaimName] {
			return false
		}
	}
	return true
}

func podCondition(st *corev1.PodStatus, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setPodCondition sets a condition; the transition time changes only with the status.
func setPodCondition(st *corev1.PodStatus, c corev1.PodCondition, now time.Time) {
	c.LastProbeTime = metav1.Time{}
	if cur := podCondition(st, c.Type); cur != nil {
		if cur.Status == c.Status {
			c.LastTransitionTime = cur.LastTransitionTime
		} else {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		*cur = c
		return
	}
	c.LastTransitionTime = metav1.NewTime(now)
	st.Conditions = append(st.Conditions, c)
}
