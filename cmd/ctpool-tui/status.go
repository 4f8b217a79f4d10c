package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

func newStatusCmd(e *env) *cobra.Command {
	var output string
	var sf scopeFlags
	c := &cobra.Command{
		Use:   "status POOL",
		Short: "Show the live state of each member of a pool (changes nothing)",
		Long: `Show the live state of a pool and each member, computed now from the
cluster (not the status the last reconcile recorded). It changes nothing.
A member's MESSAGE is the cluster's own words (for an Unschedulable member the
scheduler's message), cut to its first sentence; DIAGNOSIS says what it means.
-o wide prints every message and diagnosis whole. -o json and -o yaml print the
same documented schema as --once -o json: message is the whole message,
diagnosis its reason and fix.

-A shows the pool of that name in every namespace the identity may list
(--namespaces a,b,c: in these), with a NAMESPACE column.`,
		Example: "  ctpool-tui status desk\n  ctpool-tui status desk -o wide\n  ctpool-tui status desk -o yaml\n  ctpool-tui status desk -A",
		Args:    exactArgs(1, "POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pool := args[0]
			if err := validatePoolArg(pool); err != nil {
				return err
			}
			if output != "table" && output != "wide" && output != "json" && output != "yaml" {
				return usageErr("-o must be table, wide, json or yaml (got %q)", output)
			}
			sc, err := sf.resolve(e)
			if err != nil {
				return err
			}
			ns := ""
			if !sc.fleet {
				if ns, err = e.opts.Namespace(); err != nil {
					return opErr(err)
				}
			}
			cfg, err := e.opts.RESTConfig()
			if err != nil {
				return opErr(err)
			}
			ro, _ := kube.ReadOnly(cfg)
			cs, err := kubernetesFor(ro)
			if err != nil {
				return opErr(err)
			}
			warning, err := e.checkServer(cmd.Context(), cs)
			if err != nil {
				return opErr(err)
			}
			if warning != "" {
				fmt.Fprintln(e.stderr, "warning: "+oneLine(warning))
			}
			var snaps []engine.Snapshot
			if sc.fleet {
				snaps, err = fleetPool(cmd.Context(), cs, sc, pool)
			} else {
				snaps, err = onePool(cmd.Context(), cs, ns, pool)
			}
			if err != nil {
				return opErr(err)
			}
			now := time.Now()
			views := engine.ObserveAll(snaps, now)
			opts := render.OnceOptions{Format: output, Pool: pool, Namespace: ns, Context: e.opts.ContextName(), Now: now,
				Fleet: sc.fleet, Namespaces: sc.namespaces, ASCII: asciiTerminal(os.Getenv)}
			if output != "yaml" {
				render.RenderOnce(e.stdout, views, opts)
				return nil
			}
			var buf bytes.Buffer
			opts.Format = "json"
			render.RenderOnce(&buf, views, opts)
			out, err := yaml.JSONToYAML(buf.Bytes())
			if err != nil {
				return opErr(err)
			}
			_, err = e.stdout.Write(out)
			return err
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "table", "table, wide, json or yaml")
	sf.register(c.Flags(), "the pool")
	return c
}

// onePool reads a pool of namespace ns, fresh.
func onePool(ctx context.Context, cs kubernetes.Interface, ns, pool string) ([]engine.Snapshot, error) {
	snap, err := kube.NewCluster(cs, ns).Snapshot(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("read pool %s: %w", pool, err)
	}
	if snap.ConfigMap == nil && len(snap.Pods)+len(snap.PVCs)+len(snap.Leases) == 0 {
		return nil, fmt.Errorf("%w: %s (no ConfigMap %s in namespace %s)", engine.ErrPoolNotFound, pool, engine.ConfigMapName(pool), ns)
	}
	kube.ReadIsolation(ctx, cs, &snap)
	kube.ReadProtection(ctx, cs, &snap)
	return []engine.Snapshot{snap}, nil
}

// fleetPool reads the pools named pool of the fleet's namespaces, fresh.
func fleetPool(ctx context.Context, cs kubernetes.Interface, sc scope, pool string) ([]engine.Snapshot, error) {
	all, err := kube.ListFleet(ctx, cs, sc.namespaces)
	if err != nil {
		return nil, err
	}
	var out []engine.Snapshot
	for _, s := range all {
		if s.Pool == pool {
			kube.ReadIsolation(ctx, cs, &s)
			kube.ReadProtection(ctx, cs, &s)
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		where := "any namespace"
		if len(sc.namespaces) > 0 {
			where = "namespaces " + strings.Join(sc.namespaces, ", ")
		}
		return nil, fmt.Errorf("%w: %s (no ConfigMap %s in %s)", engine.ErrPoolNotFound, pool, engine.ConfigMapName(pool), where)
	}
	return out, nil
}
