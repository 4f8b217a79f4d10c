package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/ctpool-tui/ctpool-tui/kube"
)

func newRBACCmd(e *env) *cobra.Command {
	var role, subject string
	c := &cobra.Command{
		Use:   "rbac --role viewer|operator|admin",
		Short: "Print a Role and RoleBinding that cover exactly what a role needs",
		Long: `Print a Role and a RoleBinding (YAML) that cover exactly what a role needs in
the namespace:

  viewer    the dashboard (read-only and wall display), --once and status
  operator  viewer plus claim, release, reconcile and resize
  admin     operator plus force-release, apply and delete

The rules are derived from the API calls the actions really make, so they
stay in step with the code. Pipe the output to kubectl apply -f -.`,
		Example: `  ctpool-tui rbac --role operator -n vdi --subject User:alice@example.com | kubectl apply -f -
  ctpool-tui rbac --role viewer --subject Group:vdi-wall`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := e.opts.Namespace()
			if err != nil {
				return opErr(err)
			}
			if _, ok := kube.Roles[role]; !ok {
				return usageErr("--role must be one of viewer, operator, admin (got %q)", role)
			}
			if subject == "" {
				subject = "Group:ctpool-tui-" + role
			}
			r, b, err := kube.RoleObjects(role, ns, subject)
			if err != nil {
				return usageErr("%v", err)
			}
			for _, obj := range []any{r, b} {
				out, err := yaml.Marshal(obj)
				if err != nil {
					return opErr(err)
				}
				fmt.Fprintf(e.stdout, "---\n%s", out)
			}
			return nil
		},
	}
	c.Flags().StringVar(&role, "role", "", "viewer, operator or admin (required)")
	c.Flags().StringVar(&subject, "subject", "", "who gets the role: User:NAME, Group:NAME or ServiceAccount:[NS/]NAME (default Group:ctpool-tui-ROLE)")
	_ = c.MarkFlagRequired("role")
	return c
}
