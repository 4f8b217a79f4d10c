package alerts

import (
	"fmt"

	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// obj is a JSON object of the dashboard; encoding/json writes its keys
// sorted, which keeps the output stable.
type obj = map[string]any

// The dashboard's variables: the Prometheus data source, and the namespaces
// and pools it shows (several, or all); poolSel are the matchers of a pool's
// series that the variables select.
const (
	dsVar   = "${datasource}"
	poolSel = controller.MetricLabelNamespace + `=~"$namespace", ` + controller.MetricLabelPool + `=~"$pool"`
)

// poolLegend is the legend of a pool's series (Grafana's legend format).
const poolLegend = "{{" + controller.MetricLabelNamespace + "}}/{{" + controller.MetricLabelPool + "}}"

// target is one Prometheus query of a panel, legend as Grafana's legend
// format.
type target struct{ expr, legend string }

// poolGauge is a gauge of a pool per namespace and pool (one series whichever
// replica exported it), filtered by the variables; extra adds matchers.
func poolGauge(metric, extra string) string {
	sel := poolSel
	if extra != "" {
		sel += ", " + extra
	}
	return byPool(metric + "{" + sel + "}")
}

// Dashboard is the Grafana dashboard of the reconciler's metrics.
func Dashboard(af Thresholds) ([]byte, error) {
	forecast := af.ForecastMinutes * 60
	perPool := func(what string) string { return poolLegend + " " + what }
	panels := []obj{
		timeseries("Members: free, claimed and size", "The effective size is what the pool asks for now (an elastic pool's grows and shrinks between its minSize and maxSize); the ceiling is an elastic pool's maxSize.", "short", nil,
			target{poolGauge(controller.MetricPoolMembers, stateIs(controller.MembersFree)), perPool("free")},
			target{poolGauge(controller.MetricPoolMembers, stateIs(controller.MembersClaimed)), perPool("claimed")},
			target{poolGauge(controller.MetricPoolDesiredMembers, ""), perPool("size")},
			target{poolGauge(controller.MetricPoolMaxMembers, ""), perPool("ceiling")},
		),
		stateTimeline("Exhausted, rollout halted", "Exhausted: members but none free. At ceiling: an elastic pool at its maxSize with none free (CtpoolPoolExhaustedAtCeiling). Rollout halted: a new image's members fail, the old ones keep serving (CtpoolRolloutHalted).",
			target{poolGauge(controller.MetricPoolExhausted, ""), perPool("exhausted")},
			target{poolGauge(controller.MetricPoolExhaustedAtCeiling, ""), perPool("at ceiling")},
			target{poolGauge(controller.MetricPoolRolloutHalted, ""), perPool("rollout halted")},
		),
		timeseries("Forecast: time until exhausted or at the ceiling", "Present only while the recent claim rate would exhaust the pool (a fixed pool) or bring its claims to its maxSize (an elastic pool). The line is the alerts' threshold (--forecast-minutes).", "s", &forecast,
			target{poolGauge(controller.MetricPoolExhaustionForecast, ""), perPool("exhausted in")},
			target{poolGauge(controller.MetricPoolCeilingForecast, ""), perPool("at maxSize in")},
		),
		timeseries("Unschedulable members", "Members the scheduler cannot place (CtpoolMembersUnschedulable).", "short", nil,
			target{poolGauge(controller.MetricPoolMembers, stateIs(controller.MembersUnschedulable)), perPool("unschedulable")},
		),
		timeseries("Members in maintenance over 10 minutes", "Members whose Lease the reconciler took for a release or a step over 10 minutes ago (CtpoolReleaseStuckInMaintenance).", "short", nil,
			target{poolGauge(controller.MetricPoolMembers, stateIs(controller.MembersMaintenanceStale)), perPool("stale maintenance")},
		),
		timeseries("Reconcile errors", "Failed reconcile steps per second, by step.", "ops", nil,
			target{fmt.Sprintf("sum by (%s, %s) (rate(%s{%s}[$__rate_interval]))", poolLabels, controller.MetricLabelStep, controller.MetricReconcileErrors, poolSel), poolLegend + " {{" + controller.MetricLabelStep + "}}"},
		),
		timeseries("Reconcile duration p95", "The 95th percentile of whole reconciles, reads included.", "s", nil,
			target{fmt.Sprintf("histogram_quantile(0.95, sum by (%s, le) (rate(%s_bucket{%s}[$__rate_interval])))", poolLabels, controller.MetricReconcileDuration, poolSel), perPool("p95")},
		),
		timeseries("Since the last successful reconcile", "Seconds since each pool's last reconcile without an error (CtpoolPoolNotReconciled above "+promDuration(af.StaleReconcile)+"; the reconciler resyncs every 30s).", "s", nil,
			target{"time() - " + poolGauge(controller.MetricReconcileLastSuccess, ""), poolLegend},
		),
		timeseries("Reconciler leader", "Replicas that lead (1 is right; 0 for long is CtpoolReconcilerNotReconciling) and replicas scraped.", "short", nil,
			target{"sum(" + controller.MetricReconcilerLeader + ")", "leading"},
			target{"count(" + controller.MetricReconcilerLeader + ")", "replicas"},
		),
	}
	// Two panels a row, each 12 wide and 8 high; ids in order.
	for i, p := range panels {
		p["id"] = i + 1
		p["gridPos"] = obj{"h": 8, "w": 12, "x": (i % 2) * 12, "y": (i / 2) * 8}
	}
	dash := obj{
		"title":         "ctpool-tui",
		"uid":           "ctpool-tui",
		"description":   "Desktop pools and their reconciler (ctpool-tui reconcile --metrics-addr). The alerts: ctpool-tui alerts.",
		"tags":          []string{"ctpool-tui"},
		"editable":      true,
		"schemaVersion": 39,
		"refresh":       "1m",
		"timezone":      "browser",
		"time":          obj{"from": "now-6h", "to": "now"},
		"templating": obj{"list": []obj{
			{
				"name":  "datasource",
				"label": "Data source",
				"type":  "datasource",
				"query": "prometheus",
			},
			queryVariable("namespace", "Namespace", fmt.Sprintf("label_values(%s, %s)", controller.MetricPoolDesiredMembers, controller.MetricLabelNamespace)),
			queryVariable("pool", "Pool", fmt.Sprintf(`label_values(%s{%s=~"$namespace"}, %s)`, controller.MetricPoolDesiredMembers, controller.MetricLabelNamespace, controller.MetricLabelPool)),
		}},
		"annotations": obj{"list": []obj{}},
		"panels":      panels,
	}
	return jsonIndent(dash)
}

// queryVariable is a variable of label values, several or all of them.
func queryVariable(name, label, query string) obj {
	return obj{
		"name":       name,
		"label":      label,
		"type":       "query",
		"datasource": obj{"type": "prometheus", "uid": dsVar},
		"query":      obj{"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
		"definition": query,
		"refresh":    2, // on time range change
		"sort":       1,
		"multi":      true,
		"includeAll": true,
		"allValue":   ".*",
		"current":    obj{"text": []string{"All"}, "value": []string{"$__all"}},
	}
}

func targets(ts []target) []obj {
	out := make([]obj, len(ts))
	for i, t := range ts {
		out[i] = obj{
			"datasource":   obj{"type": "prometheus", "uid": dsVar},
			"expr":         t.expr,
			"legendFormat": t.legend,
			"refId":        string(rune('A' + i)),
		}
	}
	return out
}

// timeseries is a time series panel; a threshold draws a red area below it
// and a line at it (the forecasts: lower is worse).
func timeseries(title, desc, unit string, threshold *int, ts ...target) obj {
	steps := []obj{{"color": "green", "value": nil}}
	custom := obj{"fillOpacity": 10, "showPoints": "never"}
	if threshold != nil {
		steps = []obj{{"color": "red", "value": nil}, {"color": "green", "value": *threshold}}
		custom["thresholdsStyle"] = obj{"mode": "line+area"}
	}
	return obj{
		"type":        "timeseries",
		"title":       title,
		"description": desc,
		"datasource":  obj{"type": "prometheus", "uid": dsVar},
		"targets":     targets(ts),
		"fieldConfig": obj{
			"defaults": obj{
				"unit":       unit,
				"min":        0,
				"custom":     custom,
				"thresholds": obj{"mode": "absolute", "steps": steps},
			},
			"overrides": []obj{},
		},
		"options": obj{
			"legend":  obj{"displayMode": "list", "placement": "bottom", "showLegend": true, "calcs": []string{}},
			"tooltip": obj{"mode": "multi", "sort": "desc"},
		},
	}
}

// stateTimeline is a panel of 0/1 states: ok in green, 1 in red.
func stateTimeline(title, desc string, ts ...target) obj {
	return obj{
		"type":        "state-timeline",
		"title":       title,
		"description": desc,
		"datasource":  obj{"type": "prometheus", "uid": dsVar},
		"targets":     targets(ts),
		"fieldConfig": obj{
			"defaults": obj{
				"min": 0,
				"max": 1,
				"mappings": []obj{{
					"type": "value",
					"options": obj{
						"0": obj{"text": "ok", "color": "green", "index": 0},
						"1": obj{"text": "exhausted", "color": "red", "index": 1},
					},
				}},
				"thresholds": obj{"mode": "absolute", "steps": []obj{{"color": "green", "value": nil}, {"color": "red", "value": 1}}},
			},
			"overrides": []obj{},
		},
		"options": obj{
			"showValue":   "never",
			"mergeValues": true,
			"rowHeight":   0.9,
			"legend":      obj{"displayMode": "list", "placement": "bottom", "showLegend": true, "calcs": []string{}},
			"tooltip":     obj{"mode": "single", "sort": "none"},
		},
	}
}
