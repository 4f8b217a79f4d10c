package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Access asks the API server what the caller may do in a namespace.
type Access struct {
	Client    kubernetes.Interface
	Namespace string
}

// Allowed asks one SelfSubjectAccessReview.
func (a *Access) Allowed(ctx context.Context, p engine.Permission) (bool, string, error) {
	res, sub := p.Resource, ""
	if i := strings.IndexByte(res, '/'); i >= 0 {
		res, sub = res[:i], res[i+1:]
	}
	r, err := a.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: a.Namespace, Verb: p.Verb, Group: p.Group, Resource: res, Subresource: sub,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", MapError(err)
	}
	return r.Status.Allowed, r.Status.Reason, nil
}

// Authorize implements engine.Engine.Authorize: ErrForbidden unless allowed.
func (a *Access) Authorize(ctx context.Context, p engine.Permission) error {
	ok, reason, err := a.Allowed(ctx, p)
	if err != nil {
		return err
	}
	if !ok {
		msg := fmt.Sprintf("the API server does not allow %q in namespace %s", p.String(), a.Namespace)
		if reason != "" {
			msg += " (" + reason + ")"
		}
		return &apiError{sentinel: engine.ErrForbidden, err: fmt.Errorf("%s", msg)}
	}
	return nil
}

// ReviewConcurrency bounds the SelfSubjectAccessReviews Capabilities has in
// flight at once.
const ReviewConcurrency = 8

// Capabilities checks every permission of each action (RequiredPermissions,
// a table derived at build time), but for the claim protection's
// (ProtectionPermission): without them an action still runs, and says that
// claimed desktops are not protected from eviction. Each distinct permission is asked once,
// with up to ReviewConcurrency SelfSubjectAccessReviews in flight; the first
// error ends the others and is returned.
func (a *Access) Capabilities(ctx context.Context, actions []engine.Action) ([]engine.Capability, error) {
	need := make([][]engine.Permission, len(actions))
	var distinct []engine.Permission
	seen := map[engine.Permission]bool{}
	for i, act := range actions {
		perms, err := RequiredPermissions(act)
		if err != nil {
			return nil, err
		}
		perms = slices.DeleteFunc(perms, ProtectionPermission)
		need[i] = perms
		for _, p := range perms {
			if !seen[p] {
				seen[p] = true
				distinct = append(distinct, p)
			}
		}
	}
	allowed := make([]bool, len(distinct))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(ReviewConcurrency)
	for i, p := range distinct {
		g.Go(func() error {
			ok, _, err := a.Allowed(gctx, p)
			allowed[i] = ok
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	answer := make(map[engine.Permission]bool, len(distinct))
	for i, p := range distinct {
		answer[p] = allowed[i]
	}
	out := make([]engine.Capability, 0, len(actions))
	for i, act := range actions {
		c := engine.Capability{Action: act, Allowed: true}
		for _, p := range need[i] {
			if !answer[p] {
				p := p
				c.Allowed, c.Missing = false, &p
				break
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// WhoAmI returns the caller's user name as the API server sees it
// (SelfSubjectReview).
func WhoAmI(ctx context.Context, client kubernetes.Interface) (string, error) {
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", MapError(err)
	}
	return r.Status.UserInfo.Username, nil
}

// ProtectionPermission reports whether p serves only the protection of
// claimed desktops from eviction: the pools' PodDisruptionBudgets and the
// claim marks' patch of a Pod. An identity without them keeps every action
// (apply warns once, the status says the desktops are not protected), so
// the dashboard does not ask for them before offering one; the roles hold
// them.
func ProtectionPermission(p engine.Permission) bool {
	return p.Group == "policy" && p.Resource == "poddisruptionbudgets" ||
		p.Group == "" && p.Resource == "pods" && p.Verb == "patch"
}
