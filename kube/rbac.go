package kube

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

//go:generate go run ./internal/permgen -o permissions_gen.go

// Roles maps each role to its actions.
var Roles = map[string][]engine.Action{
	"viewer":   {engine.ActionWatch, engine.ActionLogs},
	"operator": {engine.ActionWatch, engine.ActionLogs, engine.ActionClaim, engine.ActionRelease, engine.ActionReconcile, engine.ActionResize, engine.ActionConsole},
	"admin":    {engine.ActionWatch, engine.ActionLogs, engine.ActionClaim, engine.ActionRelease, engine.ActionReconcile, engine.ActionResize, engine.ActionConsole, engine.ActionForceRelease, engine.ActionApply, engine.ActionDelete},
}

// RoleNames lists the roles in order of privilege.
var RoleNames = []string{"viewer", "operator", "admin"}

// RequiredPermissions is what an action needs, sorted by group, resource and
// verb. The table it reads (permissions_gen.go) is derived at build time
// from the code that performs each action (go generate ./kube; a test
// derives it again and fails when it is stale): the action runs against a
// fake clientset seeded with a pool that exercises every path (claimed,
// free, drifted, stopped, missing, failed and above-size members, a stale
// reconciler Lease), once more for each path one pool cannot reach (a
// claim's renewal and its giving back of a duplicate, a resize up), and
// every API call it makes is recorded. The
// dashboard's reads are recorded the same way from the Watcher and the
// Events reader. Exec and log streams cannot run on the fake clientset:
// their permissions are declared next to the code that makes them
// (ConsolePermissions, LogPermissions) and merged in.
func RequiredPermissions(action engine.Action) ([]engine.Permission, error) {
	if _, err := engine.ParseAction(string(action)); err != nil {
		return nil, err
	}
	ps, ok := actionPermissions[action]
	if !ok {
		return nil, fmt.Errorf("no permissions derived for action %q: run go generate ./kube", action)
	}
	return slices.Clone(ps), nil
}

// IsolatedPermissions is what an action needs beyond RequiredPermissions
// for an isolated pool (its NetworkPolicy), derived the same way; none for
// an action that never touches the policy. The roles hold them
// (ActionPermissions); the dashboard's check of what may be done does not
// ask for them, so that an identity without them keeps every action on the
// pools that are not isolated.
func IsolatedPermissions(action engine.Action) ([]engine.Permission, error) {
	if _, err := engine.ParseAction(string(action)); err != nil {
		return nil, err
	}
	return slices.Clone(isolatedPermissions[action]), nil
}

// sortedPermissions returns a set of permissions sorted by group, resource
// and verb.
func sortedPermissions(set map[engine.Permission]bool) []engine.Permission {
	ps := make([]engine.Permission, 0, len(set))
	for p := range set {
		ps = append(ps, p)
	}
	engine.SortPermissions(ps)
	return ps
}

// RolePermissions is the union of the role's actions' permissions.
func RolePermissions(role string) ([]engine.Permission, error) {
	actions, ok := Roles[role]
	if !ok {
		return nil, fmt.Errorf("unknown role %q (one of %s)", role, strings.Join(RoleNames, ", "))
	}
	return ActionPermissions(actions...)
}

// ReconcilerActions are what `reconcile --all --watch` does: watch the pools
// and reconcile them. Its cluster-wide ClusterRole holds only these, not the
// operator's claims, releases, console and logs.
var ReconcilerActions = []engine.Action{engine.ActionWatch, engine.ActionReconcile}

// ActionPermissions is the union of the actions' permissions, those of
// isolated pools included, sorted.
func ActionPermissions(actions ...engine.Action) ([]engine.Permission, error) {
	set := map[engine.Permission]bool{}
	for _, a := range actions {
		ps, err := RequiredPermissions(a)
		if err != nil {
			return nil, err
		}
		iso, _ := IsolatedPermissions(a)
		for _, p := range append(ps, iso...) {
			set[p] = true
		}
	}
	return sortedPermissions(set), nil
}

// Rules groups permissions into PolicyRules, one per group and resource.
func Rules(ps []engine.Permission) []rbacv1.PolicyRule {
	type key struct{ group, resource string }
	verbs := map[key][]string{}
	var keys []key
	for _, p := range ps {
		k := key{p.Group, p.Resource}
		if _, ok := verbs[k]; !ok {
			keys = append(keys, k)
		}
		verbs[k] = append(verbs[k], p.Verb)
	}
	rules := make([]rbacv1.PolicyRule, 0, len(keys))
	for _, k := range keys {
		v := verbs[k]
		sort.Strings(v)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: v})
	}
	return rules
}

// RoleObjects returns the Role and RoleBinding of a role for a subject
// ("User:alice", "Group:vdi-admins", "ServiceAccount:ns/name" or
// "ServiceAccount:name" in namespace).
func RoleObjects(role, namespace, subject string) (*rbacv1.Role, *rbacv1.RoleBinding, error) {
	ps, err := RolePermissions(role)
	if err != nil {
		return nil, nil, err
	}
	name := "ctpool-tui-" + role
	labels := map[string]string{"app.kubernetes.io/name": "ctpool-tui", "app.kubernetes.io/component": role}
	r := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Rules:      Rules(ps),
	}
	subj, err := parseSubject(subject, namespace)
	if err != nil {
		return nil, nil, err
	}
	b := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{subj},
	}
	return r, b, nil
}

// ClusterRoleObjects returns the ClusterRole and ClusterRoleBinding of a
// role: the same rules as RoleObjects', granted in every namespace, for the
// fleet view (-A). A ServiceAccount subject without a namespace is taken in
// namespace.
func ClusterRoleObjects(role, namespace, subject string) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, error) {
	r, b, err := RoleObjects(role, namespace, subject)
	if err != nil {
		return nil, nil, err
	}
	name := r.Name + "-cluster"
	cr := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: r.Labels},
		Rules:      r.Rules,
	}
	cb := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: b.Labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   b.Subjects,
	}
	return cr, cb, nil
}

func parseSubject(s, namespace string) (rbacv1.Subject, error) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return rbacv1.Subject{}, fmt.Errorf("subject %q: want KIND:NAME (User:alice, Group:admins, ServiceAccount:[ns/]name)", s)
	}
	switch strings.ToLower(kind) {
	case "user":
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}, nil
	case "group":
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}, nil
	case "serviceaccount", "sa":
		ns := namespace
		if a, b, ok := strings.Cut(name, "/"); ok {
			ns, name = a, b
		}
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}, nil
	}
	return rbacv1.Subject{}, fmt.Errorf("subject kind %q: want User, Group or ServiceAccount", kind)
}
