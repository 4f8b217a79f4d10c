// Package permderive derives the permissions each action needs from the code
// that performs it: the action runs against client-go's fake clientset and
// every API call it makes is recorded. It is run at build time (go generate
// ./kube writes kube's permission table with it) and by the test that checks
// the table, never by the program: the fake clientset stays out of the
// binary.
package permderive

import (
	"bytes"
	"context"
	"fmt"
	"go/format"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// Derive runs action against a fake clientset seeded with a pool that
// exercises every path (claimed, free, drifted, stopped, missing, failed and
// above-size members, a stale reconciler Lease) and returns the permissions
// of the API calls it made, sorted. The dashboard's reads are recorded from
// the Watcher and the Events reader. Exec and log streams cannot run on the
// fake clientset: their permissions are declared next to the code that makes
// them (kube.ConsolePermissions, kube.LogPermissions) and merged in.
func Derive(action engine.Action) ([]engine.Permission, error) {
	const ns, pool = "rbac", "p"
	client := fake.NewClientset(seedObjects(ns, pool, action != engine.ActionDelete)...)
	now := func() time.Time { return seedTime.Add(2 * time.Hour) }
	extra := map[engine.Permission]bool{}
	eng := &engine.Engine{
		Cluster: kube.NewCluster(client, ns), Namespace: ns, Now: now,
		Audit: (&kube.Auditor{Client: client, Namespace: ns, Now: now}).Record,
		Authorize: func(_ context.Context, p engine.Permission) error {
			extra[p] = true
			return nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := seedSpec(6)
	switch action {
	case engine.ActionWatch:
		w := kube.NewWatcher(client, ns)
		if err := w.Start(ctx); err != nil {
			return nil, err
		}
		if !w.WaitForSync(ctx) {
			return nil, fmt.Errorf("derive %s: informers did not sync", action)
		}
		// An informer watches after its first list has synced: wait for
		// the four watches, or the table would depend on timing.
		if err := waitForWatches(ctx, client, 4); err != nil {
			return nil, fmt.Errorf("derive %s: %w", action, err)
		}
		if _, err := (&kube.Events{Client: client}).Events(ctx, ns, "Pod", pool+"-1"); err != nil {
			return nil, err
		}
	case engine.ActionClaim:
		// The pool's one free member, stopped: a claim starts it.
		if err := client.CoreV1().Pods(ns).Delete(ctx, engine.MemberName(pool, 2), metav1.DeleteOptions{}); err != nil {
			return nil, err
		}
		client.ClearActions()
		_, _ = eng.Claim(ctx, pool, "bob@example.com")
		for _, p := range engine.StartRacePermissions {
			extra[p] = true
		}
	case engine.ActionRelease:
		_, _ = eng.Release(ctx, pool, pool+"-1", "alice@example.com")
	case engine.ActionForceRelease:
		_, _ = eng.ForceRelease(ctx, pool, pool+"-1")
	case engine.ActionReconcile:
		_, _ = eng.Reconcile(ctx, pool)
		for _, p := range engine.StartRacePermissions {
			extra[p] = true
		}
	case engine.ActionResize:
		_, _ = eng.Resize(ctx, pool, 2)
	case engine.ActionApply:
		spec.Image = "registry.example/desktop:3"
		_, _ = eng.Apply(ctx, pool, spec)
		_, _ = eng.Apply(ctx, "q", spec) // a new pool too
	case engine.ActionDelete:
		_, _ = eng.Delete(ctx, pool)
	case engine.ActionConsole:
		_, _ = kube.CheckPod(ctx, client, ns, pool+"-1")
		for _, p := range kube.ConsolePermissions {
			extra[p] = true
		}
	case engine.ActionLogs:
		if rc, err := (&kube.Logs{Client: client}).Stream(ctx, ns, pool+"-1", false); err == nil {
			_ = rc.Close()
		}
		for _, p := range kube.LogPermissions {
			extra[p] = true
		}
	default:
		_, err := engine.ParseAction(string(action))
		if err == nil {
			err = fmt.Errorf("no derivation for action %q", action)
		}
		return nil, err
	}
	cancel()
	set := map[engine.Permission]bool{}
	for p := range extra {
		set[p] = true
	}
	for _, a := range client.Actions() {
		if p, ok := permissionOf(a); ok {
			set[p] = true
		}
	}
	ps := make([]engine.Permission, 0, len(set))
	for p := range set {
		ps = append(ps, p)
	}
	engine.SortPermissions(ps)
	return ps, nil
}

// waitForWatches polls the recorded calls until n watches were made or ctx ends.
func waitForWatches(ctx context.Context, client *fake.Clientset, n int) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		seen := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "watch" {
				seen++
			}
		}
		if seen >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d informers started watching", seen, n)
		case <-t.C:
		}
	}
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

// Table derives the permissions of every action.
func Table() (map[engine.Action][]engine.Permission, error) {
	t := map[engine.Action][]engine.Permission{}
	for _, a := range engine.AllActions {
		ps, err := Derive(a)
		if err != nil {
			return nil, fmt.Errorf("derive %s: %w", a, err)
		}
		t[a] = ps
	}
	return t, nil
}

// Generated is the path of the generated table, relative to kube's directory.
const Generated = "permissions_gen.go"

// Source derives every action's permissions and returns them as kube's Go
// source file permissions_gen.go, formatted.
func Source() ([]byte, error) {
	t, err := Table()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`// Code generated by go run ./internal/permgen; DO NOT EDIT.

package kube

import "github.com/ctpool-tui/ctpool-tui/engine"

// actionPermissions is what each action needs (RequiredPermissions),
// derived from the API calls the code that performs it makes
// (kube/internal/permderive). Regenerate it with go generate ./kube or make
// generate; TestPermissionTableUpToDate fails while it is stale.
var actionPermissions = map[engine.Action][]engine.Permission{
`)
	for _, a := range engine.AllActions {
		fmt.Fprintf(&b, "\t%s: {\n", constName(a))
		for _, p := range t[a] {
			fmt.Fprintf(&b, "\t\t{Group: %q, Resource: %q, Verb: %q},\n", p.Group, p.Resource, p.Verb)
		}
		b.WriteString("\t},\n")
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

// constName is the engine constant of an action: "force-release" is
// engine.ActionForceRelease.
func constName(a engine.Action) string {
	var b strings.Builder
	b.WriteString("engine.Action")
	up := true
	for _, r := range string(a) {
		if r == '-' {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
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
