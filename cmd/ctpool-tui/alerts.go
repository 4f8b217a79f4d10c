package main

import (
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ctpool-tui/ctpool-tui/kube/controller/alerts"
)

func newAlertsCmd(e *env) *cobra.Command {
	af := alerts.DefaultThresholds()
	var rulesOnly, grafana bool
	c := &cobra.Command{
		Use:   "alerts [--namespace N] [--rules-only | --grafana]",
		Short: "Print Prometheus alerts (a PrometheusRule) or a Grafana dashboard for the reconciler's metrics",
		Long: `Print (YAML) a PrometheusRule ctpool-tui in the namespace, for the
prometheus-operator, with one group ctpool-tui of alerts on the metrics the
reconciler serves (reconcile --metrics-addr):

  CtpoolPoolExhausted             a pool has members but none free: a fixed
                                  pool for --exhausted-fixed-for, an elastic
                                  pool below its maxSize (it is growing) for
                                  --exhausted-for (warning)
  CtpoolPoolExhaustedAtCeiling    an elastic pool at its maxSize with none
                                  free, for --exhausted-fixed-for (critical)
  CtpoolPoolExhaustionForecast    at the recent claim rate a fixed pool runs
                                  out within --forecast-minutes (warning)
  CtpoolPoolCeilingForecast       at the recent claim rate an elastic pool's
                                  claims reach its maxSize within
                                  --forecast-minutes (warning)
  CtpoolMembersUnschedulable      members the scheduler cannot place, for
                                  --unschedulable-for (warning)
  CtpoolReleaseStuckInMaintenance members the reconciler took over 10 minutes
                                  ago for a release or a step, for
                                  --maintenance-stale-for (warning)
  CtpoolReconcilerNotReconciling  no replica of the reconciler leads (or none
                                  is scraped) for --leader-absent-for (critical)
  CtpoolPoolNotReconciled         a pool without a successful reconcile for
                                  --stale-reconcile (warning)
  CtpoolPoolNeverReconciled       a pool the leader has tried to reconcile for
                                  --stale-reconcile, never with success (warning)

Each alert's runbook annotation says what to do, with the dashboard's keys.
The scrape must keep the metrics' own namespace label: honorLabels: true on
the PodMonitor or ServiceMonitor (honor_labels: true in a scrape config).

--rules-only prints the rule groups alone, a rule file for Prometheus'
rule_files (and for promtool). --grafana prints a Grafana dashboard (JSON) of
the same metrics instead, with the forecast threshold of --forecast-minutes.`,
		Example: `  ctpool-tui alerts -n vdi | kubectl apply -f -
  ctpool-tui alerts --rules-only >/etc/prometheus/rules/ctpool-tui.yaml
  ctpool-tui alerts --grafana >ctpool-tui-dashboard.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateThresholds(af); err != nil {
				return err
			}
			if rulesOnly && grafana {
				return usageErr("--rules-only and --grafana print different things; give one")
			}
			if grafana {
				out, err := alerts.Dashboard(af)
				if err != nil {
					return opErr(err)
				}
				_, err = e.stdout.Write(out)
				return err
			}
			// The PrometheusRule's namespace, and the reconciler's that
			// the runbooks name.
			ns, err := e.opts.Namespace()
			if err != nil {
				return opErr(err)
			}
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return usageErr("invalid namespace %q: %s", ns, errs[0])
			}
			out, err := alerts.RulesYAML(af, ns, rulesOnly)
			if err != nil {
				return opErr(err)
			}
			_, err = e.stdout.Write(out)
			return err
		},
	}
	f := c.Flags()
	f.BoolVar(&rulesOnly, "rules-only", false, "print the rule groups alone: a rule file for Prometheus' rule_files, not a PrometheusRule")
	f.BoolVar(&grafana, "grafana", false, "print a Grafana dashboard (JSON) of the reconciler's metrics instead of the alerts")
	f.DurationVar(&af.ExhaustedFor, "exhausted-for", af.ExhaustedFor, "CtpoolPoolExhausted of an elastic pool below its maxSize (it is growing): exhausted this long")
	f.DurationVar(&af.ExhaustedFixedFor, "exhausted-fixed-for", af.ExhaustedFixedFor, "CtpoolPoolExhausted of a fixed pool, and CtpoolPoolExhaustedAtCeiling of an elastic pool at its maxSize: exhausted this long")
	f.IntVar(&af.ForecastMinutes, "forecast-minutes", af.ForecastMinutes, "CtpoolPoolExhaustionForecast and CtpoolPoolCeilingForecast: the forecast is under this many minutes")
	f.DurationVar(&af.ForecastFor, "forecast-for", af.ForecastFor, "the forecasts stay under --forecast-minutes this long")
	f.DurationVar(&af.UnschedulableFor, "unschedulable-for", af.UnschedulableFor, "CtpoolMembersUnschedulable: members unschedulable this long")
	f.DurationVar(&af.MaintenanceFor, "maintenance-stale-for", af.MaintenanceFor, "CtpoolReleaseStuckInMaintenance: members in maintenance over 10 minutes, this long")
	f.DurationVar(&af.LeaderAbsentFor, "leader-absent-for", af.LeaderAbsentFor, "CtpoolReconcilerNotReconciling: no replica leads this long")
	f.DurationVar(&af.StaleReconcile, "stale-reconcile", af.StaleReconcile, "CtpoolPoolNotReconciled: a pool's last successful reconcile is older than this (the reconciler resyncs every 30s); CtpoolPoolNeverReconciled: tried this long without one")
	return c
}

// validateThresholds refuses a threshold that is zero or negative, naming its
// flag.
func validateThresholds(af alerts.Thresholds) error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--exhausted-for", af.ExhaustedFor},
		{"--exhausted-fixed-for", af.ExhaustedFixedFor},
		{"--forecast-for", af.ForecastFor},
		{"--unschedulable-for", af.UnschedulableFor},
		{"--maintenance-stale-for", af.MaintenanceFor},
		{"--leader-absent-for", af.LeaderAbsentFor},
		{"--stale-reconcile", af.StaleReconcile},
	} {
		if d.v <= 0 {
			return usageErr("%s must be a positive duration, not %s", d.flag, d.v)
		}
		if d.v%time.Millisecond != 0 {
			return usageErr("%s must be a whole number of milliseconds (Prometheus' resolution), not %s", d.flag, d.v)
		}
	}
	if af.ForecastMinutes <= 0 {
		return usageErr("--forecast-minutes must be a positive number of minutes, not %d", af.ForecastMinutes)
	}
	return nil
}
