//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// convergeTimeout bounds each wait for Pods to become Ready: other tests on
// the shared plane may fill the nodes' Pod capacity for minutes.
const convergeTimeout = 5 * time.Minute

// manifestObjects runs `manifests` for ns and decodes what it prints.
func manifestObjects(t *testing.T, ns string, extra ...string) (string, []runtime.Object) {
	t.Helper()
	code, out, errOut := runCmd(t, append([]string{"manifests", "-n", ns, "--image", "registry.example/ctpool-tui:test"}, extra...)...)
	if code != exitOK {
		t.Fatalf("manifests: exit %d: %s", code, errOut)
	}
	var objs []runtime.Object
	for _, doc := range splitYAML(out) {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decode: %v\n%s", err, doc)
		}
		objs = append(objs, obj)
	}
	return out, objs
}

// create sends each object to the API server (a server-side dry run when dry).
func create(ctx context.Context, env *kubetest.Env, objs []runtime.Object, dry bool) error {
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	ns := env.Namespace
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			_, err = env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, o, opts)
		case *rbacv1.Role:
			_, err = env.Client.RbacV1().Roles(ns).Create(ctx, o, opts)
		case *rbacv1.RoleBinding:
			_, err = env.Client.RbacV1().RoleBindings(ns).Create(ctx, o, opts)
		case *rbacv1.ClusterRole:
			_, err = env.Client.RbacV1().ClusterRoles().Create(ctx, o, opts)
		case *rbacv1.ClusterRoleBinding:
			_, err = env.Client.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
		case *appsv1.Deployment:
			_, err = env.Client.AppsV1().Deployments(ns).Create(ctx, o, opts)
		default:
			err = fmt.Errorf("unexpected object %T", obj)
		}
		if err != nil {
			return fmt.Errorf("%T: %w", obj, err)
		}
	}
	return nil
}

func TestIntegrationManifestsServerDryRun(t *testing.T) {
	env := kubetest.Require(t)
	out, objs := manifestObjects(t, env.Namespace)
	if len(objs) != 6 {
		t.Fatalf("%d objects, want 6 (with the nodes' ClusterRole and binding)", len(objs))
	}
	if err := create(t.Context(), env, objs, true); err != nil {
		t.Fatalf("server-side dry run: %v", err)
	}
	if _, all := manifestObjects(t, env.Namespace, "-A"); len(all) != 4 {
		t.Fatalf("-A: %d objects", len(all))
	} else if err := create(t.Context(), env, all, true); err != nil {
		t.Fatalf("-A: server-side dry run: %v", err)
	}
	// The bundled kubectl too, when the plane's binaries are at hand.
	kubectl := filepath.Join(kubetest.BinDir(env.Dir), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Logf("no bundled kubectl at %s: only the typed dry run ran", kubectl)
		return
	}
	cmd := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", filepath.Join(env.Dir, "admin.kubeconfig"),
		"apply", "--dry-run=server", "--validate=strict", "-f", "-")
	cmd.Stdin = strings.NewReader(out)
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, res)
	}
	for _, want := range []string{"serviceaccount/ctpool-tui", "role.rbac.authorization.k8s.io/ctpool-tui-reconciler",
		"rolebinding.rbac.authorization.k8s.io/ctpool-tui-reconciler", "deployment.apps/ctpool-tui-reconciler",
		"clusterrole.rbac.authorization.k8s.io/ctpool-tui-reconciler-nodes-" + env.Namespace,
		"clusterrolebinding.rbac.authorization.k8s.io/ctpool-tui-reconciler-nodes-" + env.Namespace} {
		if !strings.Contains(string(res), want) {
			t.Errorf("kubectl output lacks %s:\n%s", want, res)
		}
	}
}

// The Role the manifests grant is enough: `reconcile --all --watch
// --leader-elect --metrics-addr` runs as the ServiceAccount (with a token of
// it), converges a pool, reports ready, and on SIGTERM (ctx) releases the
// Lease and exits 0.
func TestIntegrationManifestsReconcilerRunsAsItsServiceAccount(t *testing.T) {
	reconcilerAsServiceAccount(t, false)
}

// The same with -A: the ClusterRole lets `reconcile -A` converge pools in
// two namespaces while its election Lease stays in its own.
func TestIntegrationManifestsAllNamespaces(t *testing.T) {
	reconcilerAsServiceAccount(t, true)
}

func reconcilerAsServiceAccount(t *testing.T, allNamespaces bool) {
	env := kubetest.Require(t)
	ctx := t.Context()
	namespaces := []string{env.Namespace}
	var extra []string
	args := []string{"reconcile", "--all"}
	if allNamespaces {
		extra = []string{"-A"}
		args = []string{"reconcile", "-A", "--leader-elect-namespace", env.Namespace}
		second := env.Namespace + "-b"
		if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: second}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client.CoreV1().Namespaces().Delete(context.Background(), second, metav1.DeleteOptions{})
			_ = env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), controller.AppName, metav1.DeleteOptions{})
			_ = env.Client.RbacV1().ClusterRoles().Delete(context.Background(), controller.AppName, metav1.DeleteOptions{})
		})
		namespaces = append(namespaces, second)
	}
	_, objs := manifestObjects(t, env.Namespace, extra...)
	if !allNamespaces {
		nodes := controller.AppName + "-nodes-" + env.Namespace
		t.Cleanup(func() {
			_ = env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), nodes, metav1.DeleteOptions{})
			_ = env.Client.RbacV1().ClusterRoles().Delete(context.Background(), nodes, metav1.DeleteOptions{})
		})
	}
	if err := create(ctx, env, objs, false); err != nil {
		t.Fatal(err)
	}
	tr, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).CreateToken(ctx, "ctpool-tui",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the ServiceAccount: %v", err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["plane"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: "sa", Namespace: env.Namespace}
	kc.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "sa.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	t.Setenv("POD_NAME", "ctpool-tui-reconciler-test")
	// The reconciler may watch the nodes, to tell a member whose node is down.
	saCfg := rest.CopyConfig(env.Config)
	saCfg.BearerToken, saCfg.CertData, saCfg.KeyData, saCfg.CertFile, saCfg.KeyFile = tr.Status.Token, nil, nil, "", ""
	sa, err := kubernetes.NewForConfig(saCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Errorf("the ServiceAccount lists nodes: %v; want the manifests to grant it", err)
	}

	spec := engine.Spec{Image: "registry.example/desktop:1", CPU: "10m", Memory: "32Mi", Disk: "1Gi", Size: 2}
	spec.Default()
	for _, ns := range namespaces {
		if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, engine.BuildConfigMap(ns, "desk", spec), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	rctx, stop := context.WithCancel(context.Background())
	defer stop()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(rctx, append(args, "--watch", "--leader-elect", "--metrics-addr", addr, "--interval", "5s"),
			strings.NewReader(""), &out, &errb)
	}()
	exited := false
	t.Cleanup(func() {
		if exited {
			return
		}
		stop()
		select {
		case <-done:
			t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
		case <-time.After(30 * time.Second):
			t.Error("the reconciler did not stop within 30s")
		}
	})
	for _, ns := range namespaces {
		cluster := kube.NewCluster(env.Client, ns)
		env.WaitFor(t, convergeTimeout, ns+"/desk to converge under the ServiceAccount", func() (bool, error) {
			select {
			case code := <-done:
				done <- code
				return false, fmt.Errorf("the reconciler exited %d", code)
			default:
			}
			snap, err := cluster.Snapshot(ctx, "desk")
			if err != nil {
				return false, err
			}
			v := engine.Observe(snap, time.Now())
			return v.Status.Ready == 2 && v.Recorded.Ready == 2 && len(v.Recorded.Errors) == 0, nil
		})
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %s", resp.Status)
	}
	lease, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(ctx, controller.LeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "ctpool-tui-reconciler-test" {
		t.Fatalf("election Lease %v: %+v", err, lease)
	}
	if lease.Labels[engine.LabelPool] != "" {
		t.Error("the election Lease carries the pool label")
	}

	stop() // SIGTERM
	select {
	case code := <-done:
		exited = true
		if code != exitOK {
			t.Fatalf("exit %d after SIGTERM, want 0\nstderr:\n%s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the reconciler did not stop within 30s")
	}
	lease, err = env.Client.CoordinationV1().Leases(env.Namespace).Get(ctx, controller.LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the Lease is still held by %q after the stop", *h)
	}
	for _, want := range []string{"msg=leading identity=ctpool-tui-reconciler-test", "Lease released", "stopping: interrupted"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	// (With -A, pools other tests left in namespaces being deleted may be
	// refused; only this test's namespaces count.)
	for _, line := range strings.Split(errb.String(), "\n") {
		ours := !allNamespaces || !strings.Contains(line, "/") || strings.Contains(line, env.Namespace)
		if ours && strings.Contains(strings.ToLower(line), "forbidden") {
			t.Errorf("the ServiceAccount was refused something: %s", line)
		}
	}
	for _, ns := range namespaces {
		if !strings.Contains(errb.String(), "msg=reconciled pool="+ns+`/desk actions="2 create"`) {
			t.Errorf("the log lacks the create line of %s:\n%s", ns, errb.String())
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
