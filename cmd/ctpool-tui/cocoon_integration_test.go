//go:build integration

package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// Namespace <ns>-b with cocoon pool c and namespace <ns> with cocoon pool b-c,
// applied with the CLI: member 1 of each reads vdi-<ns>-b-c-1, and the two
// Pods still name two VMs (vk-cocoon would let the second adopt the first's).
func TestIntegrationCocoonVMNamesAcrossNamespaces(t *testing.T) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	ctx := t.Context()
	// Short namespaces of the test's own, so that the readable parts are
	// equal and only the digest tells the VMs apart.
	nsA := "vmn-" + env.Namespace[len(env.Namespace)-5:]
	nsAB := nsA + "-b"
	for _, ns := range []string{nsA, nsAB} {
		if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{kubetest.NamespaceLabel: "true"}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := env.Client.CoreV1().Namespaces().Delete(dctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete namespace %s: %v", ns, err)
			}
		})
		env.WaitFor(t, 90*time.Second, "the default ServiceAccount of "+ns, func() (bool, error) {
			_, err := env.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
	}
	apply := func(ns, pool string) string {
		t.Helper()
		code, out, errOut := runCmd(t, "-n", ns, "apply", pool, "--runtime", "cocoon", "--cocoon-image", "ubuntu-dev-base",
			"--image", "ubuntu-dev-base", "--size", "1", "--cpu", "100m", "--mem", "128Mi", "--disk", "1Gi")
		if code != exitOK {
			t.Fatalf("apply %s in %s: exit %d\n%s%s", pool, ns, code, out, errOut)
		}
		member := engine.MemberName(pool, 1)
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, member, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Pod %s/%s: %v", ns, member, err)
		}
		name := p.Annotations[engine.CocoonAnnotationVMName]
		if want := engine.CocoonVMName(ns, member); name != want || len(name) > engine.CocoonVMNameMaxLength {
			t.Fatalf("Pod %s/%s names VM %q, want %q (at most %d characters)", ns, member, name, want, engine.CocoonVMNameMaxLength)
		}
		return name
	}
	first := apply(nsAB, "c")
	second := apply(nsA, "b-c")
	if first == second {
		t.Fatalf("%s/c-1 and %s/b-c-1 both name VM %q", nsAB, nsA, first)
	}
	readable := "vdi-" + nsA + "-b-c-1-"
	if first[:len(readable)] != readable || second[:len(readable)] != readable {
		t.Fatalf("VM names %q and %q, want both to read %s<digest>", first, second, readable)
	}
	t.Logf("%s/c-1: %s; %s/b-c-1: %s", nsAB, first, nsA, second)
}
