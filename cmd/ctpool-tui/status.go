package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/tui"
)

func newStatusCmd(e *env) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "status POOL",
		Short: "Show the live state of each member of a pool (changes nothing)",
		Long: `Show the live state of a pool and each member, computed now from the
cluster (not the status the last reconcile recorded). It changes nothing.
A member's MESSAGE is the cluster's own words (for an Unschedulable member the
scheduler's message), cut to its first sentence; DIAGNOSIS says what it means.
-o wide prints every message and diagnosis whole. -o json and -o yaml print the
same documented schema as --once -o json: message is the whole message,
diagnosis its reason and fix.`,
		Example: "  ctpool-tui status desk\n  ctpool-tui status desk -o wide\n  ctpool-tui status desk -o yaml",
		Args:    exactArgs(1, "POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pool := args[0]
			if err := validatePoolArg(pool); err != nil {
				return err
			}
			if output != "table" && output != "wide" && output != "json" && output != "yaml" {
				return usageErr("-o must be table, wide, json or yaml (got %q)", output)
			}
			ns, err := e.opts.Namespace()
			if err != nil {
				return opErr(err)
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
			snap, err := kube.NewCluster(cs, ns).Snapshot(cmd.Context(), pool)
			if err != nil {
				return opErr(fmt.Errorf("read pool %s: %w", pool, err))
			}
			if snap.ConfigMap == nil && len(snap.Pods)+len(snap.PVCs)+len(snap.Leases) == 0 {
				return opErr(fmt.Errorf("%w: %s (no ConfigMap %s in namespace %s)", engine.ErrPoolNotFound, pool, engine.ConfigMapName(pool), ns))
			}
			now := time.Now()
			views := []engine.PoolView{engine.Observe(snap, now)}
			opts := tui.OnceOptions{Format: output, Pool: pool, Namespace: ns, Context: e.opts.ContextName(), Now: now}
			if output != "yaml" {
				tui.RenderOnce(e.stdout, views, opts)
				return nil
			}
			var buf bytes.Buffer
			opts.Format = "json"
			tui.RenderOnce(&buf, views, opts)
			out, err := yaml.JSONToYAML(buf.Bytes())
			if err != nil {
				return opErr(err)
			}
			_, err = e.stdout.Write(out)
			return err
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "table", "table, wide, json or yaml")
	return c
}
