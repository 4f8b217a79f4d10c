package kube

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// LogPermissions is what the logs view needs. Log streams cannot run on the
// fake clientset the permission table is derived on (kube/internal/permderive),
// so they are declared here, next to the code that makes the call.
var LogPermissions = []engine.Permission{
	{Resource: "pods", Verb: "get"},
	{Resource: "pods/log", Verb: "get"},
}

// ErrNoPreviousLog is returned for the previous log of a desktop container
// that has not restarted: the kubelet keeps the log of the last terminated
// container only, and the Pod's status names none.
var ErrNoPreviousLog = errors.New("no previous container: the desktop container has not restarted")

// hasPrevious says whether the Pod's status records a terminated earlier
// instance of the desktop container.
func hasPrevious(p *corev1.Pod) bool {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == engine.ContainerName {
			return c.LastTerminationState.Terminated != nil || c.RestartCount > 0
		}
	}
	return false
}

// LogTail is how many lines a log stream starts with.
const LogTail = 5000

// Logs streams member container logs (pods/log).
type Logs struct {
	Client kubernetes.Interface
}

// Stream opens the log of a member's desktop container: followed, on across
// the container's restarts (followLog), or the previous (terminated)
// container's when previous is set. The caller closes
// the stream; cancelling ctx ends it.
func (l *Logs) Stream(ctx context.Context, namespace, pod string, previous bool) (io.ReadCloser, error) {
	// A stopped container still has a log, and so has a previous one.
	p, err := CheckPod(ctx, l.Client, namespace, pod)
	if err != nil && !errors.Is(err, ErrNotRunning) {
		return nil, err
	}
	if previous && !hasPrevious(p) {
		return nil, fmt.Errorf("%s: %w", pod, ErrNoPreviousLog)
	}
	open := func(ctx context.Context) (io.ReadCloser, error) {
		tail := int64(LogTail)
		opts := &corev1.PodLogOptions{Container: engine.ContainerName, Follow: !previous, Previous: previous, TailLines: &tail}
		rc, err := l.Client.CoreV1().Pods(namespace).GetLogs(pod, opts).Stream(ctx)
		if err != nil {
			return nil, permissionHint(MapError(err), "get pods/log")
		}
		return rc, nil
	}
	rc, err := open(ctx)
	if err != nil || previous {
		return rc, err
	}
	f := followLog{open: open, poll: logRestartPoll, stale: logStaleStatus,
		get: func(ctx context.Context) (*corev1.Pod, error) { return CheckPod(ctx, l.Client, namespace, pod) }}
	return f.start(ctx, rc, p), nil
}
