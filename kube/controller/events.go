package controller

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// ReportingController names the reconciler in the Events it writes.
const ReportingController = "ctpool-tui.dev/reconciler"

// EventRules let the reconciler write its Warning Events (the recorder
// creates an Event, then patches its count when it repeats).
var EventRules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}}

// NewRecorder returns client-go's event recorder for the reconciler's
// Warning Events, as instance (the Pod's name): the recorder aggregates
// repeated Events and rate-limits them per object (a burst of 25, then one
// every 5 minutes). stop flushes and stops it.
func NewRecorder(client kubernetes.Interface, instance string) (rec record.EventRecorder, stop func()) {
	b := record.NewBroadcaster(record.WithContext(context.Background()))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	rec = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ReportingController, Host: instance})
	return rec, b.Shutdown
}

// recordFailures writes one Warning Event on the pool's ConfigMap for each
// step of a reconcile that failed (reason FailedCreate, FailedStart,
// FailedReplace, FailedDelete, FailedStatus, or FailedRead when the pool
// could not be read), with the step's errors as the message.
func (c *Controller) recordFailures(res engine.ReconcileResult, err error, last *engine.Snapshot) {
	if c.opts.Recorder == nil || err == nil || last == nil || last.ConfigMap == nil {
		return
	}
	byStep := map[string][]string{}
	var order []string
	for _, a := range res.Actions {
		if a.Err == nil {
			continue
		}
		step := a.Step.String()
		if _, ok := byStep[step]; !ok {
			order = append(order, step)
		}
		what := a.Member
		if what == "" {
			what = "pool"
		}
		byStep[step] = append(byStep[step], what+": "+a.Err.Error())
	}
	if len(order) == 0 {
		order, byStep = []string{engine.StepRead.String()}, map[string][]string{engine.StepRead.String(): {err.Error()}}
	}
	for _, step := range order {
		reason := "Failed" + strings.ToUpper(step[:1]) + step[1:]
		msg := strings.Join(byStep[step], "; ")
		if len(msg) > 1000 {
			msg = msg[:1000] + "…"
		}
		c.opts.Recorder.Event(last.ConfigMap, corev1.EventTypeWarning, reason, msg)
	}
}
