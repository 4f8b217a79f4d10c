package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// alertFlags are the thresholds of the alerts ctpool-tui alerts prints.
type alertFlags struct {
	exhaustedFor      time.Duration // an elastic pool below its ceiling, exhausted (growing)
	exhaustedFixedFor time.Duration // a pool that cannot grow, exhausted
	forecastMinutes   int
	forecastFor       time.Duration
	unschedulableFor  time.Duration
	maintenanceFor    time.Duration
	leaderAbsentFor   time.Duration
	staleReconcile    time.Duration
}

func defaultAlertFlags() alertFlags {
	return alertFlags{
		exhaustedFor:      5 * time.Minute,
		exhaustedFixedFor: 2 * time.Minute,
		forecastMinutes:   30,
		forecastFor:       5 * time.Minute,
		unschedulableFor:  15 * time.Minute,
		maintenanceFor:    5 * time.Minute,
		leaderAbsentFor:   5 * time.Minute,
		staleReconcile:    10 * time.Minute,
	}
}

func newAlertsCmd(e *env) *cobra.Command {
	af := defaultAlertFlags()
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
			if err := af.validate(); err != nil {
				return err
			}
			if rulesOnly && grafana {
				return usageErr("--rules-only and --grafana print different things; give one")
			}
			if grafana {
				out, err := grafanaDashboard(af)
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
			out, err := alertsYAML(af, ns, rulesOnly)
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
	f.DurationVar(&af.exhaustedFor, "exhausted-for", af.exhaustedFor, "CtpoolPoolExhausted of an elastic pool below its maxSize (it is growing): exhausted this long")
	f.DurationVar(&af.exhaustedFixedFor, "exhausted-fixed-for", af.exhaustedFixedFor, "CtpoolPoolExhausted of a fixed pool, and CtpoolPoolExhaustedAtCeiling of an elastic pool at its maxSize: exhausted this long")
	f.IntVar(&af.forecastMinutes, "forecast-minutes", af.forecastMinutes, "CtpoolPoolExhaustionForecast and CtpoolPoolCeilingForecast: the forecast is under this many minutes")
	f.DurationVar(&af.forecastFor, "forecast-for", af.forecastFor, "the forecasts stay under --forecast-minutes this long")
	f.DurationVar(&af.unschedulableFor, "unschedulable-for", af.unschedulableFor, "CtpoolMembersUnschedulable: members unschedulable this long")
	f.DurationVar(&af.maintenanceFor, "maintenance-stale-for", af.maintenanceFor, "CtpoolReleaseStuckInMaintenance: members in maintenance over 10 minutes, this long")
	f.DurationVar(&af.leaderAbsentFor, "leader-absent-for", af.leaderAbsentFor, "CtpoolReconcilerNotReconciling: no replica leads this long")
	f.DurationVar(&af.staleReconcile, "stale-reconcile", af.staleReconcile, "CtpoolPoolNotReconciled: a pool's last successful reconcile is older than this (the reconciler resyncs every 30s); CtpoolPoolNeverReconciled: tried this long without one")
	return c
}

// validate refuses a threshold that is zero or negative, naming its flag.
func (af alertFlags) validate() error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--exhausted-for", af.exhaustedFor},
		{"--exhausted-fixed-for", af.exhaustedFixedFor},
		{"--forecast-for", af.forecastFor},
		{"--unschedulable-for", af.unschedulableFor},
		{"--maintenance-stale-for", af.maintenanceFor},
		{"--leader-absent-for", af.leaderAbsentFor},
		{"--stale-reconcile", af.staleReconcile},
	} {
		if d.v <= 0 {
			return usageErr("%s must be a positive duration, not %s", d.flag, d.v)
		}
		if d.v%time.Millisecond != 0 {
			return usageErr("%s must be a whole number of milliseconds (Prometheus' resolution), not %s", d.flag, d.v)
		}
	}
	if af.forecastMinutes <= 0 {
		return usageErr("--forecast-minutes must be a positive number of minutes, not %d", af.forecastMinutes)
	}
	return nil
}

// promDuration writes d as Prometheus does (1h30m, 5m, 90s is 1m30s, 500ms).
func promDuration(d time.Duration) string {
	var b strings.Builder
	for _, u := range []struct {
		unit string
		d    time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}} {
		if n := d / u.d; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.unit)
			d -= n * u.d
		}
	}
	if b.Len() == 0 {
		return "0s"
	}
	return b.String()
}

// seconds writes d as a number of seconds for an expression.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// alertRule is one alerting rule of a rule group. The YAML tags are
// Prometheus' rule file keys, in the order Prometheus' documentation writes them.
type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type ruleGroup struct {
	Name  string      `yaml:"name"`
	Rules []alertRule `yaml:"rules"`
}

type ruleGroups struct {
	Groups []ruleGroup `yaml:"groups"`
}

type prometheusRule struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec ruleGroups `yaml:"spec"`
}

// byPool is a gauge of a pool, one series per namespace and pool whichever
// replica or target exported it: a leader handover or a second scrape job
// does not split an alert in two.
func byPool(metric string) string {
	return "max by (namespace, pool) (" + metric + ")"
}

// onPool joins two pool expressions.
const onPool = " on (namespace, pool) "

// alertRules are the group's rules for the thresholds. ns is the
// reconciler's namespace, which the runbooks name for kubectl.
func alertRules(af alertFlags, ns string) []alertRule {
	const pool = "{{ $labels.namespace }}/{{ $labels.pool }}"
	const dash = "ctpool-tui -n {{ $labels.namespace }}, select the pool "
	// The elastic bounds are the definition's, changed by apply (the
	// dashboard's resize moves the size within them).
	const apply = "ctpool-tui -n {{ $labels.namespace }} apply {{ $labels.pool }}"
	claimed := byPool(`ctpool_pool_members{state="claimed"}`)
	exhausted := "(" + byPool("ctpool_pool_exhausted") + " == 1)"
	elastic := "ctpool_pool_exhausted_at_ceiling"
	atCeiling := func(v string) string { return "(" + byPool("ctpool_pool_exhausted_at_ceiling") + " == " + v + ")" }
	forecast := strconv.Itoa(af.forecastMinutes * 60)
	warn := map[string]string{"severity": "warning"}
	crit := map[string]string{"severity": "critical"}
	// pool_kind tells the rules of one alert apart (fixed or elastic
	// pools), and lets a route treat the kinds differently.
	with := func(l map[string]string, kind string) map[string]string {
		return map[string]string{"severity": l["severity"], "pool_kind": kind}
	}
	return []alertRule{{
		Alert:  "CtpoolPoolExhausted",
		Expr:   claimed + " and" + onPool + exhausted + " unless" + onPool + elastic,
		For:    promDuration(af.exhaustedFixedFor),
		Labels: with(warn, "fixed"),
		Annotations: map[string]string{
			"summary":     "Pool " + pool + " has no free member",
			"description": "The fixed-size pool " + pool + " has had no free member for " + promDuration(af.exhaustedFixedFor) + " ({{ $value }} claimed): the next claim fails until a member is released or the pool grows.",
			"runbook":     dash + "and press s to resize it, or enter to see who holds its members (x releases one, f force-releases it).",
		},
	}, {
		Alert:  "CtpoolPoolExhausted",
		Expr:   claimed + " and" + onPool + exhausted + " and" + onPool + atCeiling("0"),
		For:    promDuration(af.exhaustedFor),
		Labels: with(warn, "elastic"),
		Annotations: map[string]string{
			"summary":     "Elastic pool " + pool + " has no free member",
			"description": "The elastic pool " + pool + " is below its maxSize but has had no free member for " + promDuration(af.exhaustedFor) + " ({{ $value }} claimed): it grows more slowly than claims arrive, or its new members do not start.",
			"runbook":     dash + "and press enter to see its members that are not ready (l shows a member's log); a larger spare keeps more members ready: " + apply + " --spare N.",
		},
	}, {
		Alert:  "CtpoolPoolExhaustedAtCeiling",
		Expr:   claimed + " and" + onPool + atCeiling("1"),
		For:    promDuration(af.exhaustedFixedFor),
		Labels: with(crit, "elastic"),
		Annotations: map[string]string{
			"summary":     "Elastic pool " + pool + " is at its maxSize with no free member",
			"description": "The elastic pool " + pool + " has grown to its maxSize and has had no free member for " + promDuration(af.exhaustedFixedFor) + " ({{ $value }} claimed): the next claim fails until a member is released or maxSize is raised.",
			"runbook":     apply + " --max-size N raises its ceiling; meanwhile " + dash + "and press enter to see who holds its members (x releases one, f force-releases it).",
		},
	}, {
		Alert:  "CtpoolPoolExhaustionForecast",
		Expr:   "(" + byPool("ctpool_pool_exhaustion_forecast_seconds") + " < " + forecast + ") unless" + onPool + elastic + " unless" + onPool + exhausted,
		For:    promDuration(af.forecastFor),
		Labels: with(warn, "fixed"),
		Annotations: map[string]string{
			"summary":     "Pool " + pool + " runs out of free members in {{ $value | humanizeDuration }}",
			"description": "At the recent claim rate the fixed-size pool " + pool + " has no free member left in {{ $value | humanizeDuration }} (the threshold is " + strconv.Itoa(af.forecastMinutes) + " minutes).",
			"runbook":     dash + "and press s to resize it before it runs out; enter shows who holds its members.",
		},
	}, {
		Alert:  "CtpoolPoolCeilingForecast",
		Expr:   "(" + byPool("ctpool_pool_ceiling_forecast_seconds") + " < " + forecast + ") unless" + onPool + atCeiling("1"),
		For:    promDuration(af.forecastFor),
		Labels: with(warn, "elastic"),
		Annotations: map[string]string{
			"summary":     "Elastic pool " + pool + " reaches its maxSize in {{ $value | humanizeDuration }}",
			"description": "At the recent claim rate the claims of the elastic pool " + pool + " reach its maxSize in {{ $value | humanizeDuration }} (the threshold is " + strconv.Itoa(af.forecastMinutes) + " minutes); after that it cannot grow.",
			"runbook":     apply + " --max-size N raises its ceiling before it is reached; " + dash + "and press enter to see who holds its members.",
		},
	}, {
		Alert:  "CtpoolMembersUnschedulable",
		Expr:   byPool(`ctpool_pool_members{state="unschedulable"}`) + " > 0",
		For:    promDuration(af.unschedulableFor),
		Labels: warn,
		Annotations: map[string]string{
			"summary":     "Members of pool " + pool + " cannot be scheduled ({{ $value }})",
			"description": "The scheduler has not placed members of " + pool + " ({{ $value }} now) for " + promDuration(af.unschedulableFor) + ": the nodes lack the resources, or the members' constraints match no node. They count towards the pool's size but nobody can claim them.",
			"runbook":     dash + "and press enter: the unschedulable members say why the scheduler refuses them (? lists the keys); s shrinks the pool, or free room on the nodes.",
		},
	}, {
		Alert:  "CtpoolReleaseStuckInMaintenance",
		Expr:   byPool(`ctpool_pool_members{state="maintenance_stale"}`) + " > 0",
		For:    promDuration(af.maintenanceFor),
		Labels: warn,
		Annotations: map[string]string{
			"summary":     "Members of pool " + pool + " are stuck in maintenance ({{ $value }})",
			"description": "The reconciler took members of " + pool + " ({{ $value }} now) for a release or a reconcile step over 10 minutes ago and has not given them back for " + promDuration(af.maintenanceFor) + " more: a step that never finished, or a reconciler stopped halfway.",
			"runbook":     dash + "and press enter, select the member: l shows its log, A the audit of its release; r reconciles the pool again, f force-releases the member.",
		},
	}, {
		Alert:  "CtpoolReconcilerNotReconciling",
		Expr:   "max(ctpool_reconciler_leader) < 1 or absent(ctpool_reconciler_leader)",
		For:    promDuration(af.leaderAbsentFor),
		Labels: crit,
		Annotations: map[string]string{
			"summary":     "No ctpool-tui reconciler leads",
			"description": "For " + promDuration(af.leaderAbsentFor) + " no replica of the reconciler has led (ctpool_reconciler_leader is 0 on every replica, or no replica is scraped): no pool is reconciled, failed members are not replaced and elastic pools do not grow.",
			"runbook":     "kubectl -n " + ns + " get pods,lease ctpool-tui-reconciler and kubectl -n " + ns + " logs deploy/ctpool-tui-reconciler; meanwhile ctpool-tui -n " + ns + ", select a pool and press r to reconcile it by hand.",
		},
	}, {
		Alert:  "CtpoolPoolNotReconciled",
		Expr:   "time() - " + byPool("ctpool_reconcile_last_success_timestamp_seconds") + " > " + seconds(af.staleReconcile),
		Labels: warn,
		Annotations: map[string]string{
			"summary":     "Pool " + pool + " not reconciled for {{ $value | humanizeDuration }}",
			"description": "The last reconcile of " + pool + " without an error was {{ $value | humanizeDuration }} ago (the threshold is " + promDuration(af.staleReconcile) + "; the reconciler resyncs every 30s): members are not replaced and the pool is not resized.",
			"runbook":     dash + "and press r to reconcile it and see the error, A for the audit; the reconciler's log: kubectl -n " + ns + " logs deploy/ctpool-tui-reconciler.",
		},
	}, {
		// A pool the leader has tried (its duration histogram has a
		// series) but never reconciled without an error has no timestamp
		// at all: CtpoolPoolNotReconciled cannot see it.
		Alert:  "CtpoolPoolNeverReconciled",
		Expr:   byPool("ctpool_reconcile_duration_seconds_count") + " unless" + onPool + "ctpool_reconcile_last_success_timestamp_seconds",
		For:    promDuration(af.staleReconcile),
		Labels: warn,
		Annotations: map[string]string{
			"summary":     "Pool " + pool + " never reconciled",
			"description": "The reconciler has tried {{ $value }} reconciles of " + pool + " and none succeeded for " + promDuration(af.staleReconcile) + " since it took the lead: members are not replaced and the pool is not resized.",
			"runbook":     dash + "and press r to reconcile it and see the error, A for the audit; the reconciler's log: kubectl -n " + ns + " logs deploy/ctpool-tui-reconciler.",
		},
	}}
}

// alertsYAML is the PrometheusRule, or with rulesOnly the rule file alone.
func alertsYAML(af alertFlags, ns string, rulesOnly bool) ([]byte, error) {
	groups := ruleGroups{Groups: []ruleGroup{{Name: "ctpool-tui", Rules: alertRules(af, ns)}}}
	if rulesOnly {
		return marshalYAML(groups)
	}
	var pr prometheusRule
	pr.APIVersion, pr.Kind = "monitoring.coreos.com/v1", "PrometheusRule"
	pr.Metadata.Name, pr.Metadata.Namespace = "ctpool-tui", ns
	pr.Metadata.Labels = map[string]string{"app.kubernetes.io/name": "ctpool-tui", "app.kubernetes.io/component": "alerts"}
	pr.Spec = groups
	out, err := marshalYAML(pr)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), out...), nil
}

// marshalYAML writes v with a two-space indent and without folding long
// lines, so that an expression stays on one line; maps are written with their
// keys sorted.
func marshalYAML(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// jsonIndent is the dashboard as indented JSON with a final newline; maps
// are written with their keys sorted, so the output is stable.
func jsonIndent(v any) ([]byte, error) {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	return append(out, '\n'), nil
}
