package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/demo"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

func TestScopeFlags(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"-A with -n", []string{"--once", "-A", "-n", "vdi"}, exitUsage, "-A reads every namespace; leave out -n"},
		{"-A with --namespaces", []string{"--once", "-A", "--namespaces", "a,b"}, exitUsage, "leave out --namespaces"},
		{"--namespaces with -n", []string{"--once", "--namespaces", "a,b", "-n", "vdi"}, exitUsage, "leave out -n"},
		{"--namespaces not names", []string{"--once", "--namespaces", "a,B_b"}, exitUsage, `"B_b" is not a namespace name`},
		{"--namespaces empty", []string{"--once", "--namespaces", ","}, exitUsage, "at least one namespace"},
		{"status -A with -n", []string{"status", "desk", "-A", "-n", "vdi"}, exitUsage, "leave out -n"},
		{"--all-contexts with --context", []string{"--once", "--all-contexts", "--context", "a"}, exitUsage, "--all-contexts reads every context; leave out --context"},
		{"--context list with --demo", []string{"--once", "--demo", "--context", "a,b"}, exitUsage, "--demo is one simulated cluster"},
		{"--all-contexts with --demo", []string{"--once", "--demo", "--all-contexts"}, exitUsage, "--demo is one simulated cluster"},
		{"--context list empty", []string{"--once", "--context", ",,"}, exitUsage, "at least one context name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantStderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tc.wantCode, tc.wantStderr)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", stderr)
			}
		})
	}
}

// The fleet dashboard builds the engine, the capabilities and the console
// audit of the namespace each pool is in.
func TestFleetOptionsPerNamespace(t *testing.T) {
	client := fake.NewClientset()
	var mu sync.Mutex
	var reviewed []string
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		mu.Lock()
		reviewed = append(reviewed, r.Spec.ResourceAttributes.Namespace)
		mu.Unlock()
		r.Status.Allowed = r.Spec.ResourceAttributes.Namespace == "vdi-eng"
		return true, r, nil
	})
	conn := &connection{client: client, scope: scope{fleet: true, namespaces: []string{"vdi-eng", "vdi-cad"}}, cfg: &rest.Config{}}
	w := kube.NewFleetWatcher(client, conn.scope.namespaces)
	o := fleetOptions(conn, w, false)
	r := o.Resolver
	if !o.Fleet || o.Namespace != "vdi-eng,vdi-cad" || r == nil || r.Logs("") == nil {
		t.Fatalf("options: fleet %v, namespace %q, resolver %v", o.Fleet, o.Namespace, r)
	}
	for _, ns := range conn.scope.namespaces {
		a, ok := r.Actions("", ns).(dashboardActions)
		if !ok || a.Engine.Namespace != ns || a.claims.Namespace != ns {
			t.Errorf("Actions(%s): %T %+v", ns, r.Actions("", ns), a)
		}
		caps, err := r.Access("", ns).Capabilities(context.Background(), []engine.Action{engine.ActionReconcile})
		if err != nil || len(caps) != 1 || caps[0].Allowed != (ns == "vdi-eng") {
			t.Errorf("Access(%s): %+v, %v", ns, caps, err)
		}
	}
	for _, ns := range reviewed {
		if ns != "vdi-eng" && ns != "vdi-cad" {
			t.Errorf("a review asked in namespace %q", ns)
		}
	}
	c, ok := r.Console("").(auditedConsole)
	if !ok || c.auditIn == nil {
		t.Fatalf("console %T has no per-namespace audit", r.Console(""))
	}
	ro := fleetOptions(conn, w, true)
	if r := ro.Resolver; r.Actions("", "vdi-eng") != nil || r.Access("", "vdi-eng") != nil || r.Console("") != nil || !ro.ReadOnly || r.Logs("") == nil {
		t.Fatalf("read-only fleet wires a write: %+v", r)
	}
	if all := (scope{fleet: true}); all.label() != "all" {
		t.Errorf("label of -A: %q", all.label())
	}
}

func TestRBACClusterWide(t *testing.T) {
	code, out, _ := runCmd(t, "rbac", "--role", "viewer", "--cluster-wide", "--subject", "Group:oncall")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	_, role, _ := runCmd(t, "rbac", "--role", "viewer", "--subject", "Group:oncall")
	rules := func(s string) string {
		_, r, _ := strings.Cut(s, "rules:\n")
		r, _, _ = strings.Cut(r, "---")
		return r
	}
	if rules(out) == "" || rules(out) != rules(role) {
		t.Errorf("the ClusterRole's rules differ from the Role's:\n%s\nvs\n%s", rules(out), rules(role))
	}
	for _, want := range []string{"kind: ClusterRole\n", "kind: ClusterRoleBinding", "name: ctpool-tui-viewer-cluster", "name: oncall"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "namespace:") {
		t.Errorf("a cluster-wide grant names a namespace:\n%s", out)
	}
}

// The demo started with -A simulates several namespaces, so a newcomer
// sees the fleet view.
func TestDemoOnceAllNamespaces(t *testing.T) {
	code, out, stderr := runCmd(t, "--demo", "--once", "-A", "-o", "json")
	if code != exitOK && code != 3 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r render.OnceReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, p := range r.Pools {
		seen[p.Namespace] = true
	}
	if !r.AllNamespaces || len(seen) < 3 || !seen[demo.DefaultNamespace] || !seen[demo.FleetNamespaces[0]] || !seen[demo.FleetNamespaces[1]] {
		t.Fatalf("allNamespaces %v, namespaces %v", r.AllNamespaces, seen)
	}
}

// :ns builds the scope of the namespace asked, or of every namespace, and
// refuses in one line where the identity may not list.
func TestDashScoper(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if ns := a.GetNamespace(); ns == "" || ns == "secret" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: a.GetResource().Resource}, "", errors.New("denied"))
		}
		return false, nil, nil
	})
	conn := &connection{client: client, namespace: "vdi", cfg: &rest.Config{}}
	s := dashScoper{conn: conn}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc, err := s.Scope(ctx, "vdi-cad")
	if err != nil {
		t.Fatal(err)
	}
	r := sc.Resolver
	a, ok := r.Actions("", "vdi-cad").(dashboardActions)
	if sc.Fleet || sc.Namespace != "vdi-cad" || sc.Data == nil || !ok || a.Engine.Namespace != "vdi-cad" || r.Access("", "vdi-cad") == nil || r.Console("") == nil {
		t.Fatalf("scope of vdi-cad: %+v", sc)
	}
	if w, ok := sc.Data.(*kube.Watcher); !ok || w.Namespace() != "vdi-cad" {
		t.Fatalf("data %T", sc.Data)
	}
	var lf *kube.ListForbiddenError
	for _, ns := range []string{"", "secret"} {
		if _, err := s.Scope(ctx, ns); !errors.As(err, &lf) || lf.Namespace != ns {
			t.Errorf("Scope(%q) = %v, want the refusal", ns, err)
		}
	}
	if conn.namespace != "vdi" || conn.scope.fleet {
		t.Error("Scope changed the dashboard's connection")
	}
	ro := dashScoper{conn: conn, readOnly: true}
	if sc, err := ro.Scope(ctx, "vdi-cad"); err != nil || sc.Resolver.Actions("", "vdi-cad") != nil || sc.Resolver.Console("") != nil || sc.Resolver.Access("", "vdi-cad") != nil {
		t.Errorf("read-only scope: %+v, %v", sc, err)
	}
}
