package kube

import (
	"context"
	"errors"
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

// LogTail is how many lines a log stream starts with.
const LogTail = 5000

// Logs streams member container logs (pods/log).
type Logs struct {
	Client kubernetes.Interface
}

// Stream opens the log of a member's desktop container: followed, or the
// previous (terminated) container's when previous is set. The caller closes
// the stream; cancelling ctx ends it.
func (l *Logs) Stream(ctx context.Context, namespace, pod string, previous bool) (io.ReadCloser, error) {
	// A stopped container still has a log, and so has a previous one.
	if _, err := CheckPod(ctx, l.Client, namespace, pod); err != nil && !errors.Is(err, ErrNotRunning) {
		return nil, err
	}
	tail := int64(LogTail)
	opts := &corev1.PodLogOptions{Container: engine.ContainerName, Follow: !previous, Previous: previous, TailLines: &tail}
	rc, err := l.Client.CoreV1().Pods(namespace).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return nil, permissionHint(MapError(err), "get pods/log")
	}
	return rc, nil
}
