package main

import (
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// splitYAML splits a multi-document stream.
func splitYAML(s string) []string {
	var docs []string
	for _, d := range strings.Split(s, "---\n") {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, d)
		}
	}
	return docs
}

func TestManifestsPrintsTheDeployment(t *testing.T) {
	code, out, errOut := runCmd(t, "manifests", "-n", "vdi", "--image", "registry.example/ctpool-tui:1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	docs := splitYAML(out)
	if len(docs) != 6 {
		t.Fatalf("%d documents, want 6:\n%s", len(docs), out)
	}
	if strings.Contains(out, "status:") || strings.Contains(out, "creationTimestamp") {
		t.Errorf("output carries server-side fields:\n%s", out)
	}
	var sa corev1.ServiceAccount
	var role rbacv1.Role
	var rb rbacv1.RoleBinding
	var nodes rbacv1.ClusterRole
	var nodesBinding rbacv1.ClusterRoleBinding
	var dep appsv1.Deployment
	for i, obj := range []any{&sa, &role, &rb, &nodes, &nodesBinding, &dep} {
		if err := yaml.UnmarshalStrict([]byte(docs[i]), obj); err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, docs[i])
		}
	}
	if sa.Kind != "ServiceAccount" || sa.Namespace != "vdi" || sa.Name != "ctpool-tui" {
		t.Errorf("service account %s %s/%s", sa.Kind, sa.Namespace, sa.Name)
	}
	leaseRule := false
	for _, r := range role.Rules {
		if len(r.ResourceNames) == 1 && r.ResourceNames[0] == controller.LeaseName && strings.Join(r.Verbs, ",") == "get,update" {
			leaseRule = true
		}
	}
	if role.Name != "ctpool-tui-reconciler" || !leaseRule {
		t.Errorf("role %s lacks get/update on the election Lease: %+v", role.Name, role.Rules)
	}
	if rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 || rb.Subjects[0].Kind != "ServiceAccount" ||
		rb.Subjects[0].Name != "ctpool-tui" || rb.Subjects[0].Namespace != "vdi" {
		t.Errorf("binding %+v", rb)
	}
	if nodes.Name != "ctpool-tui-reconciler-nodes-vdi" || len(nodes.Rules) != 1 || strings.Join(nodes.Rules[0].Resources, ",") != "nodes" ||
		strings.Join(nodes.Rules[0].Verbs, ",") != "list,watch" {
		t.Errorf("the nodes' ClusterRole %s: %+v; want list and watch on nodes alone", nodes.Name, nodes.Rules)
	}
	if nodesBinding.Name != nodes.Name || nodesBinding.RoleRef.Kind != "ClusterRole" || nodesBinding.RoleRef.Name != nodes.Name ||
		len(nodesBinding.Subjects) != 1 || nodesBinding.Subjects[0] != rb.Subjects[0] {
		t.Errorf("the nodes' binding %+v", nodesBinding)
	}
	// Without the nodes: the four namespaced objects alone.
	if code, out, errOut := runCmd(t, "manifests", "-n", "vdi", "--image", "registry.example/ctpool-tui:1", "--nodes=false"); code != exitOK ||
		len(splitYAML(out)) != 4 || strings.Contains(out, "ClusterRole") {
		t.Errorf("--nodes=false: exit %d, %d documents (%s)\n%s", code, len(splitYAML(out)), errOut, out)
	}
	if *dep.Spec.Replicas != 2 {
		t.Errorf("%d replicas", *dep.Spec.Replicas)
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	if c.Image != "registry.example/ctpool-tui:1" || !strings.Contains(args, "reconcile --all --watch --leader-elect --metrics-addr :9090") {
		t.Errorf("image %s args %s", c.Image, args)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("downward API env %v", env)
	}
	soft := ""
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			soft = e.Value
		}
	}
	if n, ok := strings.CutSuffix(soft, "MiB"); !ok {
		t.Errorf("GOMEMLIMIT %q: want a size in MiB", soft)
	} else if v, err := strconv.ParseInt(n, 10, 64); err != nil || v<<20 >= c.Resources.Limits.Memory().Value() || v<<20 < c.Resources.Limits.Memory().Value()*3/4 {
		t.Errorf("GOMEMLIMIT %s: want between 75%% and 100%% of the memory limit %s", soft, c.Resources.Limits.Memory())
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("probes are not on /healthz and /readyz")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Error("no resource requests or limits")
	}
	sc := c.SecurityContext
	if !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
		pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || !*pod.AutomountServiceAccountToken {
		t.Errorf("security context %+v / %+v", sc, pod.SecurityContext)
	}
	if pod.ServiceAccountName != "ctpool-tui" {
		t.Errorf("service account %q", pod.ServiceAccountName)
	}
}

func TestManifestsUsage(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		code      int
		stderrHas string
		stdoutHas string
	}{
		// The image is never published: a Deployment of a default image
		// could not start, so there is none.
		{"no --image", []string{"manifests", "-n", "vdi"}, exitUsage, "manifests needs --image", ""},
		{"no --image, all namespaces", []string{"manifests", "-n", "vdi", "-A"}, exitUsage, "manifests needs --image", ""},
		{"empty --image", []string{"manifests", "--image", ""}, exitUsage, "needs --image", ""},
		{"blank --image", []string{"manifests", "--image", "  "}, exitUsage, "needs --image", ""},
		{"bad namespace", []string{"manifests", "-n", "Not_A_Namespace", "--image", "registry.example/ctpool-tui:1"}, exitUsage, "invalid namespace", ""},
		{"help says the site builds it", []string{"manifests", "--help"}, exitOK, "", "make image"},
		{"help shows --image required", []string{"manifests", "--help"}, exitOK, "", "manifests --image IMAGE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderrHas) || !strings.Contains(out, tc.stdoutHas) {
				t.Errorf("exit %d (want %d), stderr %q (want %q), stdout lacks %q:\n%s", code, tc.code, errOut, tc.stderrHas, tc.stdoutHas, out)
			}
			if tc.code != exitOK && out != "" {
				t.Errorf("printed manifests on a usage error:\n%s", out)
			}
		})
	}
}

func TestManifestsAllNamespaces(t *testing.T) {
	code, out, errOut := runCmd(t, "manifests", "-n", "vdi-system", "-A", "--image", "registry.example/ctpool-tui:1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	docs := splitYAML(out)
	if len(docs) != 4 {
		t.Fatalf("%d documents, want 4:\n%s", len(docs), out)
	}
	var sa corev1.ServiceAccount
	var role rbacv1.ClusterRole
	var rb rbacv1.ClusterRoleBinding
	var dep appsv1.Deployment
	for i, obj := range []any{&sa, &role, &rb, &dep} {
		if err := yaml.UnmarshalStrict([]byte(docs[i]), obj); err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, docs[i])
		}
	}
	if role.Kind != "ClusterRole" || role.Name != "ctpool-tui-reconciler" || role.Namespace != "" {
		t.Errorf("role %s %s/%s", role.Kind, role.Namespace, role.Name)
	}
	verbs := map[string]string{}
	for _, r := range role.Rules {
		if len(r.ResourceNames) == 0 {
			verbs[r.APIGroups[0]+"/"+r.Resources[0]] += strings.Join(r.Verbs, ",") + ";"
		}
	}
	// What the reconciler does, and nothing of the operator's console, logs,
	// claims or releases.
	for res, want := range map[string]string{
		"/pods":                       "create,delete,get,list,patch,watch;",
		"policy/poddisruptionbudgets": "create,get,update;list,watch;",
		"/persistentvolumeclaims":     "create,delete,get,list,patch,watch;",
		"/configmaps":                 "get,list,patch,watch;",
		"coordination.k8s.io/leases":  "create,delete,get,list,update,watch;create;",
		"/nodes":                      "list,watch;",
	} {
		if verbs[res] != want {
			t.Errorf("%s: verbs %q, want %q", res, verbs[res], want)
		}
	}
	for _, res := range []string{"/pods/exec", "/pods/log"} {
		if v, ok := verbs[res]; ok {
			t.Errorf("the cluster-wide role grants %s %s", v, res)
		}
	}
	if rb.Kind != "ClusterRoleBinding" || rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != role.Name ||
		len(rb.Subjects) != 1 || rb.Subjects[0].Name != "ctpool-tui" || rb.Subjects[0].Namespace != "vdi-system" {
		t.Errorf("binding %+v", rb)
	}
	args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " ")
	if dep.Namespace != "vdi-system" || !strings.Contains(args, "reconcile --all-namespaces --leader-elect-namespace $(POD_NAMESPACE) --watch --leader-elect") {
		t.Errorf("deployment %s args %s", dep.Namespace, args)
	}
}

// --node-selector and --toleration place the reconciler's Pods; a bad one is
// a usage error.
func TestManifestsPlacement(t *testing.T) {
	code, out, errOut := runCmd(t, "manifests", "-n", "vdi", "--image", "registry.example/ctpool-tui:1",
		"--node-selector", "pool=system", "--toleration", "dedicated=system:NoSchedule", "--toleration", "infra")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	docs := splitYAML(out)
	var dep appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(docs[len(docs)-1]), &dep); err != nil {
		t.Fatal(err)
	}
	spec := dep.Spec.Template.Spec
	if len(spec.NodeSelector) != 1 || spec.NodeSelector["pool"] != "system" {
		t.Errorf("nodeSelector %v", spec.NodeSelector)
	}
	want := []corev1.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule},
		{Key: "infra", Operator: corev1.TolerationOpExists},
	}
	if len(spec.Tolerations) != 2 || spec.Tolerations[0] != want[0] || spec.Tolerations[1] != want[1] {
		t.Errorf("tolerations %+v, want %+v", spec.Tolerations, want)
	}
	for _, bad := range [][]string{{"--toleration", "a=b:Sometimes"}, {"--toleration", "bad key"}, {"--node-selector", "pool=not valid"}} {
		if code, _, errOut := runCmd(t, append([]string{"manifests", "-n", "vdi", "--image", "x:1"}, bad...)...); code != exitUsage {
			t.Errorf("%v: exit %d (%s), want a usage error", bad, code, errOut)
		}
	}
	// Without them, none: the scheduler's choice.
	_, out, _ = runCmd(t, "manifests", "-n", "vdi", "--image", "registry.example/ctpool-tui:1")
	if strings.Contains(out, "nodeSelector") || strings.Contains(out, "tolerations") {
		t.Errorf("placement without the flags:\n%s", out)
	}
}
