package kube

import (
	"os"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// readmePermissionRow is an action's row of the permission table of
// docs/permissions.md:
// the action, then each resource with its verbs, in the table's order.
func readmePermissionRow(t *testing.T, a engine.Action) string {
	t.Helper()
	ps, err := RequiredPermissions(a)
	if err != nil {
		t.Fatal(err)
	}
	verbs := map[string][]string{}
	var order []string
	for _, p := range ps {
		if _, ok := verbs[p.Resource]; !ok {
			order = append(order, p.Resource)
		}
		verbs[p.Resource] = append(verbs[p.Resource], p.Verb)
	}
	parts := make([]string, 0, len(order))
	for _, r := range order {
		parts = append(parts, r+": "+strings.Join(verbs[r], ", "))
	}
	return "| `" + string(a) + "` | " + strings.Join(parts, "; ") + " |"
}

// TestREADMEPermissionTable: the permission table of docs/permissions.md is
// the derived one, and the page says that force-release is a verb outside the
// contract's list.
func TestREADMEPermissionTable(t *testing.T) {
	b, err := os.ReadFile("../docs/permissions.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, a := range engine.AllActions {
		if row := readmePermissionRow(t, a); !strings.Contains(readme, "\n"+row+"\n") {
			t.Errorf("docs/permissions.md's permission table lacks the derived row of %s (or it is stale); write:\n%s", a, row)
		}
	}
	for _, a := range engine.AllActions {
		ps, err := IsolatedPermissions(a)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 0 {
			if strings.Contains(readme, "\n| `"+string(a)+"` | networkpolicies: ") {
				t.Errorf("docs/permissions.md says %s needs networkpolicies on an isolated pool; it does not", a)
			}
			continue
		}
		verbs := make([]string, len(ps))
		for i, p := range ps {
			verbs[i] = p.Verb
		}
		if row := "| `" + string(a) + "` | networkpolicies: " + strings.Join(verbs, ", ") + " |"; !strings.Contains(readme, "\n"+row+"\n") {
			t.Errorf("docs/permissions.md's table of isolated pools lacks the derived row of %s (or it is stale); write:\n%s", a, row)
		}
	}
	if !strings.Contains(readme, "**`force-release` on Leases**, a custom verb") {
		t.Error("docs/permissions.md does not say that force-release is a custom verb beyond the contract's list")
	}
}
