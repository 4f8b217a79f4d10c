package kube

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Audit Event reasons and the component that reports them.
const (
	AuditComponent = "ctpool-tui"
	// AuditAnnotation marks ctpool-tui's audit Events (its value is the action).
	AuditAnnotation = "ctpool.dev/audit-action"
)

// Auditor records each write an admin triggers as an Event on the pool's
// ConfigMap: the action, the member, the previous holder of a force-release
// and the acting identity as the API server reports it.
type Auditor struct {
	Client    kubernetes.Interface
	Namespace string
	// Actor is the caller's user name (WhoAmI); "unknown" when empty.
	Actor string
	// Who, when set and Actor is empty, names the caller on the first
	// Record (for example a WhoAmI call), so that a command that writes
	// nothing asks nothing.
	Who     func(context.Context) string
	whoOnce sync.Once
	Now     func() time.Time
	// Errors, when set, is told when an audit Event cannot be written.
	Errors func(error)
	seq    atomic.Int64
}

// Record writes one audit Event. It never fails the operation it records.
func (a *Auditor) Record(ctx context.Context, e engine.AuditEntry) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	t := now()
	if a.Who != nil {
		a.whoOnce.Do(func() {
			if a.Actor == "" {
				a.Actor = a.Who(ctx)
			}
		})
	}
	actor := a.Actor
	if actor == "" {
		actor = "unknown"
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "%s by %s", e.Action, actor)
	if e.Member != "" {
		fmt.Fprintf(&msg, ": member %s", e.Member)
	}
	if e.Identity != "" {
		fmt.Fprintf(&msg, ", identity %q", e.Identity)
	}
	if e.PreviousHolder != "" {
		fmt.Fprintf(&msg, ", previous holder %q", e.PreviousHolder)
	}
	if e.Detail != "" {
		fmt.Fprintf(&msg, ", %s", e.Detail)
	}
	typ, result := corev1.EventTypeNormal, "ok"
	if e.Err != nil {
		typ, result = corev1.EventTypeWarning, "failed: "+e.Err.Error()
	}
	fmt.Fprintf(&msg, " — %s", result)
	cm := engine.ConfigMapName(e.Pool)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s.%x%02x", cm, t.UnixNano(), a.seq.Add(1)%256),
			Namespace:   a.Namespace,
			Labels:      map[string]string{engine.LabelPool: e.Pool},
			Annotations: map[string]string{AuditAnnotation: string(e.Action)},
		},
		InvolvedObject:      corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: a.Namespace, Name: cm},
		Reason:              auditReason(string(e.Action)),
		Message:             truncate(msg.String(), 1024),
		Type:                typ,
		Source:              corev1.EventSource{Component: AuditComponent},
		ReportingController: AuditComponent,
		// The instance of the program that wrote it; the person is named in
		// the message.
		ReportingInstance: Instance(),
		Action:            string(e.Action),
		FirstTimestamp:    metav1.NewTime(t),
		LastTimestamp:     metav1.NewTime(t),
		Count:             1,
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := a.Client.CoreV1().Events(a.Namespace).Create(actx, ev, metav1.CreateOptions{}); err != nil && a.Errors != nil {
		a.Errors(fmt.Errorf("audit event for %s %s: %w", e.Action, e.Pool, MapError(err)))
	}
}

// auditReason turns "force-release" into "ForceRelease".
func auditReason(action string) string {
	var b strings.Builder
	up := true
	for _, r := range action {
		if r == '-' || r == ' ' {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// Instance names this run of the program for the Events it writes: the Pod's
// name in a cluster (POD_NAME from the downward API), else the host's name.
func Instance() string {
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "ctpool-tui"
}
