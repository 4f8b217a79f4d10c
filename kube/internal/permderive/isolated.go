package permderive

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// DeriveIsolated is what action needs beyond Derive's when the pool is
// isolated (its NetworkPolicy): every scenario of the action is run again
// on an isolated pool, with the scenarios only an isolated pool has (a
// policy deleted by hand, a pool un-isolated), and the permissions Derive
// already holds are taken out. Only isolated pools need these.
func DeriveIsolated(action engine.Action) ([]engine.Permission, error) {
	plain, err := Derive(action)
	if err != nil {
		return nil, err
	}
	set := map[engine.Permission]bool{}
	for _, sc := range derivations[action] {
		sc.isolated = true
		sc.name += ", isolated"
		if err := sc.run(set); err != nil {
			return nil, fmt.Errorf("derive %s (%s): %w", action, sc.name, err)
		}
	}
	for _, sc := range isolatedDerivations[action] {
		if err := sc.run(set); err != nil {
			return nil, fmt.Errorf("derive %s (%s): %w", action, sc.name, err)
		}
	}
	for _, p := range plain {
		delete(set, p)
	}
	ps := make([]engine.Permission, 0, len(set))
	for p := range set {
		ps = append(ps, p)
	}
	engine.SortPermissions(ps)
	return ps, nil
}

// isolatedDerivations are the paths only an isolated pool takes, each
// checked: the scenarios of derivations run on an isolated pool too.
var isolatedDerivations = map[engine.Action][]scenario{
	engine.ActionReconcile: {
		{name: "a policy changed by hand, put back", withClaim: true, isolated: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			res, _ := env.eng.Reconcile(ctx, seedPool)
			if res.Isolation == nil || res.Isolation.Detail != "put back" {
				return fmt.Errorf("reconcile of a changed policy: %+v; want it put back", res.Isolation)
			}
			return nil
		}},
		{name: "a policy deleted by hand, created", withClaim: true, isolated: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			if err := env.client.NetworkingV1().NetworkPolicies(seedNS).Delete(ctx, engine.NetworkPolicyName(seedPool), metav1.DeleteOptions{}); err != nil {
				return err
			}
			env.client.ClearActions()
			res, _ := env.eng.Reconcile(ctx, seedPool)
			if res.Isolation == nil || res.Isolation.Detail != "created" {
				return fmt.Errorf("reconcile of a missing policy: %+v; want it created", res.Isolation)
			}
			return nil
		}},
	},
	engine.ActionResize: {
		{name: "a policy deleted by hand, created", withClaim: true, isolated: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			if err := env.client.NetworkingV1().NetworkPolicies(seedNS).Delete(ctx, engine.NetworkPolicyName(seedPool), metav1.DeleteOptions{}); err != nil {
				return err
			}
			env.client.ClearActions()
			res, _ := env.eng.Resize(ctx, seedPool, 7)
			if res.Isolation == nil || res.Isolation.Detail != "created" {
				return fmt.Errorf("resize with its policy missing: %+v; want it created", res.Isolation)
			}
			return nil
		}},
	},
	engine.ActionApply: {
		{name: "an isolated pool changed, its policy put back", withClaim: true, isolated: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			spec := seedSpec(6)
			spec.Isolate = true
			spec.Image = "registry.example/desktop:3"
			res, _ := env.eng.Apply(ctx, seedPool, spec)
			if res.Reconcile.Isolation == nil || res.Reconcile.Isolation.Detail != "put back" {
				return fmt.Errorf("apply of an isolated pool whose policy was changed: %+v; want it put back", res.Reconcile.Isolation)
			}
			return nil
		}},
		{name: "a new isolated pool", withClaim: true, isolated: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			spec := seedSpec(2)
			spec.Isolate = true
			res, _ := env.eng.Apply(ctx, "q", spec)
			if res.Reconcile.Isolation == nil || res.Reconcile.Isolation.Detail != "created" {
				return fmt.Errorf("apply of a new isolated pool: %+v; want its policy created", res.Reconcile.Isolation)
			}
			return nil
		}},
		{name: "a pool un-isolated", withClaim: true, isolated: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			res, _ := env.eng.Apply(ctx, seedPool, seedSpec(6))
			if !res.PolicyRemoved {
				return fmt.Errorf("apply without isolate of an isolated pool: its policy was not removed")
			}
			return nil
		}},
	},
	engine.ActionDelete: {
		{name: "an isolated pool", isolated: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			if _, err := env.eng.Delete(ctx, seedPool); err != nil {
				return err
			}
			if _, err := env.client.Tracker().Get(policiesResource, seedNS, engine.NetworkPolicyName(seedPool)); err == nil {
				return fmt.Errorf("delete of an isolated pool left its policy")
			}
			return nil
		}},
	},
}
