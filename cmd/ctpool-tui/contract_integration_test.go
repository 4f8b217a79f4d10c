//go:build integration

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// contractRules are the permissions the contract's "Kubernetes access"
// lists, and nothing more.
var contractRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"delete"}},
	{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "create", "update", "delete"}},
}

// kubeconfigFor makes a ServiceAccount bound to rules in the test namespace
// and writes a kubeconfig with its token.
func kubeconfigFor(t *testing.T, env *kubetest.Env, name string, rules []rbacv1.PolicyRule) string {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}
	if _, err := env.Client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["plane"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: name, Namespace: ns}
	kc.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// An identity bound to exactly the contract's permissions can run every
// command of the contract: apply (create and change), reconcile, status,
// claim, release and delete. No update of ConfigMaps, no watch.
func TestIntegrationContractPermissionsAreEnough(t *testing.T) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", kubeconfigFor(t, env, "contract", contractRules))
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
		}
		if strings.Contains(strings.ToLower(out+errOut), "forbidden") {
			t.Fatalf("%v said forbidden:\nstdout: %s\nstderr: %s", args, out, errOut)
		}
		return out
	}
	// Without rights on PodDisruptionBudgets, apply says once that claimed
	// desktops are not protected from eviction, and works.
	code, out, errOut := runCmd(t, "apply", "cx", "--image", "registry.example/desktop:1", "--size", "1", "--cpu", "10m", "--mem", "32Mi", "--disk", "1Gi")
	if code != exitOK || strings.Count(out+errOut, engine.NotProtected) != 1 {
		t.Fatalf("apply without rights on PodDisruptionBudgets: exit %d, want 0 and %q once\nstdout: %s\nstderr: %s", code, engine.NotProtected, out, errOut)
	}
	run("apply", "cx", "--size", "2")
	env.WaitFor(t, convergeTimeout, "a free member", func() (bool, error) {
		code, _, _ := runCmd(t, "--once", "--pool", "cx")
		return code == exitOK, nil
	})
	run("reconcile", "cx")
	if out := run("status", "cx"); !strings.Contains(out, "protection: "+engine.NotProtected) {
		t.Fatalf("status without rights on PodDisruptionBudgets does not say %q:\n%s", engine.NotProtected, out)
	}
	member := strings.TrimSpace(run("claim", "cx", "alice@example.com"))
	run("release", "cx", member, "alice@example.com")
	run("apply", "cx", "--size", "0")
	run("delete", "cx")
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(context.Background(), engine.ConfigMapName("cx"), metav1.GetOptions{}); err == nil {
		t.Fatal("the pool is still defined after delete")
	}
}

// What a new user tries by hand, on the real plane: hand-made and broken
// definitions, a force-release without the permission, a release under
// maintenance, a ttl above sandboxd's maximum.
func TestIntegrationContractCommands(t *testing.T) {
	env := kubetest.Require(t)
	ctx := context.Background()
	ns := env.Namespace
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	cms := env.Client.CoreV1().ConfigMaps(ns)

	t.Run("delete of a ConfigMap with no data", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: engine.ConfigMapName("nodata"), Labels: map[string]string{engine.LabelPool: "nodata"}}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCmd(t, "-n", ns, "delete", "nodata")
		if code != exitOK || strings.Contains(errOut, "panic") {
			t.Fatalf("delete: exit %d\n%s\n%s", code, out, errOut)
		}
		if _, err := cms.Get(ctx, cm.Name, metav1.GetOptions{}); err == nil {
			t.Fatal("definition left")
		}
	})

	t.Run("apply never loses a stored field", func(t *testing.T) {
		stored := "image: registry.example/desktop:1\ncpu: \"2\"\nsize: 0\ncolour: blue\n"
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: engine.ConfigMapName("broken"), Labels: map[string]string{engine.LabelPool: "broken"}},
			Data: map[string]string{engine.KeySpec: stored}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"--size", "1"}, {"--image", "registry.example/desktop:2"}} {
			code, _, errOut := runCmd(t, append([]string{"-n", ns, "apply", "broken"}, args...)...)
			if code != exitError || !strings.Contains(errOut, `unknown field "colour" (line 4: colour)`) || !strings.Contains(errOut, "nothing was written") {
				t.Fatalf("apply %v: exit %d %q", args, code, errOut)
			}
			got, _ := cms.Get(ctx, cm.Name, metav1.GetOptions{})
			if got.Data[engine.KeySpec] != stored {
				t.Fatalf("the stored definition changed: %q", got.Data[engine.KeySpec])
			}
		}
		code, _, errOut := runCmd(t, "-n", ns, "apply", "broken", "--replace", "--size", "0")
		if code != exitUsage || !strings.Contains(errOut, "--image is required") {
			t.Fatalf("--replace without --image: exit %d %q", code, errOut)
		}
		code, out, errOut := runCmd(t, "-n", ns, "apply", "broken", "--replace", "--image", "registry.example/desktop:2", "--size", "0")
		if code != exitOK {
			t.Fatalf("--replace: exit %d\n%s\n%s", code, out, errOut)
		}
		got, _ := cms.Get(ctx, cm.Name, metav1.GetOptions{})
		if s, err := engine.ParseSpec(got.Data[engine.KeySpec]); err != nil || s.Image != "registry.example/desktop:2" || s.CPU != engine.DefaultCPU {
			t.Fatalf("after --replace: %q (%v)", got.Data[engine.KeySpec], err)
		}

		persistent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: engine.ConfigMapName("pers"), Labels: map[string]string{engine.LabelPool: "pers"}},
			Data: map[string]string{engine.KeySpec: "image: registry.example/desktop:1\ncpu: \"2\"\nsize: 0\nmode: persistent\n"}}
		if _, err := cms.Create(ctx, persistent, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		code, _, errOut = runCmd(t, "-n", ns, "apply", "pers", "--image", "registry.example/desktop:2")
		if code != exitError || !strings.Contains(errOut, "mode persistent is not supported") {
			t.Fatalf("apply on a persistent pool: exit %d %q", code, errOut)
		}
		if got, _ := cms.Get(ctx, persistent.Name, metav1.GetOptions{}); got.Data[engine.KeySpec] != persistent.Data[engine.KeySpec] {
			t.Fatalf("the persistent definition changed: %q", got.Data[engine.KeySpec])
		}
	})

	t.Run("ttlSeconds above 86400", func(t *testing.T) {
		code, _, errOut := runCmd(t, "-n", ns, "apply", "sbx", "--image", "rt:24.04", "--runtime", "sandboxd", "--template", "rt:24.04", "--ttl-seconds", "90000")
		if code != exitUsage || !strings.Contains(errOut, "at most 86400: sandboxd's maximum") {
			t.Fatalf("exit %d %q", code, errOut)
		}
		if _, err := cms.Get(ctx, engine.ConfigMapName("sbx"), metav1.GetOptions{}); err == nil {
			t.Fatal("the pool was created")
		}
	})

	t.Run("force-release needs the permission, from the CLI too", func(t *testing.T) {
		code, out, errOut := runCmd(t, "-n", ns, "apply", "fr", "--image", "registry.example/desktop:1", "--size", "1", "--cpu", "10m", "--mem", "32Mi", "--disk", "1Gi")
		if code != exitOK {
			t.Fatalf("apply: %d %s %s", code, out, errOut)
		}
		env.WaitFor(t, convergeTimeout, "a free member", func() (bool, error) {
			code, _, _ := runCmd(t, "-n", ns, "--once", "--pool", "fr")
			return code == exitOK, nil
		})
		code, out, errOut = runCmd(t, "-n", ns, "claim", "fr", "alice@example.com")
		if code != exitOK {
			t.Fatalf("claim: %d %s", code, errOut)
		}
		member := strings.TrimSpace(out)
		// The plane's operator user holds every verb of the contract but not
		// the force-release verb.
		t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "operator.kubeconfig"))
		code, _, errOut = runCmd(t, "-n", ns, "release", "fr", member, "--force")
		if code != exitError || !strings.Contains(errOut, `force-release needs permission "force-release leases.coordination.k8s.io"`) {
			t.Fatalf("operator force-release: exit %d %q", code, errOut)
		}
		t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
		lease, err := env.Client.CoordinationV1().Leases(ns).Get(ctx, engine.LeaseName(member), metav1.GetOptions{})
		if err != nil || *lease.Spec.HolderIdentity != "alice@example.com" {
			t.Fatalf("the claim changed after a refused force-release: %v", err)
		}
		if code, _, errOut = runCmd(t, "-n", ns, "release", "fr", member, "--force"); code != exitOK {
			t.Fatalf("admin force-release: exit %d %q", code, errOut)
		}
		env.WaitFor(t, time.Minute, "a force-release audit Event", func() (bool, error) {
			evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if strings.HasPrefix(e.Message, "force-release by ") && strings.Contains(e.Message, `previous holder "alice@example.com"`) {
					return true, nil
				}
			}
			return false, nil
		})
	})

	t.Run("release under maintenance says when", func(t *testing.T) {
		env.WaitFor(t, convergeTimeout, "a free member", func() (bool, error) {
			code, _, _ := runCmd(t, "-n", ns, "--once", "--pool", "fr")
			return code == exitOK, nil
		})
		if _, err := env.Client.CoordinationV1().Leases(ns).Create(ctx, engine.ReconcilerLease(ns, "fr", "fr-1", time.Now().Add(-2*time.Minute)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCmd(t, "-n", ns, "release", "fr", "fr-1", "alice@example.com")
		if code != exitError || !strings.Contains(errOut, "under maintenance") || !strings.Contains(errOut, "its Lease is stale at") || !strings.Contains(errOut, "a reconcile then finishes the work") {
			t.Fatalf("release under maintenance: exit %d %q", code, errOut)
		}
	})
}
