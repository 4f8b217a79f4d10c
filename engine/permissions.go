package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// Permission is one RBAC permission: a verb on a resource of an API group.
type Permission struct {
	Group    string // "" for the core group
	Resource string // plural, e.g. "pods" or "pods/exec"
	Verb     string
}

func (p Permission) String() string {
	if p.Group == "" {
		return p.Verb + " " + p.Resource
	}
	return p.Verb + " " + p.Resource + "." + p.Group
}

// Capability is whether the caller may run one action, and the first
// permission that is missing when not (kube asks the API server; the
// dashboard shows it).
type Capability struct {
	Action  Action
	Allowed bool
	Missing *Permission // nil when allowed, or when the answer names none
}

// MissingText is the missing permission as the API server would name it
// ("force-release leases.coordination.k8s.io"), or "".
func (c Capability) MissingText() string {
	if c.Missing == nil {
		return ""
	}
	return c.Missing.String()
}

// PermForceRelease guards releasing a claim held by another identity. No
// built-in API verb separates a holder's release from a forced one, so the
// engine asks the API server (SelfSubjectAccessReview) for this custom verb
// before a forced release; the admin role grants it, the operator role does
// not.
var PermForceRelease = Permission{Group: "coordination.k8s.io", Resource: "leases", Verb: "force-release"}

// authorize asks e.Authorize, when set, for a guarded permission.
func (e *Engine) authorize(ctx context.Context, p Permission) error {
	if e.Authorize == nil {
		return nil
	}
	if err := e.Authorize(ctx, p); err != nil {
		return fmt.Errorf("%s needs permission %q: %w", p.Verb, p.String(), err)
	}
	return nil
}

// SortPermissions sorts permissions by group, resource and verb.
func SortPermissions(ps []Permission) {
	slices.SortFunc(ps, func(a, b Permission) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
	})
}
