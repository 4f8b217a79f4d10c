package kubetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// DirEnv names the environment variable that points at the plane's state
	// directory (the one testdata/cluster/up writes its kubeconfigs to).
	DirEnv = "CTPOOL_TEST_CLUSTER_DIR"
	// DefaultDir is the state directory when DirEnv is empty.
	DefaultDir = "/tmp/ctpool-tui-cluster"
	// NamespaceLabel marks the namespaces Require creates, so leftovers of an
	// interrupted run can be found: kubectl delete ns -l kubetest.ctpool-tui.dev/test.
	NamespaceLabel = "kubetest.ctpool-tui.dev/test"

	// Viewer and Operator are the restricted identities ConfigAs knows.
	Viewer   = "viewer"
	Operator = "operator"

	qps   = 200
	burst = 400

	reachTimeout = 5 * time.Second
	setupTimeout = 30 * time.Second
	// serviceAccountTimeout bounds the wait for a new namespace's default
	// ServiceAccount. The controller-manager creates it; right after an API
	// server restart (the outage tests) its watches may still be in their
	// reflectors' back-off, up to about a minute.
	serviceAccountTimeout = 90 * time.Second
)

const startHint = "start it with `make cluster-up` (testdata/cluster/up) and, " +
	"if its state dir is not " + DefaultDir + ", set " + DirEnv + "; " +
	"or run the tests inside `testdata/cluster/with-cluster go test -tags integration ./...`"

// Env is one test's handle on the plane: the admin (system:masters) config and
// client, and the test's own namespace.
type Env struct {
	Config    *rest.Config
	Client    kubernetes.Interface
	Namespace string
	// Dir is the plane's state directory (kubeconfigs, logs).
	Dir string
}

// Require connects to the plane, creates a fresh namespace for the test and
// registers its deletion with t.Cleanup (without waiting for it to be gone).
// When the plane cannot be reached the test is skipped, or failed when the
// CI environment variable is set.
func Require(t testing.TB) *Env {
	t.Helper()
	dir := os.Getenv(DirEnv)
	if dir == "" {
		dir = DefaultDir
	}
	cfg, err := loadConfig(filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		unavailable(t, fmt.Sprintf("no test control plane in %s: %v", dir, err))
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("kubetest: client for %s: %v", cfg.Host, err)
	}
	if err := ping(t.Context(), client); err != nil {
		unavailable(t, fmt.Sprintf("the test control plane of %s does not answer at %s: %v", dir, cfg.Host, err))
	}

	env := &Env{Config: cfg, Client: client, Dir: dir}
	env.Namespace = env.createNamespace(t)
	return env
}

// ConfigAs returns a copy of the rest config of one of the plane's identities:
// Viewer, Operator, or "admin" (the same identity as Env.Config).
func (e *Env) ConfigAs(t testing.TB, who string) *rest.Config {
	t.Helper()
	switch who {
	case Viewer, Operator, "admin":
	default:
		t.Fatalf("kubetest: unknown identity %q (want %q, %q or \"admin\")", who, Viewer, Operator)
	}
	cfg, err := loadConfig(filepath.Join(e.Dir, who+".kubeconfig"))
	if err != nil {
		t.Fatalf("kubetest: config of %s: %v", who, err)
	}
	return cfg
}

// ClientAs returns a typed client for ConfigAs(t, who).
func (e *Env) ClientAs(t testing.TB, who string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(e.ConfigAs(t, who))
	if err != nil {
		t.Fatalf("kubetest: client of %s: %v", who, err)
	}
	return c
}

// ClientWithAgent returns an admin client whose user agent names actor
// (UserAgent/actor), so that the plane's audit log tells the test's actors
// apart. The API server takes a write's field manager from the user agent up
// to its first "/", so their writes still carry UserAgent.
func (e *Env) ClientWithAgent(t testing.TB, actor string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(e.Config)
	cfg.UserAgent = UserAgent + "/" + actor
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("kubetest: client of %s: %v", actor, err)
	}
	return c
}

// WaitFor polls cond every 100ms until it returns true, and fails the test
// when timeout passes first (naming what was awaited) or when cond returns an
// error. Conditions that expect an object to appear should treat NotFound as
// "not yet" rather than return it.
func (e *Env) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond() })
	switch {
	case err == nil:
	case wait.Interrupted(err):
		t.Fatalf("kubetest: timed out after %v waiting for %s", timeout, what)
	default:
		t.Fatalf("kubetest: waiting for %s: %v", what, err)
	}
}

func loadConfig(path string) (*rest.Config, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cfg.QPS = qps
	cfg.Burst = burst
	cfg.UserAgent = UserAgent
	return cfg, nil
}

// UserAgent is the user agent of the test clients, and so the field manager
// the API server records for their writes.
const UserAgent = "ctpool-tui-kubetest"

func ping(ctx context.Context, client kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		if len(body) > 0 {
			return fmt.Errorf("%w: %s", err, body)
		}
		return err
	}
	return nil
}

func unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("kubetest: %s; CI is set, so this is a failure: %s", msg, startHint)
	}
	t.Skipf("kubetest: %s; %s", msg, startHint)
}

// createNamespace makes the test's namespace and waits for its default
// ServiceAccount, without which the ServiceAccount admission plugin refuses Pods.
func (e *Env) createNamespace(t testing.TB) string {
	t.Helper()
	ctx := t.Context()
	var ns *corev1.Namespace
	for range 5 { // a random-suffix clash is unlikely; retry it anyway
		var err error
		ns, err = e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{
				Name:   NamespaceName(t.Name()),
				Labels: map[string]string{NamespaceLabel: "true"},
			},
		}, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("kubetest: creating the test namespace: %v", err)
		}
		ns = nil
	}
	if ns == nil {
		t.Fatalf("kubetest: could not find a free namespace name for %s", t.Name())
	}
	name := ns.Name
	t.Cleanup(func() {
		// The test's context is already cancelled here.
		ctx, cancel := context.WithTimeout(context.Background(), reachTimeout)
		defer cancel()
		policy := metav1.DeletePropagationBackground
		err := e.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("kubetest: deleting namespace %s: %v", name, err)
		}
	})
	e.WaitFor(t, serviceAccountTimeout, "the default ServiceAccount of namespace "+name, func() (bool, error) {
		_, err := e.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return name
}

// NamespaceName turns a test name into a DNS-1123 label of at most 63
// characters: lower case, runs of other characters as one '-', and a random
// five-character suffix.
func NamespaceName(testName string) string {
	const maxLen = 63
	suffix := utilrand.String(5)
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	base := b.String()
	if limit := maxLen - len(suffix) - 1; len(base) > limit {
		base = base[:limit]
	}
	base = strings.Trim(base, "-")
	if base == "" {
		base = "test"
	}
	return base + "-" + suffix
}

// clusterScript is the path of a script of testdata/cluster.
func clusterScript(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "cluster", name)
}

// StopComponent stops one component of the plane (e.g. "kube-apiserver") for
// an outage test; StartPlane brings it back. Tests that use it must not run
// beside others on the same plane: they carry the `outage` build tag and run
// in their own step.
func (e *Env) StopComponent(t testing.TB, name string) {
	t.Helper()
	e.runScript(t, "down", name)
}

// StartPlane starts whatever component of the plane is not running and waits
// until it is ready.
func (e *Env) StartPlane(t testing.TB) {
	t.Helper()
	e.runScript(t, "up")
}

func (e *Env) runScript(t testing.TB, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(clusterScript(name), args...)
	cmd.Env = append(os.Environ(), "CTPOOL_CLUSTER_DIR="+e.Dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubetest: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// DefaultK8sVersion is the Kubernetes release of a plane whose state dir
// names none (testdata/cluster/lib.sh's default).
const DefaultK8sVersion = "v1.37.2"

// BinDir is the directory of the binaries the plane in dir runs, as
// testdata/cluster/lib.sh names it: the cache (CTPOOL_CLUSTER_CACHE, else
// $XDG_CACHE_HOME or ~/.cache, then ctpool-tui/cluster) and the Kubernetes release the state dir
// keeps (k8s-version).
func BinDir(dir string) string {
	cache := os.Getenv("CTPOOL_CLUSTER_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "ctpool-tui", "cluster")
	}
	version := DefaultK8sVersion
	if b, err := os.ReadFile(filepath.Join(dir, "k8s-version")); err == nil && strings.TrimSpace(string(b)) != "" {
		version = strings.TrimSpace(string(b))
	}
	return filepath.Join(cache, "k8s-"+version+"-kwok-v0.8.0", "bin")
}
