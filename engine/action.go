package engine

import (
	"fmt"
	"strings"
)

// Action is one thing a person does with a pool, in one vocabulary for the
// audit Events (AuditEntry.Action), the RBAC roles and the permissions each
// action needs (kube.Roles, kube.RequiredPermissions), and the dashboard's
// capability gating and action requests.
type Action string

// The actions. The dashboard's claim (key a) is a claim on behalf of
// someone else; a forced release is a release of another identity's claim.
const (
	ActionWatch        Action = "watch" // the dashboard, --once and status
	ActionLogs         Action = "logs"  // a member's container log (pods/log)
	ActionClaim        Action = "claim"
	ActionRelease      Action = "release"
	ActionForceRelease Action = "force-release"
	ActionReconcile    Action = "reconcile"
	ActionResize       Action = "resize"
	ActionConsole      Action = "console" // a terminal in a member (pods/exec)
	ActionApply        Action = "apply"
	ActionDelete       Action = "delete"
)

// AllActions lists every action, from the reads to the admin's writes.
var AllActions = []Action{
	ActionWatch, ActionLogs, ActionClaim, ActionRelease, ActionForceRelease,
	ActionReconcile, ActionResize, ActionConsole, ActionApply, ActionDelete,
}

func (a Action) String() string { return string(a) }

// Known reports whether a is one of AllActions.
func (a Action) Known() bool {
	for _, k := range AllActions {
		if a == k {
			return true
		}
	}
	return false
}

// ParseAction returns the action named s.
func ParseAction(s string) (Action, error) {
	if a := Action(s); a.Known() {
		return a, nil
	}
	names := make([]string, len(AllActions))
	for i, a := range AllActions {
		names[i] = string(a)
	}
	return "", fmt.Errorf("unknown action %q (one of %s)", s, strings.Join(names, ", "))
}
