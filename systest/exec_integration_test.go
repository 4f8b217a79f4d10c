//go:build integration

package systest_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// execRecorder captures the exec URLs the executor was built for and the status
// codes the API server answered them with.
type execRecorder struct {
	mu       sync.Mutex
	urls     []*url.URL
	statuses []int
}

func (r *execRecorder) config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return execRTFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if strings.HasSuffix(req.URL.Path, "/exec") && resp != nil {
				r.mu.Lock()
				r.statuses = append(r.statuses, resp.StatusCode)
				r.mu.Unlock()
			}
			return resp, err
		})
	}
	return c
}

func (r *execRecorder) factory(cfg *rest.Config, method string, u *url.URL) (remotecommand.Executor, error) {
	r.mu.Lock()
	r.urls = append(r.urls, u)
	r.mu.Unlock()
	return kube.DefaultExecutor(cfg, method, u)
}

type execRTFunc func(*http.Request) (*http.Response, error)

func (f execRTFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func execAs(t *testing.T, env *kubetest.Env, who string, rec *execRecorder, pod string, command []string) error {
	t.Helper()
	cfg := rec.config(env.ConfigAs(t, who))
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex := &kube.Exec{Config: cfg, Client: client, NewExecutor: rec.factory}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Separate buffers: the executor copies stdout and stderr concurrently.
	var stdout, stderr bytes.Buffer
	return ex.Run(ctx, kube.ExecRequest{Namespace: env.Namespace, Pod: pod, Command: command,
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
}

// The exec request names the member's Pod, namespace, desktop container and
// command; the API server authorizes the admin (kwok's kubelet API runs the
// command; kubelet_integration_test.go checks what it does) and refuses the
// viewer with a message that names the missing permission.
func TestIntegrationConsoleExecAuthorization(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	applyReady(t, env, eng, "desk", pooltest.SmallSpec("ghcr.io/example/desktop:1", 1))

	admin := &execRecorder{}
	err := execAs(t, env, "admin", admin, "desk-1", []string{"uname", "-a"})
	t.Logf("admin exec: %v (statuses %v)", err, admin.statuses)
	if errors.Is(err, engine.ErrForbidden) {
		t.Fatalf("admin exec was refused: %v", err)
	}
	if len(admin.urls) != 1 {
		t.Fatalf("executor built %d times, want 1", len(admin.urls))
	}
	u := admin.urls[0]
	q := u.Query()
	if u.Path != "/api/v1/namespaces/"+env.Namespace+"/pods/desk-1/exec" || q.Get("container") != engine.ContainerName ||
		strings.Join(q["command"], " ") != "uname -a" || q.Get("stdin") != "true" || q.Get("stdout") != "true" {
		t.Errorf("exec URL %s", u)
	}
	for _, s := range admin.statuses {
		if s == http.StatusForbidden || s == http.StatusUnauthorized {
			t.Errorf("the API server answered the admin's exec with %d", s)
		}
	}

	viewer := &execRecorder{}
	err = execAs(t, env, kubetest.Viewer, viewer, "desk-1", nil)
	t.Logf("viewer exec: %v (statuses %v)", err, viewer.statuses)
	if !errors.Is(err, engine.ErrForbidden) || !strings.Contains(err.Error(), "needs create pods/exec") {
		t.Fatalf("viewer exec: %v, want Forbidden with \"needs create pods/exec\"", err)
	}
	forbidden := false
	for _, s := range viewer.statuses {
		forbidden = forbidden || s == http.StatusForbidden
	}
	if !forbidden {
		t.Errorf("the API server did not answer 403 to the viewer (statuses %v)", viewer.statuses)
	}

	// A member that does not exist is named as such, before any exec.
	none := &execRecorder{}
	if err := execAs(t, env, "admin", none, "desk-9", nil); !errors.Is(err, engine.ErrMemberNotFound) || len(none.urls) != 0 {
		t.Errorf("exec in a missing member: %v (%d executors), want member not found and no exec", err, len(none.urls))
	}

	// The log stream of the same member is authorized for the admin.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := (&kube.Logs{Client: env.Client}).Stream(ctx, env.Namespace, "desk-1", false)
	if err == nil {
		_ = rc.Close()
	}
	t.Logf("admin logs: %v", err)
	if errors.Is(err, engine.ErrForbidden) {
		t.Errorf("admin log stream refused: %v", err)
	}
}
