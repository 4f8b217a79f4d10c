//go:build integration

package systest_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The randomized run's diagnosis: when a check names a member, the report
// shows what the API server holds for it right then (its Pod, PVC and Lease,
// the Pod's node, the events of its objects) beside the history the watches
// delivered, so that a violation tells whose state it is.

// podSummary is a Pod's phase, node and readiness in a few words.
func podSummary(p *corev1.Pod) string {
	ready := "not-ready"
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = "ready"
		}
	}
	node := p.Spec.NodeName
	if node == "" {
		node = "-"
	}
	phase := string(p.Status.Phase)
	if phase == "" {
		phase = "NoPhase"
	}
	s := phase + " node " + node + " " + ready
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			s += " scheduled=" + string(c.Status) + "/" + c.Reason
		}
	}
	return s
}

// explain is the member's history and its objects as the API server holds
// them now (h.mu held: it reads only the API server and the replay).
func (h *chaosHarness) explain(ctx context.Context, member string) string {
	return h.historyOf(member) + h.objectsOf(ctx, member)
}

// objectsOf reads the member's Pod, PVC and Lease (by name: a Lease is the
// member's claim whether it carries the pool's labels or not), the Pod's
// node and the events of the Pod and the PVC, and prints them.
func (h *chaosHarness) objectsOf(ctx context.Context, member string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	c, ns := h.env.Client, h.env.Namespace
	var b strings.Builder
	fmt.Fprintf(&b, "\n\t\tobjects of %s (read %s):", member, time.Now().UTC().Format("15:04:05.000"))
	meta := func(m metav1.ObjectMeta) string {
		s := fmt.Sprintf("uid %s rv %s created %s labels %v", shortUID(m.UID), m.ResourceVersion, m.CreationTimestamp.UTC().Format("15:04:05"), m.Labels)
		if m.DeletionTimestamp != nil {
			s += " deletionTimestamp " + m.DeletionTimestamp.UTC().Format("15:04:05")
		}
		if len(m.Finalizers) > 0 {
			s += fmt.Sprintf(" finalizers %v", m.Finalizers)
		}
		return s
	}
	pod, err := c.CoreV1().Pods(ns).Get(ctx, member, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		b.WriteString("\n\t\t  pod: none")
		pod = nil
	case err != nil:
		fmt.Fprintf(&b, "\n\t\t  pod: %v", err)
		pod = nil
	default:
		fmt.Fprintf(&b, "\n\t\t  pod: %s; %s; scheduler %q", podSummary(pod), meta(pod.ObjectMeta), pod.Spec.SchedulerName)
		for _, cond := range pod.Status.Conditions {
			fmt.Fprintf(&b, "\n\t\t    condition %s=%s %s %s (%s)", cond.Type, cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime.UTC().Format("15:04:05"))
		}
		for _, cs := range pod.Status.ContainerStatuses {
			fmt.Fprintf(&b, "\n\t\t    container %s image %s ready %v state %+v", cs.Name, cs.Image, cs.Ready, cs.State)
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				fmt.Fprintf(&b, "\n\t\t    volume %s: pvc %s", v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	if pod != nil && pod.Spec.NodeName != "" {
		node, err := c.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			fmt.Fprintf(&b, "\n\t\t  node %s: %v", pod.Spec.NodeName, err)
		} else {
			ready := "unknown"
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					ready = string(cond.Status)
				}
			}
			fmt.Fprintf(&b, "\n\t\t  node %s: Ready=%s kwok annotation %q unschedulable %v", node.Name, ready, node.Annotations["kwok.x-k8s.io/node"], node.Spec.Unschedulable)
		}
	}
	pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, engine.PVCName(member), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		b.WriteString("\n\t\t  pvc: none")
	case err != nil:
		fmt.Fprintf(&b, "\n\t\t  pvc: %v", err)
	default:
		fmt.Fprintf(&b, "\n\t\t  pvc: phase %s volume %q; %s; annotations %v", pvc.Status.Phase, pvc.Spec.VolumeName, meta(pvc.ObjectMeta), pvc.Annotations)
	}
	lease, err := c.CoordinationV1().Leases(ns).Get(ctx, engine.LeaseName(member), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		b.WriteString("\n\t\t  lease: none")
	case err != nil:
		fmt.Fprintf(&b, "\n\t\t  lease: %v", err)
	default:
		fmt.Fprintf(&b, "\n\t\t  lease: %s; %s; annotations %v", leaseSummary(lease), meta(lease.ObjectMeta), lease.Annotations)
	}
	for _, name := range []string{member, engine.PVCName(member)} {
		evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
		if err != nil {
			fmt.Fprintf(&b, "\n\t\t  events of %s: %v", name, err)
			continue
		}
		items := evs.Items
		sort.Slice(items, func(i, j int) bool { return eventTime(&items[i]).Before(eventTime(&items[j])) })
		if n := len(items); n > 12 {
			items = items[n-12:]
		}
		for _, e := range items {
			fmt.Fprintf(&b, "\n\t\t  event %s %s/%s (uid %s): %s %s: %s (x%d, by %s)", eventTime(&e).UTC().Format("15:04:05"), e.InvolvedObject.Kind, name,
				shortUID(e.InvolvedObject.UID), e.Type, e.Reason, e.Message, max(e.Count, 1), e.Source.Component+e.ReportingController)
		}
	}
	return b.String()
}

func leaseSummary(l *coordinationv1.Lease) string {
	s := fmt.Sprintf("holder %q", holderOf(l))
	if l.Spec.AcquireTime != nil {
		s += " acquired " + l.Spec.AcquireTime.UTC().Format("15:04:05.000")
	}
	if l.Spec.RenewTime != nil {
		s += " renewed " + l.Spec.RenewTime.UTC().Format("15:04:05.000")
	}
	if l.Spec.LeaseDurationSeconds != nil {
		s += fmt.Sprintf(" duration %ds", *l.Spec.LeaseDurationSeconds)
	}
	return s
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
