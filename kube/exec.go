package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// ConsolePermissions is what a console session needs. Exec cannot run on
// the fake clientset the permission table is derived on
// (kube/internal/permderive), so it is declared here, next to the code that
// makes the calls.
var ConsolePermissions = []engine.Permission{
	{Resource: "pods", Verb: "get"},
	{Resource: "pods/exec", Verb: "create"},
}

// DefaultShell is the console's command when none is given: a login bash
// when the image has one, else a login /bin/sh, else a plain /bin/sh.
var DefaultShell = []string{"/bin/sh", "-c",
	"if command -v bash >/dev/null 2>&1; then exec bash -l; fi; " +
		"if /bin/sh -lc true >/dev/null 2>&1; then exec /bin/sh -l; fi; exec /bin/sh"}

// ErrNoStreaming is returned for a member whose backend serves no exec or
// logs (sandboxd).
var ErrNoStreaming = errors.New("the sandboxd provider serves no exec/logs/attach/port-forward")

// ErrNotRunning is returned when the member's Pod is not Running.
var ErrNotRunning = errors.New("pod is not running")

// ExecutorFactory builds the executor of one exec request (tests substitute
// a fake; DefaultExecutor is kubectl's WebSocket-then-SPDY choice).
type ExecutorFactory func(cfg *rest.Config, method string, u *url.URL) (remotecommand.Executor, error)

// DefaultExecutor speaks the WebSocket protocol and falls back to SPDY when
// the server or a proxy refuses the upgrade, as kubectl does.
func DefaultExecutor(cfg *rest.Config, method string, u *url.URL) (remotecommand.Executor, error) {
	spdy, err := remotecommand.NewSPDYExecutor(cfg, method, u)
	if err != nil {
		return nil, err
	}
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// Exec runs commands in member containers through the pods/exec subresource.
type Exec struct {
	Config *rest.Config
	Client kubernetes.Interface
	// NewExecutor defaults to DefaultExecutor.
	NewExecutor ExecutorFactory
}

// ExecRequest is one exec session.
type ExecRequest struct {
	Namespace, Pod string
	// Container defaults to engine.ContainerName; Command to DefaultShell.
	Container string
	Command   []string
	// TTY asks for a terminal (stderr is then merged into stdout).
	TTY    bool
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Sizes delivers terminal resizes (TTY only; may be nil).
	Sizes remotecommand.TerminalSizeQueue
}

// URL is the exec subresource URL of the request on the configured server.
func (e *Exec) URL(r ExecRequest) *url.URL {
	r = r.withDefaults()
	u := &url.URL{}
	if e.Config != nil {
		if base, _, err := rest.DefaultServerUrlFor(e.Config); err == nil {
			u = base
		}
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/namespaces/" + url.PathEscape(r.Namespace) + "/pods/" + url.PathEscape(r.Pod) + "/exec"
	params, err := scheme.ParameterCodec.EncodeParameters(&corev1.PodExecOptions{
		Container: r.Container, Command: r.Command,
		Stdin: r.Stdin != nil, Stdout: r.Stdout != nil, Stderr: r.Stderr != nil && !r.TTY, TTY: r.TTY,
	}, corev1.SchemeGroupVersion)
	if err == nil {
		u.RawQuery = params.Encode()
	}
	return u
}

func (r ExecRequest) withDefaults() ExecRequest {
	if r.Container == "" {
		r.Container = engine.ContainerName
	}
	if len(r.Command) == 0 {
		r.Command = DefaultShell
	}
	return r
}

// CheckPod reads the member's Pod and refuses, with a clear error, a Pod
// that is gone, not Running, or on a backend that serves no exec or logs.
func CheckPod(ctx context.Context, client kubernetes.Interface, namespace, pod string) (*corev1.Pod, error) {
	p, err := client.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		err = MapError(err)
		if errors.Is(err, engine.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s has no Pod in namespace %s (is the member stopped or missing?)", engine.ErrMemberNotFound, pod, namespace)
		}
		return nil, permissionHint(err, "get pods")
	}
	if engine.StreamingUnavailable(engine.PodBackend(p)) != "" {
		return p, fmt.Errorf("%s: %w", pod, ErrNoStreaming)
	}
	if p.Status.Phase != corev1.PodRunning {
		return p, fmt.Errorf("%s: %w (phase %s)", pod, ErrNotRunning, orPending(p.Status.Phase))
	}
	return p, nil
}

func orPending(p corev1.PodPhase) string {
	if p == "" {
		return string(corev1.PodPending)
	}
	return string(p)
}

// Run checks the Pod, then streams the session until the remote command
// ends. A non-zero exit of the remote command is returned as an error that
// ExitCode reads.
func (e *Exec) Run(ctx context.Context, r ExecRequest) error {
	r = r.withDefaults()
	if _, err := CheckPod(ctx, e.Client, r.Namespace, r.Pod); err != nil {
		return err
	}
	newExec := e.NewExecutor
	if newExec == nil {
		newExec = DefaultExecutor
	}
	ex, err := newExec(e.Config, "POST", e.URL(r))
	if err != nil {
		return fmt.Errorf("exec in %s: %w", r.Pod, err)
	}
	opts := remotecommand.StreamOptions{Stdin: r.Stdin, Stdout: r.Stdout, Tty: r.TTY}
	if !r.TTY {
		opts.Stderr = r.Stderr
	} else {
		opts.TerminalSizeQueue = r.Sizes
	}
	return mapExecError(ex.StreamWithContext(ctx, opts))
}

// mapExecError keeps a remote exit status and maps the API server's refusal.
func mapExecError(err error) error {
	if err == nil {
		return nil
	}
	var exit utilexec.ExitError
	if errors.As(err, &exit) {
		return err
	}
	m := MapError(err)
	if errors.Is(m, engine.ErrForbidden) || strings.Contains(err.Error(), " is forbidden: ") {
		return &apiError{sentinel: engine.ErrForbidden, err: fmt.Errorf("needs create pods/exec: %w", err)}
	}
	return m
}

// permissionHint prefixes a Forbidden error with the permission it lacked.
func permissionHint(err error, perm string) error {
	if errors.Is(err, engine.ErrForbidden) {
		return &apiError{sentinel: engine.ErrForbidden, err: fmt.Errorf("needs %s: %w", perm, err)}
	}
	return err
}

// ExitCode is the remote command's exit status carried by err.
func ExitCode(err error) (int, bool) {
	var exit utilexec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		return exit.ExitStatus(), true
	}
	return 0, false
}
