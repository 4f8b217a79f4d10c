package kube

import (
	"slices"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

func has(ps []engine.Permission, group, resource, verb string) bool {
	return slices.Contains(ps, engine.Permission{Group: group, Resource: resource, Verb: verb})
}

func TestRolePermissionsDerivedFromCalls(t *testing.T) {
	roles := map[string][]engine.Permission{}
	for _, r := range RoleNames {
		ps, err := RolePermissions(r)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		roles[r] = ps
		t.Logf("%s: %v", r, ps)
	}
	cases := []struct {
		role, group, resource, verb string
		want                        bool
	}{
		{"viewer", "", "configmaps", "list", true},
		{"viewer", "", "configmaps", "watch", true},
		{"viewer", "", "pods", "watch", true},
		{"viewer", "", "persistentvolumeclaims", "list", true},
		{"viewer", "coordination.k8s.io", "leases", "watch", true},
		{"viewer", "", "events", "list", true},
		{"viewer", "", "configmaps", "patch", false},
		{"viewer", "", "pods", "create", false},
		{"viewer", "coordination.k8s.io", "leases", "create", false},
		{"operator", "", "pods", "create", true},
		{"operator", "", "pods", "delete", true},
		{"operator", "", "persistentvolumeclaims", "delete", true},
		{"operator", "", "persistentvolumeclaims", "patch", true},
		{"operator", "", "services", "delete", true},
		{"operator", "", "configmaps", "patch", true},
		// The definition is written with a compare-and-swap patch: the
		// contract's ConfigMap verbs have no update.
		{"operator", "", "configmaps", "update", false},
		{"admin", "", "configmaps", "update", false},
		{"operator", "coordination.k8s.io", "leases", "create", true},
		{"operator", "coordination.k8s.io", "leases", "update", true},
		{"operator", "coordination.k8s.io", "leases", "delete", true},
		{"operator", "", "events", "create", true},
		{"operator", "coordination.k8s.io", "leases", "force-release", false},
		{"operator", "", "configmaps", "create", false},
		{"operator", "", "configmaps", "delete", false},
		{"admin", "coordination.k8s.io", "leases", "force-release", true},
		{"admin", "", "configmaps", "create", true},
		{"admin", "", "configmaps", "delete", true},
		{"viewer", "", "pods/log", "get", true},
		{"viewer", "", "pods/exec", "create", false},
		{"operator", "", "pods/exec", "create", true},
		{"operator", "", "pods/log", "get", true},
		{"admin", "", "pods/exec", "create", true},
		{"admin", "", "pods/log", "get", true},
	}
	for _, c := range cases {
		if got := has(roles[c.role], c.group, c.resource, c.verb); got != c.want {
			t.Errorf("%s has %s %s.%s = %v, want %v", c.role, c.verb, c.resource, c.group, got, c.want)
		}
	}
}

func TestConsoleAndLogsPermissions(t *testing.T) {
	for _, c := range []struct {
		action engine.Action
		want   []engine.Permission
	}{
		{engine.ActionConsole, ConsolePermissions},
		{engine.ActionLogs, LogPermissions},
	} {
		ps, err := RequiredPermissions(c.action)
		if err != nil {
			t.Fatalf("%s: %v", c.action, err)
		}
		for _, p := range c.want {
			if !slices.Contains(ps, p) {
				t.Errorf("%s lacks %v: %v", c.action, p, ps)
			}
		}
		for _, p := range ps {
			if p.Verb != "get" && p.Resource != "pods/exec" {
				t.Errorf("%s needs more than reads and exec: %v", c.action, p)
			}
		}
	}
	if !slices.Contains(engine.AllActions, engine.ActionConsole) || !slices.Contains(engine.AllActions, engine.ActionLogs) {
		t.Errorf("engine.AllActions = %v lacks console or logs", engine.AllActions)
	}
}

func TestRequiredPermissionsOfEveryAction(t *testing.T) {
	for _, a := range engine.AllActions {
		ps, err := RequiredPermissions(a)
		if err != nil || len(ps) == 0 {
			t.Errorf("%s: %v, %v", a, ps, err)
		}
		// A copy: the caller may not change the table.
		if len(ps) > 0 {
			ps[0].Verb = "changed"
			if again, _ := RequiredPermissions(a); again[0].Verb == "changed" {
				t.Errorf("%s: RequiredPermissions returned the table itself", a)
			}
		}
	}
	if _, err := RequiredPermissions("assign"); err == nil || !strings.Contains(err.Error(), `unknown action "assign"`) {
		t.Errorf("an unknown action: %v", err)
	}
}
