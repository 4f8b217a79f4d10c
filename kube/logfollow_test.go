package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// followPod is a Running Pod whose desktop container is id (restarts
// earlier ones, the last of which exited lastExit).
func followPod(uid, id string, restarts int32, mutate ...func(*corev1.Pod)) *corev1.Pod {
	cs := corev1.ContainerStatus{Name: engine.ContainerName, ContainerID: id, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	if restarts > 0 {
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error", ContainerID: "old"}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "desk-1", Namespace: "vdi", UID: types.UID(uid)},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{cs}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// stopped is the status between a container's end and its successor's
// start: waiting, with the ended one as the last termination.
func stopped(id string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		cs := &p.Status.ContainerStatuses[0]
		cs.ContainerID = ""
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 143, ContainerID: id}
	}
}

// followFake answers the Pod reads from a script (its last answer
// repeats) and opens the streams it is given, in order.
type followFake struct {
	mu      sync.Mutex
	pods    []*corev1.Pod
	errs    []error
	streams []string
	opened  int
	gets    int
}

func (f *followFake) get(context.Context) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := min(f.gets, len(f.pods)-1)
	f.gets++
	var err error
	if i < len(f.errs) {
		err = f.errs[i]
	}
	return f.pods[i], err
}

func (f *followFake) open(context.Context) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.opened >= len(f.streams) {
		return nil, fmt.Errorf("stream %d was not expected", f.opened)
	}
	f.opened++
	return io.NopCloser(strings.NewReader(f.streams[f.opened-1])), nil
}

func TestFollowLogAcrossRestarts(t *testing.T) {
	notFound := fmt.Errorf("%w: desk-1 has no Pod", engine.ErrMemberNotFound)
	for _, tt := range []struct {
		name    string
		pods    []*corev1.Pod
		errs    []error
		streams []string // after the first, "one\n"
		stale   time.Duration
		want    string
		wantErr error
	}{{
		name:    "a restart: the successor's log follows a separator",
		pods:    []*corev1.Pod{followPod("u1", "c1", 0, stopped("c1")), followPod("u1", "c2", 1), nil},
		errs:    []error{nil, nil, notFound},
		streams: []string{"two\n"},
		want:    "one\n── the desktop container restarted: restart 1; the last one exited 143 (Error) ──\ntwo\n",
	}, {
		name:    "the API server away for a while, then the successor",
		pods:    []*corev1.Pod{nil, nil, followPod("u1", "c2", 1), nil},
		errs:    []error{errors.New("connection refused"), errors.New("connection refused"), nil, notFound},
		streams: []string{"two\n"},
		want:    "one\n── the desktop container restarted: restart 1; the last one exited 143 (Error) ──\ntwo\n",
	}, {
		name: "the Pod deleted: the log ends",
		pods: []*corev1.Pod{nil},
		errs: []error{notFound},
		want: "one\n",
	}, {
		name: "the Pod replaced by another of its name: the log ends",
		pods: []*corev1.Pod{followPod("u2", "c9", 0)},
		want: "one\n",
	}, {
		name: "the Pod failed: its containers do not start again",
		pods: []*corev1.Pod{followPod("u1", "c1", 0, stopped("c1"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })},
		want: "one\n",
	}, {
		name:  "the stream ended while the same container still runs",
		pods:  []*corev1.Pod{followPod("u1", "c1", 0)},
		stale: 20 * time.Millisecond,
		want:  "one\n",
	}, {
		name:    "no right to read the Pod",
		pods:    []*corev1.Pod{nil},
		errs:    []error{fmt.Errorf("needs get pods: %w", engine.ErrForbidden)},
		want:    "one\n",
		wantErr: engine.ErrForbidden,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			fk := &followFake{pods: tt.pods, errs: tt.errs, streams: tt.streams}
			f := followLog{open: fk.open, get: fk.get, poll: time.Millisecond, stale: tt.stale}
			rc := f.start(context.Background(), io.NopCloser(strings.NewReader("one\n")), followPod("u1", "c1", 0))
			b, err := io.ReadAll(rc)
			_ = rc.Close()
			if string(b) != tt.want {
				t.Errorf("log %q, want %q", b, tt.want)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("err %v, want %v", err, tt.wantErr)
			}
			if fk.opened != len(tt.streams) {
				t.Errorf("%d streams opened after the first, want %d", fk.opened, len(tt.streams))
			}
		})
	}
}

// While the container waits to start again (a back-off of minutes) the
// log waits with it, and closing the reader stops the wait.
func TestFollowLogWaitsOutABackOffAndCloses(t *testing.T) {
	fk := &followFake{pods: []*corev1.Pod{followPod("u1", "c1", 0, stopped("c1"))}}
	f := followLog{open: fk.open, get: fk.get, poll: time.Millisecond, stale: time.Millisecond}
	rc := f.start(context.Background(), io.NopCloser(strings.NewReader("one\n")), followPod("u1", "c1", 0))
	b := make([]byte, 4)
	if _, err := io.ReadFull(rc, b); err != nil || string(b) != "one\n" {
		t.Fatalf("read %q, %v", b, err)
	}
	// Many polls later the log is still open.
	deadline := time.Now().Add(5 * time.Second)
	for {
		fk.mu.Lock()
		n := fk.gets
		fk.mu.Unlock()
		if n >= 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d polls in 5s", n)
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(rc); done <- err }()
	_ = rc.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the read")
	}
}

// Cancelling the context ends a read blocked on a live stream.
func TestFollowLogCancelEndsABlockedRead(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	fk := &followFake{pods: []*corev1.Pod{followPod("u1", "c1", 0)}}
	ctx, cancel := context.WithCancel(context.Background())
	rc := followLog{open: fk.open, get: fk.get, poll: time.Millisecond, stale: time.Hour}.start(ctx, pr, followPod("u1", "c1", 0))
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(rc); done <- err }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("read after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not end the read")
	}
	fk.mu.Lock()
	defer fk.mu.Unlock()
	if fk.gets != 0 {
		t.Errorf("%d Pod reads after a cancel, want 0", fk.gets)
	}
}
