package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Actions a person can take, and the roles that hold them.
const (
	ActionWatch        = "watch" // the dashboard, --once and status
	ActionClaim        = "claim"
	ActionRelease      = "release"
	ActionForceRelease = "force-release"
	ActionReconcile    = "reconcile"
	ActionResize       = "resize"
	ActionApply        = "apply"
	ActionDelete       = "delete"
	ActionConsole      = "console" // a terminal in a member (pods/exec)
	ActionLogs         = "logs"    // a member's container log (pods/log)
)

// Roles maps each role to its actions.
var Roles = map[string][]string{
	"viewer":   {ActionWatch, ActionLogs},
	"operator": {ActionWatch, ActionLogs, ActionClaim, ActionRelease, ActionReconcile, ActionResize, ActionConsole},
	"admin":    {ActionWatch, ActionLogs, ActionClaim, ActionRelease, ActionReconcile, ActionResize, ActionConsole, ActionForceRelease, ActionApply, ActionDelete},
}

// RoleNames lists the roles in order of privilege.
var RoleNames = []string{"viewer", "operator", "admin"}

// RequiredPermissions derives what an action needs from the code that
// performs it: the action runs against a fake clientset seeded with a pool
// that exercises every path (claimed, free, drifted, stopped, missing, failed
// and above-size members, a stale reconciler Lease), and every API call it
// makes is recorded. The dashboard's reads are recorded the same way from the
// Watcher and the Events reader. Exec and log streams cannot run on the fake
// clientset: their permissions are declared next to the code that makes them
// (ConsolePermissions, LogPermissions) and merged in.
func RequiredPermissions(action string) ([]engine.Permission, error) {
	const ns, pool = "rbac", "p"
	client := fake.NewClientset(seedObjects(ns, pool, action != ActionDelete)...)
	now := func() time.Time { return seedTime.Add(2 * time.Hour) }
	extra := map[engine.Permission]bool{}
	eng := &engine.Engine{
		Cluster: NewCluster(client, ns), Namespace: ns, Now: now,
		Audit: (&Auditor{Client: client, Namespace: ns, Now: now}).Record,
		Authorize: func(_ context.Context, p engine.Permission) error {
			extra[p] = true
			return nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := seedSpec(6)
	switch action {
	case ActionWatch:
		w := NewWatcher(client, ns)
		if err := w.Start(ctx); err != nil {
			return nil, err
		}
		if !w.WaitForSync(ctx) {
			return nil, fmt.Errorf("derive %s: informers did not sync", action)
		}
		if _, err := (&Events{Client: client}).Events(ctx, ns, "Pod", pool+"-1"); err != nil {
			return nil, err
		}
	case ActionClaim:
		_, _ = eng.Claim(ctx, pool, "bob@example.com")
	case ActionRelease:
		_, _ = eng.Release(ctx, pool, pool+"-1", "alice@example.com", false)
	case ActionForceRelease:
		_, _ = eng.Release(ctx, pool, pool+"-1", "", true)
	case ActionReconcile:
		_, _ = eng.Reconcile(ctx, pool)
	case ActionResize:
		_, _ = eng.Resize(ctx, pool, 2)
	case ActionApply:
		spec.Image = "registry.example/desktop:3"
		_, _ = eng.Apply(ctx, pool, spec)
		_, _ = eng.Apply(ctx, "q", spec) // a new pool too
	case ActionDelete:
		_ = eng.Delete(ctx, pool)
	case ActionConsole:
		_, _ = CheckPod(ctx, client, ns, pool+"-1")
		for _, p := range ConsolePermissions {
			extra[p] = true
		}
	case ActionLogs:
		if rc, err := (&Logs{Client: client}).Stream(ctx, ns, pool+"-1", false); err == nil {
			_ = rc.Close()
		}
		for _, p := range LogPermissions {
			extra[p] = true
		}
	default:
		return nil, fmt.Errorf("unknown action %q (one of %s)", action, strings.Join(allActions(), ", "))
	}
	cancel()
	set := map[engine.Permission]bool{}
	for p := range extra {
		set[p] = true
	}
	for _, a := range client.Actions() {
		p, ok := permissionOf(a)
		if ok {
			set[p] = true
		}
	}
	return sortedPermissions(set), nil
}

func allActions() []string {
	return []string{ActionWatch, ActionLogs, ActionClaim, ActionRelease, ActionForceRelease, ActionReconcile, ActionResize, ActionConsole, ActionApply, ActionDelete}
}

func permissionOf(a k8stesting.Action) (engine.Permission, bool) {
	res := a.GetResource()
	if res.Resource == "" {
		return engine.Permission{}, false
	}
	r := res.Resource
	if sub := a.GetSubresource(); sub != "" {
		r += "/" + sub
	}
	return engine.Permission{Group: res.Group, Resource: r, Verb: a.GetVerb()}, true
}

// sortedPermissions returns a set of permissions sorted by group, resource
// and verb.
func sortedPermissions(set map[engine.Permission]bool) []engine.Permission {
	ps := make([]engine.Permission, 0, len(set))
	for p := range set {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		return a.Verb < b.Verb
	})
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
var ReconcilerActions = []string{ActionWatch, ActionReconcile}

// ActionPermissions is the union of the actions' permissions, sorted.
func ActionPermissions(actions ...string) ([]engine.Permission, error) {
	set := map[engine.Permission]bool{}
	for _, a := range actions {
		ps, err := RequiredPermissions(a)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
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

var seedTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func seedSpec(size int) engine.Spec {
	s := engine.Spec{Image: "registry.example/desktop:2", Size: size}
	s.Default()
	return s
}

// seedObjects is a pool that takes every path of the operations: p-1 claimed
// by alice, p-2 free and Ready, p-3 drifted, p-4 stopped under a stale
// reconciler Lease, p-5 missing, p-6 failed, p-7 above the size.
func seedObjects(ns, pool string, withClaim bool) []runtime.Object {
	spec := seedSpec(6)
	old := spec
	old.Image = "registry.example/desktop:1"
	cm := engine.BuildConfigMap(ns, pool, spec)
	cm.ResourceVersion = "1"
	objs := []runtime.Object{cm}
	ready := func(p *corev1.Pod) *corev1.Pod {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return p
	}
	for _, n := range []int{1, 2, 6, 7} {
		objs = append(objs, ready(engine.BuildPod(ns, pool, n, spec)), engine.BuildPVC(ns, pool, n, spec))
	}
	objs = append(objs, ready(engine.BuildPod(ns, pool, 3, old)), engine.BuildPVC(ns, pool, 3, old), engine.BuildPVC(ns, pool, 4, spec))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Name == engine.MemberName(pool, 6) {
			p.Status.Phase = corev1.PodFailed
		}
	}
	stale := engine.ReconcilerLease(ns, pool, engine.MemberName(pool, 4), seedTime)
	stale.ResourceVersion = "1"
	objs = append(objs, stale)
	if withClaim {
		l := engine.ClaimLease(ns, pool, engine.MemberName(pool, 1), "alice@example.com", seedTime.Add(90*time.Minute))
		l.ResourceVersion = "1"
		objs = append(objs, l)
	}
	objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: engine.ConsoleServiceName(engine.MemberName(pool, 1)), Namespace: ns}})
	return objs
}
