package main

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// completionTimeout bounds every cluster read of a shell completion: a
// completion that waits on an unreachable API server freezes the shell.
const completionTimeout = 3 * time.Second

// setupCompletion makes cobra's completion command usage-checked and wires
// the completions of arguments (pool and member names from the cluster) and
// flags (namespaces from the cluster; contexts, clusters and users from the
// kubeconfig; the fixed choices of -o, --theme, --role, --runtime).
func setupCompletion(root *cobra.Command, e *env) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "completion":
			// Without a shell it prints its help, as before; with an
			// unknown shell it is a usage error, not help and exit 0.
			c.Args = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return unknownCommand(cmd, args[0])
				}
				return nil
			}
			c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
		case "apply", "status", "claim", "delete", "reconcile":
			c.ValidArgsFunction = completeArgs(e, false)
		case "release", "console":
			c.ValidArgsFunction = completeArgs(e, true)
		default:
			if c.ValidArgsFunction == nil {
				c.ValidArgsFunction = cobra.NoFileCompletions
			}
		}
	}
	root.ValidArgsFunction = cobra.NoFileCompletions

	register := func(c *cobra.Command, flag string, f cobra.CompletionFunc) {
		if c == nil || c.Flag(flag) == nil {
			return // a flag of another command set; nothing to complete
		}
		_ = c.RegisterFlagCompletionFunc(flag, f)
	}
	register(root, "namespace", completeNamespaces(e))
	register(root, "namespaces", completeNamespaceList(e))
	register(sub(root, "status"), "namespaces", completeNamespaceList(e))
	register(root, "context", completeKubeconfig(e, "context"))
	register(root, "cluster", completeKubeconfig(e, "cluster"))
	register(root, "user", completeKubeconfig(e, "user"))
	register(root, "output", fixed("table", "wide", "json"))
	register(root, "theme", fixed(themes.Names()...))
	register(sub(root, "status"), "output", fixed("table", "wide", "json", "yaml"))
	register(sub(root, "version"), "output", fixed("text", "json"))
	register(sub(root, "rbac"), "role", fixed("viewer", "operator", "admin"))
	register(sub(root, "apply"), "runtime", fixed("standard", "sandboxd", "cocoon"))
}

func sub(root *cobra.Command, name string) *cobra.Command {
	for _, c := range root.Commands() {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

func fixed(choices ...string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return withPrefix(choices, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeArgs completes POOL as the first argument and, with members,
// MEMBER of that pool as the second; nothing after.
func completeArgs(e *env, members bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch {
		case len(args) == 0:
			return listWith(cmd, e, toComplete, poolNames)
		case len(args) == 1 && members:
			pool := args[0]
			if engine.ValidatePoolName(pool) != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return listWith(cmd, e, toComplete, func(ctx context.Context, cs kubernetes.Interface, ns string) ([]string, error) {
				return memberNames(ctx, cs, ns, pool)
			})
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNamespaceList completes the last namespace of --namespaces a,b,c.
func completeNamespaceList(e *env) cobra.CompletionFunc {
	one := completeNamespaces(e)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		head := ""
		if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
			head, toComplete = toComplete[:i+1], toComplete[i+1:]
		}
		names, dir := one(cmd, args, toComplete)
		for i := range names {
			names[i] = head + names[i]
		}
		return names, dir | cobra.ShellCompDirectiveNoSpace
	}
}

func completeNamespaces(e *env) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return listWith(cmd, e, toComplete, func(ctx context.Context, cs kubernetes.Interface, _ string) ([]string, error) {
			list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			names := make([]string, 0, len(list.Items))
			for _, n := range list.Items {
				names = append(names, n.Name)
			}
			return names, nil
		})
	}
}

// completeKubeconfig lists the kubeconfig's contexts, clusters or users;
// it reads only the kubeconfig files, never the cluster. A name a shell
// cannot take whole (a kubeconfig is hand-written) is left out.
func completeKubeconfig(e *env, what string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		raw, err := e.opts.Flags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			cobra.CompDebugln("kubeconfig: "+err.Error(), false)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		switch what {
		case "context":
			for n := range raw.Contexts {
				if shellSafe(n) {
					names = append(names, n)
				}
			}
		case "cluster":
			for n := range raw.Clusters {
				if shellSafe(n) {
					names = append(names, n)
				}
			}
		case "user":
			for n := range raw.AuthInfos {
				if shellSafe(n) {
					names = append(names, n)
				}
			}
		}
		sort.Strings(names)
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// listWith connects with the flags given so far (read-only, every request
// bounded by completionTimeout) and completes the names list returns. Any
// error completes nothing and offers no file names either.
func listWith(cmd *cobra.Command, e *env, toComplete string, list func(context.Context, kubernetes.Interface, string) ([]string, error)) ([]cobra.Completion, cobra.ShellCompDirective) {
	names, err := func() ([]string, error) {
		ns, err := e.opts.Namespace()
		if err != nil {
			return nil, err
		}
		cfg, err := e.opts.RESTConfig()
		if err != nil {
			return nil, err
		}
		ro, _ := kube.ReadOnly(cfg)
		cs, err := kubernetes.NewForConfig(ro)
		if err != nil {
			return nil, err
		}
		parent := cmd.Context()
		if parent == nil {
			parent = context.Background()
		}
		ctx, cancel := context.WithTimeout(parent, completionTimeout)
		defer cancel()
		return list(ctx, cs, ns)
	}()
	if err != nil {
		cobra.CompDebugln("completion: "+err.Error(), false)
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// poolNames lists the pools defined in ns: the ConfigMaps labelled with
// their own pool name.
func poolNames(ctx context.Context, cs kubernetes.Interface, ns string) ([]string, error) {
	refs, err := kube.ListDefinedPools(ctx, cs, ns)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(refs))
	for _, r := range refs {
		names = append(names, r.Name)
	}
	return names, nil
}

// memberNames lists the members of a pool as Observe sees them (missing
// ones too), each with its state as the description.
func memberNames(ctx context.Context, cs kubernetes.Interface, ns, pool string) ([]string, error) {
	snap, err := kube.NewCluster(cs, ns).Snapshot(ctx, pool)
	if err != nil {
		return nil, err
	}
	view := engine.Observe(snap, time.Now())
	names := make([]string, 0, len(view.Members))
	for _, m := range view.Members {
		desc := string(m.State)
		if m.Claimed {
			desc += ", claimed"
		} else if m.Free {
			desc += ", free"
		}
		names = append(names, m.Name+"\t"+desc)
	}
	return names, nil
}

// withPrefix keeps the candidates (a name, or a name, a tab and a
// description) whose name starts with prefix and that a shell can take
// whole: no whitespace or control characters in the name, none but spaces
// in the description.
func withPrefix(candidates []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, c := range candidates {
		name, desc, _ := strings.Cut(c, "\t")
		if !strings.HasPrefix(name, prefix) || !shellSafe(name) || !shellSafe(strings.ReplaceAll(desc, " ", "")) {
			continue
		}
		out = append(out, c)
	}
	return out
}

func shellSafe(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}
