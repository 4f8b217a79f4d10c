package permderive

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// protectionDerivations are the paths of a pool's PodDisruptionBudget and
// of the claim marks that the scenarios of derivations do not take: a
// budget changed by hand (put back), a pool deleted with its budget, a
// claim of a free member that has a Pod (marked).
var protectionDerivations = map[engine.Action][]scenario{
	engine.ActionClaim: {
		{name: "a free Ready member, marked claimed", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			res, err := env.eng.Claim(ctx, seedPool, bob)
			if err != nil || res.Started || res.Existing {
				return fmt.Errorf("claim of a Ready member: %+v, %v; want a new claim of a started member", res, err)
			}
			pod, err := env.client.CoreV1().Pods(seedNS).Get(ctx, res.Member, metav1.GetOptions{})
			if err != nil || !engine.ClaimMarked(pod) {
				return fmt.Errorf("the claimed member's Pod is not marked claimed (%v)", err)
			}
			return nil
		}},
	},
	engine.ActionReconcile: {budgetChanged(func(ctx context.Context, env *deriveEnv) (*engine.ProtectionView, error) {
		res, _ := env.eng.Reconcile(ctx, seedPool)
		return res.Protection, nil
	})},
	engine.ActionResize: {budgetChanged(func(ctx context.Context, env *deriveEnv) (*engine.ProtectionView, error) {
		res, _ := env.eng.Resize(ctx, seedPool, 7)
		return res.Protection, nil
	})},
	engine.ActionApply: {budgetChanged(func(ctx context.Context, env *deriveEnv) (*engine.ProtectionView, error) {
		res, _ := env.eng.Apply(ctx, seedPool, seedSpec(6))
		return res.Reconcile.Protection, nil
	})},
	engine.ActionDelete: {
		{name: "a pool with its budget", at: usual, act: func(ctx context.Context, env *deriveEnv) error {
			if _, err := env.client.PolicyV1().PodDisruptionBudgets(seedNS).Create(ctx, engine.BuildDisruptionBudget(seedNS, seedPool), metav1.CreateOptions{}); err != nil {
				return err
			}
			env.client.ClearActions()
			if _, err := env.eng.Delete(ctx, seedPool); err != nil {
				return err
			}
			if _, err := env.client.PolicyV1().PodDisruptionBudgets(seedNS).Get(ctx, engine.DisruptionBudgetName(seedPool), metav1.GetOptions{}); err == nil {
				return fmt.Errorf("delete left the pool's PodDisruptionBudget")
			}
			return nil
		}},
	},
}

// budgetChanged is the scenario of an action whose reconcile finds the
// pool's budget changed by hand and puts it back.
func budgetChanged(run func(ctx context.Context, env *deriveEnv) (*engine.ProtectionView, error)) scenario {
	return scenario{name: "a budget changed by hand, put back", withClaim: true, at: usual, act: func(ctx context.Context, env *deriveEnv) error {
		pdb := engine.BuildDisruptionBudget(seedNS, seedPool)
		one := intstr.FromInt32(1)
		pdb.Spec.MaxUnavailable = &one
		pdb.ResourceVersion = "1"
		if err := env.client.Tracker().Add(pdb); err != nil {
			return err
		}
		env.client.ClearActions()
		p, err := run(ctx, env)
		if err != nil {
			return err
		}
		if p == nil || p.Detail != "put back" {
			return fmt.Errorf("a changed budget: %+v; want it put back", p)
		}
		got, err := env.client.PolicyV1().PodDisruptionBudgets(seedNS).Get(ctx, engine.DisruptionBudgetName(seedPool), metav1.GetOptions{})
		if err != nil || got.Spec.MaxUnavailable == nil || got.Spec.MaxUnavailable.IntValue() != 0 {
			return fmt.Errorf("the budget was not put back: %+v, %v", got, err)
		}
		return nil
	}}
}

func init() {
	for a, scs := range protectionDerivations {
		derivations[a] = append(derivations[a], scs...)
	}
}
