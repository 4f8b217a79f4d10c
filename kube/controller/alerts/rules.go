package alerts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// Thresholds are the thresholds of the alerts (ctpool-tui alerts' flags).
type Thresholds struct {
	ExhaustedFor      time.Duration // an elastic pool below its ceiling, exhausted (growing)
	ExhaustedFixedFor time.Duration // a pool that cannot grow, exhausted
	ForecastMinutes   int
	ForecastFor       time.Duration
	UnschedulableFor  time.Duration
	MaintenanceFor    time.Duration
	LeaderAbsentFor   time.Duration
	StaleReconcile    time.Duration
}

// DefaultThresholds are the flags' defaults.
func DefaultThresholds() Thresholds {
	return Thresholds{
		ExhaustedFor:      5 * time.Minute,
		ExhaustedFixedFor: 2 * time.Minute,
		ForecastMinutes:   30,
		ForecastFor:       5 * time.Minute,
		UnschedulableFor:  15 * time.Minute,
		MaintenanceFor:    5 * time.Minute,
		LeaderAbsentFor:   5 * time.Minute,
		StaleReconcile:    10 * time.Minute,
	}
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

// alertRules are the group's rules for the thresholds. ns is the
// reconciler's namespace, which the runbooks name for kubectl.
func alertRules(af Thresholds, ns string) []alertRule {
	const (
		namespace = "{{ $labels." + controller.MetricLabelNamespace + " }}"
		pool      = namespace + "/{{ $labels." + controller.MetricLabelPool + " }}"
		dash      = "ctpool-tui -n " + namespace + ", select the pool "
		// The elastic bounds are the definition's, changed by apply (the
		// dashboard's resize moves the size within them).
		apply = "ctpool-tui -n " + namespace + " apply {{ $labels." + controller.MetricLabelPool + " }}"
	)
	claimed := byPool(members(controller.MembersClaimed))
	exhausted := fmt.Sprintf("(%s == 1)", byPool(controller.MetricPoolExhausted))
	elastic := controller.MetricPoolExhaustedAtCeiling
	atCeiling := func(v string) string {
		return fmt.Sprintf("(%s == %s)", byPool(controller.MetricPoolExhaustedAtCeiling), v)
	}
	forecast := strconv.Itoa(af.ForecastMinutes * 60)
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
		For:    promDuration(af.ExhaustedFixedFor),
		Labels: with(warn, "fixed"),
		Annotations: map[string]string{
			"summary":     "Pool " + pool + " has no free member",
			"description": "The fixed-size pool " + pool + " has had no free member for " + promDuration(af.ExhaustedFixedFor) + " ({{ $value }} claimed): the next claim fails until a member is released or the pool grows.",
			"runbook":     dash + "and press s to resize it, or enter to see who holds its members (x releases one, f force-releases it).",
		},
	}, {
		Alert:  "CtpoolPoolExhausted",
		Expr:   claimed + " and" + onPool + exhausted + " and" + onPool + atCeiling("0"),
		For:    promDuration(af.ExhaustedFor),
		Labels: with(warn, "elastic"),
		Annotations: map[string]string{
			"summary":     "Elastic pool " + pool + " has no free member",
			"description": "The elastic pool " + pool + " is below its maxSize but has had no free member for " + promDuration(af.ExhaustedFor) + " ({{ $value }} claimed): it grows more slowly than claims arrive, or its new members do not start.",
			"runbook":     dash + "and press enter to see its members that are not ready (l shows a member's log); a larger spare keeps more members ready: " + apply + " --spare N.",
		},
	}, {
		Alert:  "CtpoolPoolExhaustedAtCeiling",
		Expr:   claimed + " and" + onPool + atCeiling("1"),
		For:    promDuration(af.ExhaustedFixedFor),
		Labels: with(crit, "elastic"),
		Annotations: map[string]string{
			"summary":     "Elastic pool " + pool + " is at its maxSize with no free member",
			"description": "The elastic pool " + pool + " has grown to its maxSize and has had no free member for " + promDuration(af.ExhaustedFixedFor) + " ({{ $value }} claimed): the next claim fails until a member is released or maxSize is raised.",
			"runbook":     apply + " --max-size N raises its ceiling; meanwhile " + dash + "and press enter to see who holds its members (x releases one, f force-releases it).",
		},
	}, {
		Alert:  "CtpoolPoolExhaustionForecast",
		Expr:   fmt.Sprintf("(%s < %s)", byPool(controller.MetricPoolExhaustionForecast), forecast) + " unless" + onPool + elastic + " unless" + onPool + exhausted,
		For:    promDuration(af.ForecastFor),
		Labels: with(warn, "fixed"),
		Annotations: map[string]string{
			"summary":     "Pool " + pool + " runs out of free members in {{ $value | humanizeDuration }}",
			"description": "At the recent claim rate the fixed-size pool " + pool + " has no free member left in {{ $value | humanizeDuration }} (the threshold is " + strconv.Itoa(af.ForecastMinutes) + " minutes).",
			"runbook":     dash + "and press s to resize it before it runs out; enter shows who holds its members.",
		},
	}, {
		Alert:  "CtpoolPoolCeilingForecast",
		Expr:   fmt.Sprintf("(%s < %s)", byPool(controller.MetricPoolCeilingForecast), forecast) + " unless" + onPool + atCeiling("1"),
		For:    promDuration(af.ForecastFor),
		Labels: with(warn, "elastic"),
		Annotations: map[string]string{
			"summary":     "Elastic pool " + pool + " reaches its maxSize in {{ $value | humanizeDuration }}",
			"description": "At the recent claim rate the claims of the elastic pool " + pool + " reach its maxSize in {{ $value | humanizeDuration }} (the threshold is " + strconv.Itoa(af.ForecastMinutes) + " minutes); after that it cannot grow.",
			"runbook":     apply + " --max-size N raises its ceiling before it is reached; " + dash + "and press enter to see who holds its members.",
		},
	}, {
		Alert:  "CtpoolRolloutHalted",
		Expr:   byPool(controller.MetricPoolRolloutHalted) + " == 1",
		For:    "1m",
		Labels: warn,
		Annotations: map[string]string{
			"summary":     "The rollout of pool " + pool + " halted",
			"description": "The rollout of a new source (image) in " + pool + " halted itself: its new members failed or were not Ready within the pool's rolloutDeadline. No further member is replaced; the members still on the old image keep serving claims.",
			"runbook":     dash + "and press enter: the failing members say why (l shows a log); apply a fixed image, or the old one to roll back, or press R to resume the rollout.",
		},
	}, {
		Alert:  "CtpoolMembersUnschedulable",
		Expr:   byPool(members(controller.MembersUnschedulable)) + " > 0",
		For:    promDuration(af.UnschedulableFor),
		Labels: warn,
		Annotations: map[string]string{
			"summary":     "Members of pool " + pool + " cannot be scheduled ({{ $value }})",
			"description": "The scheduler has not placed members of " + pool + " ({{ $value }} now) for " + promDuration(af.UnschedulableFor) + ": the nodes lack the resources, or the members' constraints match no node. They count towards the pool's size but nobody can claim them.",
			"runbook":     dash + "and press enter: the unschedulable members say why the scheduler refuses them (? lists the keys); s shrinks the pool, or free room on the nodes.",
		},
	}, {
		Alert:  "CtpoolReleaseStuckInMaintenance",
		Expr:   byPool(members(controller.MembersMaintenanceStale)) + " > 0",
		For:    promDuration(af.MaintenanceFor),
		Labels: warn,
		Annotations: map[string]string{
			"summary":     "Members of pool " + pool + " are stuck in maintenance ({{ $value }})",
			"description": "The reconciler took members of " + pool + " ({{ $value }} now) for a release or a reconcile step over 10 minutes ago and has not given them back for " + promDuration(af.MaintenanceFor) + " more: a step that never finished, or a reconciler stopped halfway.",
			"runbook":     dash + "and press enter, select the member: l shows its log, A the audit of its release; r reconciles the pool again, f force-releases the member.",
		},
	}, {
		Alert:  "CtpoolReconcilerNotReconciling",
		Expr:   fmt.Sprintf("max(%[1]s) < 1 or absent(%[1]s)", controller.MetricReconcilerLeader),
		For:    promDuration(af.LeaderAbsentFor),
		Labels: crit,
		Annotations: map[string]string{
			"summary":     "No ctpool-tui reconciler leads",
			"description": "For " + promDuration(af.LeaderAbsentFor) + " no replica of the reconciler has led (" + controller.MetricReconcilerLeader + " is 0 on every replica, or no replica is scraped): no pool is reconciled, failed members are not replaced and elastic pools do not grow.",
			"runbook":     "kubectl -n " + ns + " get pods,lease ctpool-tui-reconciler and kubectl -n " + ns + " logs deploy/ctpool-tui-reconciler; meanwhile ctpool-tui -n " + ns + ", select a pool and press r to reconcile it by hand.",
		},
	}, {
		Alert:  "CtpoolPoolNotReconciled",
		Expr:   "time() - " + byPool(controller.MetricReconcileLastSuccess) + " > " + seconds(af.StaleReconcile),
		Labels: warn,
		Annotations: map[string]string{
			"summary":     "Pool " + pool + " not reconciled for {{ $value | humanizeDuration }}",
			"description": "The last reconcile of " + pool + " without an error was {{ $value | humanizeDuration }} ago (the threshold is " + promDuration(af.StaleReconcile) + "; the reconciler resyncs every 30s): members are not replaced and the pool is not resized.",
			"runbook":     dash + "and press r to reconcile it and see the error, A for the audit; the reconciler's log: kubectl -n " + ns + " logs deploy/ctpool-tui-reconciler.",
		},
	}, {
		// A pool the leader has tried (its duration histogram has a
		// series) but never reconciled without an error has no timestamp
		// at all: CtpoolPoolNotReconciled cannot see it.
		Alert:  "CtpoolPoolNeverReconciled",
		Expr:   byPool(controller.MetricReconcileDuration+"_count") + " unless" + onPool + controller.MetricReconcileLastSuccess,
		For:    promDuration(af.StaleReconcile),
		Labels: warn,
		Annotations: map[string]string{
			"summary":     "Pool " + pool + " never reconciled",
			"description": "The reconciler has tried {{ $value }} reconciles of " + pool + " and none succeeded for " + promDuration(af.StaleReconcile) + " since it took the lead: members are not replaced and the pool is not resized.",
			"runbook":     dash + "and press r to reconcile it and see the error, A for the audit; the reconciler's log: kubectl -n " + ns + " logs deploy/ctpool-tui-reconciler.",
		},
	}}
}

// RulesYAML is the PrometheusRule, or with rulesOnly the rule file alone.
func RulesYAML(af Thresholds, ns string, rulesOnly bool) ([]byte, error) {
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
