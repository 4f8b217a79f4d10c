//go:build integration

package systest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// runExec runs command in pod as who with the given stdin and returns its
// stdout, stderr and error.
func runExec(t *testing.T, env *kubetest.Env, who string, rec *execRecorder, pod, stdin string, command ...string) (string, string, error) {
	t.Helper()
	cfg := rec.config(env.ConfigAs(t, who))
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex := &kube.Exec{Config: cfg, Client: client, NewExecutor: rec.factory}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr kubetest.SyncBuffer
	err = ex.Run(ctx, kube.ExecRequest{Namespace: env.Namespace, Pod: pod, Command: command,
		Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

// Exec through the API server to the kubelet API kwok serves for the plane's
// nodes: each member's commands run in its own directory (on an ordinary
// node and on the cocoon virtual node), stdin reaches the command and its
// stdout and stderr come back apart, a failing command is not a success, the
// viewer gets the API server's own 403, and a sandboxd member is refused
// before any exec request leaves the client.
func TestIntegrationExecThroughTheKubeletAPI(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	applyReady(t, env, eng, "desk", pooltest.SmallSpec(pooltest.Image, 2))
	cocoon := pooltest.SmallSpec("ubuntu-dev-base", 1)
	cocoon.Runtime = &engine.Runtime{Backend: engine.BackendCocoon, Image: "ubuntu-dev-base"}
	cocoon.Default()
	applyReady(t, env, eng, "vm", cocoon)
	applyReady(t, env, eng, "sbx", sandboxdSpec(1))
	if v := observe(t, eng, "vm"); v.Member("vm-1").Node != "vk-cocoon-0" {
		n := v.Member("vm-1").Node
		t.Fatalf("cocoon member on node %q, want vk-cocoon-0", n)
	}

	members := map[string]*kubetest.Member{}
	for _, pod := range []string{"desk-1", "desk-2", "vm-1"} {
		members[pod] = env.ServeMember(t, pod)
	}
	for pod, m := range members {
		out, _, err := runExec(t, env, "admin", &execRecorder{}, pod, "", "pwd")
		if err != nil || strings.TrimSpace(out) != m.Dir {
			t.Errorf("pwd in %s: %q, %v; want its own directory %s", pod, out, err, m.Dir)
		}
	}

	// stdin in, stdout and stderr out, each on its own stream.
	out, errOut, err := runExec(t, env, "admin", &execRecorder{}, "desk-1", "hello from stdin\n",
		"sh", "-c", `read l; echo "out:$l"; echo "err:$l" >&2`)
	if err != nil || out != "out:hello from stdin\n" || errOut != "err:hello from stdin\n" {
		t.Errorf("stdin/stdout/stderr: stdout %q, stderr %q, %v", out, errOut, err)
	}
	if _, _, err := runExec(t, env, "admin", &execRecorder{}, "desk-2", "", "true"); err != nil {
		t.Errorf("exit 0: %v", err)
	}
	// kwok v0.8.0 wraps the command's exit error, so the kubelet API
	// answers a non-zero exit with an internal error that names the status
	// instead of the exit-code status a kubelet sends (README of
	// testdata/cluster): a failure, never a success.
	_, _, err = runExec(t, env, "admin", &execRecorder{}, "desk-2", "", "sh", "-c", "exit 3")
	if code, ok := kube.ExitCode(err); err == nil || (ok && code != 3) || (!ok && !strings.Contains(err.Error(), "exit status 3")) {
		t.Errorf("exit 3: %v (exit code %d, %v)", err, code, ok)
	}

	// The viewer: the API server's own 403 for create pods/exec.
	viewer := &execRecorder{}
	_, _, err = runExec(t, env, kubetest.Viewer, viewer, "desk-1", "", "true")
	if !errors.Is(err, engine.ErrForbidden) ||
		!strings.Contains(err.Error(), `User "viewer" cannot create resource "pods/exec" in API group "" in the namespace "`+env.Namespace+`"`) {
		t.Errorf("viewer exec: %v; want the API server's Forbidden for pods/exec", err)
	}
	if !containsStatus(viewer, http.StatusForbidden) {
		t.Errorf("the API server did not answer the viewer's exec with 403 (statuses %v)", viewer.statuses)
	}

	// sandboxd: refused from the Pod alone, no exec request.
	sbx := &execRecorder{}
	_, _, err = runExec(t, env, "admin", sbx, "sbx-1", "", "true")
	if !errors.Is(err, kube.ErrNoStreaming) || len(sbx.urls) != 0 || len(sbx.statuses) != 0 {
		t.Errorf("exec in a sandboxd member: %v (%d executors, statuses %v); want ErrNoStreaming before any exec request", err, len(sbx.urls), sbx.statuses)
	}
}

func containsStatus(r *execRecorder, code int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.statuses {
		if s == code {
			return true
		}
	}
	return false
}

// A TTY session through the kubelet API: the remote terminal starts at the
// size WatchSize sends and follows a resize.
func TestIntegrationExecTTYSizeThroughTheKubeletAPI(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	applyReady(t, env, eng, "tty", pooltest.SmallSpec(pooltest.Image, 1))
	env.ServeMember(t, "tty-1")

	var size atomic.Value
	size.Store([2]int{100, 40})
	resized := make(chan os.Signal, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	var out kubetest.SyncBuffer
	ex := &kube.Exec{Config: env.Config, Client: env.Client}
	done := make(chan error, 1)
	go func() {
		done <- ex.Run(ctx, kube.ExecRequest{Namespace: env.Namespace, Pod: "tty-1", TTY: true,
			Command: []string{"sh", "-c", `stty size; while read l; do [ "$l" = q ] && exit 0; stty size; done`},
			Stdin:   stdinR, Stdout: &out,
			Sizes: kube.WatchSize(ctx, func() (int, int, error) {
				s := size.Load().([2]int)
				return s[0], s[1], nil
			}, resized)})
	}()
	// wait polls for want in the output; nudge (if set) runs before each poll.
	wait := func(want string, nudge func()) {
		t.Helper()
		defer func() {
			if t.Failed() {
				t.Logf("terminal output: %q", out.String())
			}
		}()
		env.WaitFor(t, 20*time.Second, "the terminal to say "+want, func() (bool, error) {
			select {
			case err := <-done:
				t.Fatalf("the session ended early: %v; output %q", err, out.String())
			default:
			}
			if nudge != nil {
				nudge()
			}
			return strings.Contains(out.String(), want), nil
		})
	}
	// The sizes and the lines travel on different streams, and kwok starts
	// the command beside the resize: ask again until the size shows.
	again := func() { _, _ = io.WriteString(stdinW, "again\n") }
	wait("40 100", again)
	size.Store([2]int{132, 50})
	resized <- os.Interrupt // any signal value: WatchSize reads the size again
	wait("50 132", again)
	if _, err := io.WriteString(stdinW, "q\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the session ended with %v; output %q", err, out.String())
		}
	case <-ctx.Done():
		t.Fatalf("the session did not end after q; output %q", out.String())
	}
}
