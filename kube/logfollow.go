package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// A followed log goes on across restarts of the desktop container: the
// kubelet ends a followed stream when its container stops, and the log of
// the container that replaces it is a new stream. followLog reopens it.
const (
	// logRestartPoll is how often the Pod is read while the followed
	// container is stopped and its successor not yet started.
	logRestartPoll = time.Second
	// logStaleStatus is how long a stream's end may precede the Pod's
	// status saying its container stopped (the kubelet reports it within
	// seconds); a stream that ends while the same container still runs
	// after that ends the log.
	logStaleStatus = 10 * time.Second
)

// desktopStatus is the Pod's status of the desktop container.
func desktopStatus(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == engine.ContainerName {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// containerID is the newest desktop container the status knows of: the
// running or waiting one, or the last one to end.
func containerID(p *corev1.Pod) string {
	cs := desktopStatus(p)
	if cs == nil {
		return ""
	}
	if cs.ContainerID != "" {
		return cs.ContainerID
	}
	if t := cs.LastTerminationState.Terminated; t != nil {
		return t.ContainerID
	}
	return ""
}

// followLog streams the desktop container's log from open, and after each
// clean end the log of the container that replaced it, with a line that
// says so between them. It ends (io.EOF) when the Pod is gone or replaced,
// when its containers will not start again (phase Succeeded or Failed), or
// when the stream ended while the same container still runs; closing the
// reader or cancelling ctx stops it.
type followLog struct {
	open func(ctx context.Context) (io.ReadCloser, error)
	get  func(ctx context.Context) (*corev1.Pod, error)
	// poll is how often the Pod is read while waiting for a successor;
	// stale is how long the status may still show the ended container
	// running before the log ends (logRestartPoll, logStaleStatus).
	poll, stale time.Duration
}

// start begins with a stream already open on the container first (the
// Pod as read before opening it).
func (f followLog) start(ctx context.Context, rc io.ReadCloser, first *corev1.Pod) io.ReadCloser {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		defer cancel()
		pw.CloseWithError(f.run(ctx, rc, first, pw))
	}()
	return &followReader{PipeReader: pr, cancel: cancel}
}

type followReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (r *followReader) Close() error {
	r.cancel()
	return r.PipeReader.Close()
}

// run copies streams to w until the log ends; nil is a clean end.
func (f followLog) run(ctx context.Context, rc io.ReadCloser, pod *corev1.Pod, w io.Writer) error {
	uid, id := pod.UID, containerID(pod)
	for {
		_, err := io.Copy(w, closeOnDone(ctx, rc))
		_ = rc.Close()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		next, err := f.successor(ctx, uid, id)
		if next == nil || err != nil {
			return err
		}
		if _, err := io.WriteString(w, restartLine(next)); err != nil {
			return err
		}
		if rc, err = f.open(ctx); err != nil {
			return err
		}
		id = containerID(next)
	}
}

// successor waits for a desktop container newer than id in the Pod uid;
// nil when the log ends instead.
func (f followLog) successor(ctx context.Context, uid types.UID, id string) (*corev1.Pod, error) {
	t := time.NewTicker(f.poll)
	defer t.Stop()
	since := time.Now()
	for {
		// CheckPod answers the Pod with ErrNotRunning or ErrNoStreaming
		// too: its status is what counts here.
		p, err := f.get(ctx)
		switch {
		case errors.Is(err, engine.ErrMemberNotFound):
			return nil, nil
		case errors.Is(err, engine.ErrForbidden):
			return nil, err
		case p == nil:
			// The API server may be away for a while: keep asking.
		case p.UID != uid || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			return nil, nil
		case containerID(p) != "" && containerID(p) != id:
			return p, nil
		case desktopStatus(p) == nil:
			return nil, nil // nothing of the desktop container to wait for
		case desktopStatus(p).State.Running != nil && time.Since(since) > f.stale:
			return nil, nil // the stream ended, not the container
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-t.C:
		}
	}
}

// restartLine marks where one container's log ends and its successor's
// begins.
func restartLine(p *corev1.Pod) string {
	cs := desktopStatus(p)
	how := ""
	if t := cs.LastTerminationState.Terminated; t != nil {
		how = fmt.Sprintf("; the last one exited %d", t.ExitCode)
		if t.Reason != "" {
			how += " (" + t.Reason + ")"
		}
	}
	return fmt.Sprintf("── the desktop container restarted: restart %d%s ──\n", cs.RestartCount, how)
}

// closeOnDone closes rc when ctx ends, so that a blocked read returns.
func closeOnDone(ctx context.Context, rc io.ReadCloser) io.Reader {
	stop := context.AfterFunc(ctx, func() { _ = rc.Close() })
	return readFunc(func(b []byte) (int, error) {
		n, err := rc.Read(b)
		if err != nil {
			stop()
		}
		return n, err
	})
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(b []byte) (int, error) { return f(b) }
