package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/ctpool-tui/ctpool-tui/kube"
)

func newRBACCmd(e *env) *cobra.Command {
	var role, subject string
	var clusterWide bool
	c := &cobra.Command{
		Use:   "rbac --role viewer|operator|admin",
		Short: "Print a Role and RoleBinding that cover exactly what a role needs",
		Long: `Print a Role and a RoleBinding (YAML) that cover exactly what a role needs in
the namespace:

  viewer    the dashboard (read-only and wall display), --once and status
  operator  viewer plus claim, release, reconcile and resize
  admin     operator plus force-release, apply and delete

The rules are derived from the API calls the actions really make, so they
stay in step with the code. Pipe the output to kubectl apply -f -.

--cluster-wide prints a ClusterRole and ClusterRoleBinding (named
ctpool-tui-ROLE-cluster) with the same rules in every namespace: what the
fleet view (ctpool-tui -A) needs. An identity with the Role in a few
namespaces only uses --namespaces a,b,c instead.`,
		Example: `  ctpool-tui rbac --role operator -n vdi --subject User:alice@example.com | kubectl apply -f -
  ctpool-tui rbac --role viewer --subject Group:vdi-wall
  ctpool-tui rbac --role viewer --cluster-wide --subject Group:vdi-oncall`,
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
			var objs []any
			if clusterWide {
				r, b, err := kube.ClusterRoleObjects(role, ns, subject)
				if err != nil {
					return usageErr("%v", err)
				}
				objs = []any{r, b}
			} else {
				r, b, err := kube.RoleObjects(role, ns, subject)
				if err != nil {
					return usageErr("%v", err)
				}
				objs = []any{r, b}
			}
			for _, obj := range objs {
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
	c.Flags().BoolVar(&clusterWide, "cluster-wide", false, "a ClusterRole and ClusterRoleBinding: the role in every namespace (for -A)")
	_ = c.MarkFlagRequired("role")
	return c
}
