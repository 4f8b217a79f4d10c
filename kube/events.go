package kube

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// Events reads the Events of one object, newest first.
type Events struct {
	Client kubernetes.Interface
	// Limit caps how many are returned (default 20).
	Limit int
}

// Events lists the Events whose involved object is kind/name in namespace,
// newest first. The field selector does the filtering on a real API server;
// the result is filtered again here so that clients that ignore field
// selectors (fakes) give the same answer.
func (e *Events) Events(ctx context.Context, namespace, kind, name string) ([]corev1.Event, error) {
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}.AsSelector().String()
	list, err := e.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, MapError(err)
	}
	out := make([]corev1.Event, 0, len(list.Items))
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name {
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { a, b := eventTime(out[i]), eventTime(out[j]); return a.After(b.Time) })
	limit := e.Limit
	if limit <= 0 {
		limit = 20
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// eventTime is the most recent time an Event carries.
func eventTime(ev corev1.Event) metav1.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp
	case !ev.EventTime.IsZero():
		return metav1.Time{Time: ev.EventTime.Time}
	case !ev.FirstTimestamp.IsZero():
		return ev.FirstTimestamp
	}
	return ev.CreationTimestamp
}
