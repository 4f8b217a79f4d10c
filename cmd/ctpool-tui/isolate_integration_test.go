//go:build integration

package main

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// Isolated pools through the CLI on the real control plane: the
// NetworkPolicy the API server stores is the definition's, and apply,
// reconcile, status and delete keep it so with someone else changing it.
// (The plane's nodes are kwok's: no CNI enforces the policy, so what it does
// to traffic is not tested here.)

// isolationOf is the isolation `status POOL -o json` reports.
func isolationOf(t *testing.T, env *kubetest.Env, pool string) engine.IsolationView {
	t.Helper()
	p := poolReport(t, env, pool)
	if p.Isolation == nil {
		t.Fatalf("status %s -o json carries no isolation", pool)
	}
	return *p.Isolation
}

// checkPolicy fails unless the pool's stored NetworkPolicy is the one its
// definition asks for, labelled as the pool's.
func checkPolicy(t *testing.T, env *kubetest.Env, pool string, spec engine.Spec) *networkingv1.NetworkPolicy {
	t.Helper()
	np, err := env.Client.NetworkingV1().NetworkPolicies(env.Namespace).Get(t.Context(), engine.NetworkPolicyName(pool), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the NetworkPolicy of %s: %v", pool, err)
	}
	spec.Default()
	want := engine.BuildNetworkPolicy(env.Namespace, pool, spec)
	if !equality.Semantic.DeepEqual(np.Spec, want.Spec) || np.Labels[engine.LabelPool] != pool {
		t.Fatalf("stored NetworkPolicy of %s:\n%+v\nlabels %v\nwant:\n%+v", pool, np.Spec, np.Labels, want.Spec)
	}
	return np
}

func policyGone(t *testing.T, env *kubetest.Env, pool string) bool {
	t.Helper()
	_, err := env.Client.NetworkingV1().NetworkPolicies(env.Namespace).Get(t.Context(), engine.NetworkPolicyName(pool), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return apierrors.IsNotFound(err)
}

// The life of an isolated pool's policy: created by apply, shown by status,
// put back after a hand edit and after a delete, changed with the peers,
// removed by --isolate=false and by delete.
func TestIntegrationIsolatedPoolPolicy(t *testing.T) {
	env := kubetest.Require(t)
	run := cliRunner(t, env)
	const pool = "iso"
	broker := `{"podSelector":{"app":"broker"}}`
	spec := engine.Spec{Image: "registry.example/desktop:1", CPU: "100m", Memory: "128Mi", Disk: "1Gi", Size: 1, Isolate: true,
		Ingress: []engine.NetworkPeer{{PodSelector: map[string]string{"app": "broker"}}}}

	out, _ := run(exitOK, append(append([]string{"apply", pool, "--size", "1"}, smallPool...), "--isolate", "--ingress", broker)...)
	if !strings.Contains(out, "isolation: NetworkPolicy corral-vdi-ctpool-iso enforced (created)") {
		t.Fatalf("apply --isolate said:\n%s", out)
	}
	checkPolicy(t, env, pool, spec)
	if iv := isolationOf(t, env, pool); iv.State != engine.IsolationEnforced {
		t.Fatalf("status after apply: %+v", iv)
	}
	out, _ = run(exitOK, "status", pool)
	if !strings.Contains(out, "isolation: NetworkPolicy corral-vdi-ctpool-iso enforced") {
		t.Fatalf("status table:\n%s", out)
	}

	env.WaitFor(t, convergeTimeout, "a free member", func() (bool, error) {
		code, _, _ := runCmd(t, "-n", env.Namespace, "--once", "--pool", pool)
		return code == exitOK, nil
	})

	// Someone opens the pool by hand: an ingress rule from anywhere.
	nps := env.Client.NetworkingV1().NetworkPolicies(env.Namespace)
	if _, err := nps.Patch(t.Context(), engine.NetworkPolicyName(pool), types.JSONPatchType,
		[]byte(`[{"op":"add","path":"/spec/ingress/-","value":{}}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if iv := isolationOf(t, env, pool); iv.State != engine.IsolationChanged {
		t.Fatalf("status after a hand edit: %+v", iv)
	}
	if p := poolReport(t, env, pool); p.Status != "not isolated" {
		t.Fatalf("status word after a hand edit: %q", p.Status)
	}
	if out, _ := run(exitAttention, "--once", "--pool", pool); !strings.Contains(out, "changed (") {
		t.Fatalf("--once after a hand edit:\n%s", out)
	}
	out, _ = run(exitOK, "reconcile", pool)
	if !strings.Contains(out, "enforced (put back)") {
		t.Fatalf("reconcile after a hand edit said:\n%s", out)
	}
	checkPolicy(t, env, pool, spec)

	// Someone deletes it.
	if err := nps.Delete(t.Context(), engine.NetworkPolicyName(pool), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if iv := isolationOf(t, env, pool); iv.State != engine.IsolationMissing {
		t.Fatalf("status after a delete: %+v", iv)
	}
	out, _ = run(exitOK, "reconcile", pool)
	if !strings.Contains(out, "enforced (created)") {
		t.Fatalf("reconcile after a delete said:\n%s", out)
	}
	checkPolicy(t, env, pool, spec)

	// New peers: the gateway's namespace on one port, and egress restricted.
	gw := `{"namespaceSelector":{"kubernetes.io/metadata.name":"gw"},"ports":[5900]}`
	registry := `{"cidr":"10.0.0.0/8","except":["10.1.0.0/16"]}`
	out, _ = run(exitOK, "apply", pool, "--ingress", gw, "--egress", registry)
	if !strings.Contains(out, "enforced (put back)") {
		t.Fatalf("apply with new peers said:\n%s", out)
	}
	spec.Ingress = []engine.NetworkPeer{{NamespaceSelector: map[string]string{"kubernetes.io/metadata.name": "gw"}, Ports: []int32{5900}}}
	spec.Egress = []engine.NetworkPeer{{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}
	np := checkPolicy(t, env, pool, spec)
	if len(np.Spec.PolicyTypes) != 2 {
		t.Fatalf("restricted egress, policy types %v", np.Spec.PolicyTypes)
	}

	// Un-isolated: the policy goes, and status shows no isolation.
	out, _ = run(exitOK, "apply", pool, "--isolate=false")
	if !strings.Contains(out, "NetworkPolicy corral-vdi-ctpool-iso removed") || !policyGone(t, env, pool) {
		t.Fatalf("apply --isolate=false said:\n%s", out)
	}
	if p := poolReport(t, env, pool); p.Isolation != nil {
		t.Fatalf("a pool no longer isolated reports %+v", *p.Isolation)
	}

	// Isolated again, then deleted: the policy goes with the pool.
	run(exitOK, "apply", pool, "--isolate")
	spec.Ingress, spec.Egress = nil, nil
	checkPolicy(t, env, pool, spec)
	run(exitOK, "apply", pool, "--size", "0")
	run(exitOK, "delete", pool)
	if !policyGone(t, env, pool) {
		t.Fatal("the NetworkPolicy outlived its pool's delete")
	}
}

// A NetworkPolicy of the pool's name that someone else wrote (no pool
// label) is never changed or deleted: apply and reconcile report it, exit
// 1, and status shows it as foreign; delete leaves it.
func TestIntegrationIsolatedPoolForeignPolicy(t *testing.T) {
	env := kubetest.Require(t)
	run := cliRunner(t, env)
	const pool = "iso-foreign"
	nps := env.Client.NetworkingV1().NetworkPolicies(env.Namespace)
	foreign, err := nps.Create(t.Context(), &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: engine.NetworkPolicyName(pool), Labels: map[string]string{"team": "net"}},
		Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, errOut := run(exitError, append(append([]string{"apply", pool, "--size", "1"}, smallPool...), "--isolate")...)
	if !strings.Contains(errOut, "is not this pool's") {
		t.Fatalf("apply over a foreign policy said:\n%s", errOut)
	}
	if iv := isolationOf(t, env, pool); iv.State != engine.IsolationForeign {
		t.Fatalf("status over a foreign policy: %+v", iv)
	}
	run(exitError, "reconcile", pool)
	run(exitOK, "apply", pool, "--isolate=false", "--size", "0")
	run(exitOK, "delete", pool)
	np, err := nps.Get(t.Context(), foreign.Name, metav1.GetOptions{})
	if err != nil || np.ResourceVersion != foreign.ResourceVersion || np.UID != foreign.UID {
		t.Fatalf("the foreign policy was touched: %v (rv %s, was %s)", err, np.ResourceVersion, foreign.ResourceVersion)
	}
}

// An identity with the contract's permissions and the isolated rows of the
// table of docs/permissions.md (kube.IsolatedPermissions) runs an isolated pool's life;
// without the isolated rows, apply writes the pool and says what it may
// not do, and status names the missing permission.
func TestIntegrationIsolatedPoolPermissions(t *testing.T) {
	env := kubetest.Require(t)
	rules := append([]rbacv1.PolicyRule{}, contractRules...)
	verbs := map[string]bool{}
	for _, a := range []engine.Action{engine.ActionApply, engine.ActionReconcile, engine.ActionDelete} {
		ps, err := kube.IsolatedPermissions(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			verbs[p.Verb] = true
		}
	}
	var nv []string
	for v := range verbs {
		nv = append(nv, v)
	}
	rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: nv})
	withPolicies := kubeconfigFor(t, env, "isolated", rules)
	without := kubeconfigFor(t, env, "notisolated", contractRules)

	t.Setenv("KUBECONFIG", withPolicies)
	mustRun := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"-n", env.Namespace}, args...)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errOut)
		}
		return out + errOut
	}
	out := mustRun(exitOK, append(append([]string{"apply", "isop", "--size", "1"}, smallPool...), "--isolate")...)
	if strings.Contains(strings.ToLower(out), "forbidden") || !strings.Contains(out, "enforced (created)") {
		t.Fatalf("apply --isolate with the isolated permissions:\n%s", out)
	}
	mustRun(exitOK, "reconcile", "isop")
	mustRun(exitOK, "status", "isop")
	mustRun(exitOK, "apply", "isop", "--size", "0")
	mustRun(exitOK, "delete", "isop")
	if !policyGone(t, env, "isop") {
		t.Fatal("delete left the policy")
	}

	t.Setenv("KUBECONFIG", without)
	out = mustRun(exitError, append(append([]string{"apply", "isop2", "--size", "1"}, smallPool...), "--isolate")...)
	if !strings.Contains(out, "forbidden") {
		t.Fatalf("apply --isolate without the permission:\n%s", out)
	}
	out = mustRun(exitOK, "status", "isop2")
	if !strings.Contains(out, "no permission to get networkpolicies") {
		t.Fatalf("status without the permission:\n%s", out)
	}
	t.Setenv("KUBECONFIG", withPolicies)
	mustRun(exitOK, "apply", "isop2", "--size", "0")
	mustRun(exitOK, "delete", "isop2")
}
