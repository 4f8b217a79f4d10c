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
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
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
// of the API calls it made, sorted. An action whose paths one pool cannot
// reach runs once per scenario, each on a fresh clientset, and the calls of
// all are merged: a claim takes a free stopped member, renews the caller's
// expired claim, and gives back a member it won when a concurrent claim of
// the same identity came first; a resize shrinks the pool and grows it. A
// scenario that no longer takes its path is an error, so that the table
// never silently loses the permissions of a path. The dashboard's reads are
// recorded from the Watcher and the Events reader. Exec and log streams
// cannot run on the fake clientset: their permissions are declared next to
// the code that makes them (kube.ConsolePermissions, kube.LogPermissions)
// and merged in. The calls an action makes but does without
// (kube.OptionalPermissions: the nodes) are left out.
func Derive(action engine.Action) ([]engine.Permission, error) {
	if _, err := engine.ParseAction(string(action)); err != nil {
		return nil, err
	}
	scenarios := derivations[action]
	if len(scenarios) == 0 {
		return nil, fmt.Errorf("no derivation for action %q", action)
	}
	set := map[engine.Permission]bool{}
	for _, sc := range scenarios {
		if err := sc.run(set); err != nil {
			return nil, fmt.Errorf("derive %s (%s): %w", action, sc.name, err)
		}
	}
	ps := make([]engine.Permission, 0, len(set))
	for p := range set {
		ps = append(ps, p)
	}
	engine.SortPermissions(ps)
	return ps, nil
}

const (
	seedNS   = "rbac"
	seedPool = "p"
	alice    = "alice@example.com"
	bob      = "bob@example.com"
)

// deriveEnv is one scenario's fake clientset and the engine on it.
type deriveEnv struct {
	client *fake.Clientset
	eng    *engine.Engine
	// extra collects permissions asked of Authorize and declared ones.
	extra map[engine.Permission]bool
}

// scenario is one run of an action: seed says what the fake holds (the pool
// of seedObjects, with or without alice's claim), at says the engine's
// clock, and act performs the action and reports a path it did not take.
type scenario struct {
	name      string
	withClaim bool
	// isolated seeds the pool isolated, with its NetworkPolicy changed by
	// hand (so that a reconcile puts it back).
	isolated bool
	at       time.Duration // after seedTime
	act      func(ctx context.Context, env *deriveEnv) error
}

func (sc scenario) run(set map[engine.Permission]bool) error {
	client := fake.NewClientset(seedObjects(seedNS, seedPool, sc.withClaim, sc.isolated)...)
	now := func() time.Time { return seedTime.Add(sc.at) }
	env := &deriveEnv{client: client, extra: map[engine.Permission]bool{}}
	env.eng = &engine.Engine{
		Cluster: kube.NewCluster(client, seedNS), Namespace: seedNS, Now: now,
		Audit: (&kube.Auditor{Client: client, Namespace: seedNS, Now: now}).Record,
		Authorize: func(_ context.Context, p engine.Permission) error {
			env.extra[p] = true
			return nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sc.act(ctx, env); err != nil {
		return err
	}
	cancel()
	for p := range env.extra {
		set[p] = true
	}
	for _, a := range client.Actions() {
		if p, ok := permissionOf(a); ok && !slices.Contains(kube.OptionalPermissions, p) {
			set[p] = true
		}
	}
	return nil
}

// The resources a scenario checks in the fake's store (reads of the store
// are not recorded as calls).
var (
	podsResource     = corev1.SchemeGroupVersion.WithResource("pods")
	leasesResource   = coordinationv1.SchemeGroupVersion.WithResource("leases")
	policiesResource = networkingv1.SchemeGroupVersion.WithResource("networkpolicies")
)

// usual is the clock of most scenarios: alice's claim is fresh, the
// reconciler Lease on p-4 stale.
const usual = 2 * time.Hour

// derivations are the scenarios of each action.
var derivations = map[engine.Action][]scenario{
	engine.ActionWatch: {{name: "the dashboard's informers and events", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
		w := kube.NewWatcher(env.client, seedNS)
		if err := w.Start(ctx); err != nil {
			return err
		}
		if !w.WaitForSync(ctx) {
			return fmt.Errorf("informers did not sync")
		}
		// An informer watches after its first list has synced: wait for
		// the four watches, or the table would depend on timing.
		if err := waitForWatches(ctx, env.client, 4); err != nil {
			return err
		}
		_, err := (&kube.Events{Client: env.client}).Events(ctx, seedNS, "Pod", seedPool+"-1")
		return err
	}}},
	engine.ActionLogs: {{name: "a log stream", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
		if rc, err := (&kube.Logs{Client: env.client}).Stream(ctx, seedNS, seedPool+"-1", false); err == nil {
			_ = rc.Close()
		}
		for _, p := range kube.LogPermissions {
			env.extra[p] = true
		}
		return nil
	}}},
	engine.ActionConsole: {{name: "a console session", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
		_, _ = kube.CheckPod(ctx, env.client, seedNS, seedPool+"-1")
		for _, p := range kube.ConsolePermissions {
			env.extra[p] = true
		}
		return nil
	}}},
	engine.ActionClaim: {
		{name: "a free stopped member, started", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			// The pool's one free member, stopped: a claim starts it.
			if err := env.client.CoreV1().Pods(seedNS).Delete(ctx, engine.MemberName(seedPool, 2), metav1.DeleteOptions{}); err != nil {
				return err
			}
			env.client.ClearActions()
			res, err := env.eng.Claim(ctx, seedPool, bob)
			if err != nil || !res.Started || res.Existing {
				return fmt.Errorf("claim of a stopped member: %+v, %v; want a new claim that started it", res, err)
			}
			for _, p := range engine.StartRacePermissions {
				env.extra[p] = true
			}
			return nil
		}},
		{name: "the caller's expired claim, renewed", withClaim: true, at: 4 * time.Hour, act: func(ctx context.Context, env *deriveEnv) error {
			res, err := env.eng.Claim(ctx, seedPool, alice)
			if err != nil || !res.Renewed {
				return fmt.Errorf("claim by the holder of an expired claim: %+v, %v; want it renewed", res, err)
			}
			return nil
		}},
		{name: "a duplicate given back", withClaim: false, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			// p-1 is stopped, so the claim tries p-2 (Ready) first; the
			// same identity's claim on p-1 lands while this one wins p-2.
			// Created alike (the fake stamps neither time nor
			// resourceVersion), the Lease names order them, so p-1 is the
			// earlier claim and p-2 is given back.
			if err := env.client.CoreV1().Pods(seedNS).Delete(ctx, engine.MemberName(seedPool, 1), metav1.DeleteOptions{}); err != nil {
				return err
			}
			env.client.ClearActions()
			env.client.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
				l, ok := a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease)
				if !ok || l.Name != engine.LeaseName(engine.MemberName(seedPool, 2)) {
					return false, nil, nil
				}
				other := engine.ClaimLease(seedNS, seedPool, engine.MemberName(seedPool, 1), bob, seedTime.Add(usual))
				if err := env.client.Tracker().Add(other); err != nil {
					return true, nil, err
				}
				return false, nil, nil
			})
			res, err := env.eng.Claim(ctx, seedPool, bob)
			if err != nil || res.Member != engine.MemberName(seedPool, 1) || !res.Existing {
				return fmt.Errorf("claim racing a claim of the same identity: %+v, %v; want p-1, the earlier claim", res, err)
			}
			if _, gerr := env.client.Tracker().Get(leasesResource, seedNS, engine.LeaseName(engine.MemberName(seedPool, 2))); gerr == nil {
				return fmt.Errorf("the duplicate claim on p-2 was not given back")
			}
			return nil
		}},
	},
	engine.ActionRelease: {{name: "the holder's release", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
		_, _ = env.eng.Release(ctx, seedPool, seedPool+"-1", alice)
		return nil
	}}},
	engine.ActionForceRelease: {{name: "another's claim", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
		_, _ = env.eng.ForceRelease(ctx, seedPool, seedPool+"-1")
		return nil
	}}},
	engine.ActionReconcile: {{name: "every kind of member", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
		_, _ = env.eng.Reconcile(ctx, seedPool)
		for _, p := range engine.StartRacePermissions {
			env.extra[p] = true
		}
		return nil
	}}},
	engine.ActionResize: {
		{name: "down", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			_, _ = env.eng.Resize(ctx, seedPool, 2)
			return nil
		}},
		{name: "up", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			_, _ = env.eng.Resize(ctx, seedPool, 8)
			for _, n := range []int{5, 8} {
				if _, err := env.client.Tracker().Get(podsResource, seedNS, engine.MemberName(seedPool, n)); err != nil {
					return fmt.Errorf("resize up did not create member %d: %v", n, err)
				}
			}
			// Its reconcile starts a claimed stopped member as any does.
			for _, p := range engine.StartRacePermissions {
				env.extra[p] = true
			}
			return nil
		}},
	},
	engine.ActionApply: {{name: "a changed pool and a new one", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
		spec := seedSpec(6)
		spec.Image = "registry.example/desktop:3"
		_, _ = env.eng.Apply(ctx, seedPool, spec)
		_, _ = env.eng.Apply(ctx, "q", spec) // a new pool too
		// Its reconcile starts a claimed stopped member as any does.
		for _, p := range engine.StartRacePermissions {
			env.extra[p] = true
		}
		return nil
	}}},
	engine.ActionDelete: {{name: "a pool without claims", withClaim: false, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
		_, _ = env.eng.Delete(ctx, seedPool)
		return nil
	}}},
}

// waitForWatches polls the recorded calls until n watches of pool objects
// were made or ctx ends.
func waitForWatches(ctx context.Context, client *fake.Clientset, n int) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		seen := 0
		for _, a := range client.Actions() {
			// The optional node informer's watch is not one of them.
			if p, ok := permissionOf(a); ok && p.Verb == "watch" && !slices.Contains(kube.OptionalPermissions, p) {
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

// Table derives the permissions of every action, and what each needs
// beyond them for an isolated pool.
func Table() (plain, isolated map[engine.Action][]engine.Permission, err error) {
	plain, isolated = map[engine.Action][]engine.Permission{}, map[engine.Action][]engine.Permission{}
	for _, a := range engine.AllActions {
		ps, err := Derive(a)
		if err != nil {
			return nil, nil, fmt.Errorf("derive %s: %w", a, err)
		}
		plain[a] = ps
		if ps, err = DeriveIsolated(a); err != nil {
			return nil, nil, fmt.Errorf("derive %s: %w", a, err)
		}
		if len(ps) > 0 {
			isolated[a] = ps
		}
	}
	return plain, isolated, nil
}

// Generated is the path of the generated table, relative to kube's directory.
const Generated = "permissions_gen.go"

// Source derives every action's permissions and returns them as kube's Go
// source file permissions_gen.go, formatted.
func Source() ([]byte, error) {
	t, iso, err := Table()
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
	b.WriteString(`}

// isolatedPermissions is what each action needs beyond actionPermissions
// for an isolated pool (IsolatedPermissions): its NetworkPolicy.
var isolatedPermissions = map[engine.Action][]engine.Permission{
`)
	for _, a := range engine.AllActions {
		if len(iso[a]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\t%s: {\n", constName(a))
		for _, p := range iso[a] {
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
// by alice (its PVC without a source record), p-2 free and Ready, p-3 drifted, p-4 stopped under a stale
// reconciler Lease, p-5 missing, p-6 failed, p-7 above the size. An
// isolated pool's NetworkPolicy is there, opened by hand.
func seedObjects(ns, pool string, withClaim, isolated bool) []runtime.Object {
	spec := seedSpec(6)
	spec.Isolate = isolated
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
		pvc := engine.BuildPVC(ns, pool, n, spec)
		if n == 1 {
			// alice's desktop was built by an earlier release, which
			// recorded no source on its PVC: a reconcile records it.
			delete(pvc.Annotations, engine.AnnotationSource)
		}
		objs = append(objs, ready(engine.BuildPod(ns, pool, n, spec)), pvc)
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
	if isolated {
		np := engine.BuildNetworkPolicy(ns, pool, spec)
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}} // opened by hand
		np.ResourceVersion = "1"
		objs = append(objs, np)
	}
	objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: engine.ConsoleServiceName(engine.MemberName(pool, 1)), Namespace: ns}})
	return objs
}
