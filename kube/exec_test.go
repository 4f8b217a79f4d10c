package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// fakeExecutor plays the remote side: it echoes stdin to stdout in upper
// case, reads n terminal sizes, and ends with exit code code.
type fakeExecutor struct {
	mu    sync.Mutex
	url   *url.URL
	opts  remotecommand.StreamOptions
	sizes []remotecommand.TerminalSize
	n     int
	code  int
	err   error
}

func (f *fakeExecutor) Stream(o remotecommand.StreamOptions) error {
	return f.StreamWithContext(context.Background(), o)
}

func (f *fakeExecutor) StreamWithContext(_ context.Context, o remotecommand.StreamOptions) error {
	f.mu.Lock()
	f.opts = o
	f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	for i := 0; i < f.n && o.TerminalSizeQueue != nil; i++ {
		s := o.TerminalSizeQueue.Next()
		if s == nil {
			break
		}
		f.mu.Lock()
		f.sizes = append(f.sizes, *s)
		f.mu.Unlock()
	}
	in, _ := io.ReadAll(o.Stdin)
	fmt.Fprint(o.Stdout, strings.ToUpper(string(in)))
	if f.code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", f.code), Code: f.code}
	}
	return nil
}

func (f *fakeExecutor) factory(_ *rest.Config, _ string, u *url.URL) (remotecommand.Executor, error) {
	f.url = u
	return f, nil
}

func execPod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vdi", Annotations: map[string]string{}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestExecInteractivePath(t *testing.T) {
	client := fake.NewClientset(execPod("desk-1"))
	fe := &fakeExecutor{n: 2, code: 7}
	ex := &Exec{Config: &rest.Config{Host: "https://example"}, Client: client, NewExecutor: fe.factory}
	sig := make(chan os.Signal, 1)
	var mu sync.Mutex
	w, h := 80, 24
	size := func() (int, int, error) { mu.Lock(); defer mu.Unlock(); return w, h, nil }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q := WatchSize(ctx, size, sig)
	// The first size is the current one; a resize follows it.
	go func() {
		for {
			fe.mu.Lock()
			n := len(fe.sizes)
			fe.mu.Unlock()
			if n >= 1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		w, h = 132, 50
		mu.Unlock()
		sig <- os.Interrupt
	}()
	var out bytes.Buffer
	err := ex.Run(ctx, ExecRequest{Namespace: "vdi", Pod: "desk-1", TTY: true,
		Stdin: strings.NewReader("ls -l\n"), Stdout: &out, Stderr: io.Discard, Sizes: q})
	if code, ok := ExitCode(err); !ok || code != 7 {
		t.Fatalf("Run = %v, want exit code 7", err)
	}
	if out.String() != "LS -L\n" {
		t.Errorf("stdout = %q, want the echo of stdin", out.String())
	}
	want := []remotecommand.TerminalSize{{Width: 80, Height: 24}, {Width: 132, Height: 50}}
	if fmt.Sprint(fe.sizes) != fmt.Sprint(want) {
		t.Errorf("sizes = %v, want %v", fe.sizes, want)
	}
	if !fe.opts.Tty || fe.opts.Stderr != nil {
		t.Errorf("a TTY session has Tty=%v and stderr %v, want a TTY and stderr merged", fe.opts.Tty, fe.opts.Stderr)
	}
	q2 := fe.url.Query()
	if fe.url.Path != "/api/v1/namespaces/vdi/pods/desk-1/exec" || q2.Get("container") != engine.ContainerName ||
		q2.Get("tty") != "true" || q2.Get("stdin") != "true" || strings.Join(q2["command"], " ") != strings.Join(DefaultShell, " ") {
		t.Errorf("exec URL %s", fe.url)
	}
}

func TestExecWithoutTTYAndZeroExit(t *testing.T) {
	client := fake.NewClientset(execPod("desk-1"))
	fe := &fakeExecutor{}
	ex := &Exec{Client: client, NewExecutor: fe.factory}
	var out, errOut bytes.Buffer
	err := ex.Run(context.Background(), ExecRequest{Namespace: "vdi", Pod: "desk-1", Command: []string{"uname", "-a"},
		Stdin: strings.NewReader("x"), Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if fe.opts.Tty || fe.opts.Stderr != &errOut || fe.opts.TerminalSizeQueue != nil {
		t.Errorf("options %+v, want no TTY, separate stderr, no size queue", fe.opts)
	}
	if got := fe.url.Query()["command"]; strings.Join(got, " ") != "uname -a" {
		t.Errorf("command = %v", got)
	}
}

func TestExecRefusals(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods/exec"}, "desk-1", errors.New(`User "viewer" cannot create resource "pods/exec"`))
	tests := []struct {
		name    string
		pod     *corev1.Pod
		execErr error
		want    []string
		is      error
	}{
		{name: "missing", want: []string{"desk-1 has no Pod", "vdi"}, is: engine.ErrMemberNotFound},
		{name: "pending", pod: execPod("desk-1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
			want: []string{"not running", "Pending"}, is: ErrNotRunning},
		{name: "sandboxd", pod: execPod("desk-1", func(p *corev1.Pod) { p.Annotations[engine.SandboxdAnnotationTemplate] = "rt:1" }),
			want: []string{"sandboxd provider serves no exec/logs/attach/port-forward"}, is: ErrNoStreaming},
		{name: "forbidden", pod: execPod("desk-1"), execErr: forbidden, want: []string{"needs create pods/exec"}, is: engine.ErrForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tt.pod != nil {
				client = fake.NewClientset(tt.pod)
			}
			fe := &fakeExecutor{err: tt.execErr}
			ex := &Exec{Client: client, NewExecutor: fe.factory}
			err := ex.Run(context.Background(), ExecRequest{Namespace: "vdi", Pod: "desk-1", Stdin: strings.NewReader(""), Stdout: io.Discard})
			if err == nil {
				t.Fatal("Run succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if tt.execErr == nil && fe.url != nil {
				t.Errorf("an exec was attempted: %s", fe.url)
			}
		})
	}
}

func TestWatchSizeEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	q := WatchSize(ctx, func() (int, int, error) { return 0, 0, errors.New("not a terminal") }, nil)
	cancel()
	if s := q.Next(); s != nil {
		t.Fatalf("Next = %v, want nil after the end", s)
	}
}

func TestLogsStreamOnFake(t *testing.T) {
	client := fake.NewClientset(execPod("desk-1"))
	rc, err := (&Logs{Client: client}).Stream(context.Background(), "vdi", "desk-1", false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	_ = rc.Close()
	if string(b) != "fake logs" {
		t.Errorf("log = %q", b)
	}
	sb := fake.NewClientset(execPod("desk-2", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{engine.SandboxdNodeLabel: "sandboxd"} }))
	if _, err := (&Logs{Client: sb}).Stream(context.Background(), "vdi", "desk-2", false); !errors.Is(err, ErrNoStreaming) {
		t.Errorf("sandboxd log stream: %v, want ErrNoStreaming", err)
	}
}

// Without a terminal (a pipe, a script) the session streams stdin, stdout
// and stderr as they are: no TTY, no raw mode, no size queue.
func TestInteractiveWithoutTerminal(t *testing.T) {
	client := fake.NewClientset(execPod("desk-1"))
	fe := &fakeExecutor{code: 2}
	ex := &Exec{Client: client, NewExecutor: fe.factory}
	var out, errOut bytes.Buffer
	err := ex.Interactive(context.Background(), "vdi", "desk-1", []string{"cat"}, strings.NewReader("hi\n"), &out, &errOut)
	if code, ok := ExitCode(err); !ok || code != 2 {
		t.Fatalf("Interactive = %v, want exit code 2", err)
	}
	if fe.opts.Tty || fe.opts.TerminalSizeQueue != nil || fe.opts.Stderr != &errOut || out.String() != "HI\n" {
		t.Errorf("options %+v stdout %q", fe.opts, out.String())
	}
	if q := fe.url.Query(); q.Get("tty") == "true" || q.Get("stderr") != "true" {
		t.Errorf("exec URL %s", fe.url)
	}
}

// The previous log is asked for only when the Pod's status records an
// earlier, terminated desktop container; otherwise the answer is that there
// is none, without a log request.
func TestLogsPreviousOnlyAfterARestart(t *testing.T) {
	restarted := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: engine.ContainerName, RestartCount: 1,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}
	}
	fresh := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: engine.ContainerName}}
	}
	other := func(p *corev1.Pod) { // a restarted sidecar is not the desktop
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "sidecar", RestartCount: 2}, {Name: engine.ContainerName}}
	}
	for _, tt := range []struct {
		name     string
		mutate   func(*corev1.Pod)
		previous bool
		wantErr  error
	}{
		{"current log of a fresh container", fresh, false, nil},
		{"previous log after a restart", restarted, true, nil},
		{"previous log of a fresh container", fresh, true, ErrNoPreviousLog},
		{"previous log with no container status", func(*corev1.Pod) {}, true, ErrNoPreviousLog},
		{"previous log after a sidecar restart", other, true, ErrNoPreviousLog},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(execPod("desk-1", tt.mutate))
			rc, err := (&Logs{Client: client}).Stream(context.Background(), "vdi", "desk-1", tt.previous)
			if rc != nil {
				_ = rc.Close()
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			logRequests := 0
			for _, a := range client.Actions() {
				if a.GetSubresource() == "log" {
					logRequests++
				}
			}
			if want := map[bool]int{true: 0, false: 1}[tt.wantErr != nil]; logRequests != want {
				t.Errorf("%d log requests, want %d", logRequests, want)
			}
		})
	}
}
