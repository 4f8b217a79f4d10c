package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/ctpool-tui/ctpool-tui/internal/golden"
)

// alertMetrics are the metrics the reconciler exports that the alerts and
// the dashboard may name (a histogram by its base name).
var alertMetrics = []string{
	"ctpool_pool_members", "ctpool_pool_desired_members", "ctpool_pool_exhausted",
	"ctpool_reconciler_leader", "ctpool_reconcile_errors_total", "ctpool_reconcile_duration_seconds",
	"ctpool_pool_exhausted_at_ceiling", "ctpool_pool_min_members", "ctpool_pool_max_members",
	"ctpool_pool_spare_members", "ctpool_pool_exhaustion_forecast_seconds",
	"ctpool_pool_ceiling_forecast_seconds", "ctpool_reconcile_last_success_timestamp_seconds",
}

var metricName = regexp.MustCompile(`\bctpool_[a-z_]+`)

// unknownMetrics are the metric names in a query that the reconciler does
// not export.
func unknownMetrics(expr string) []string {
	var bad []string
	for _, m := range metricName.FindAllString(expr, -1) {
		base := m
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(m, suffix); ok && b == "ctpool_reconcile_duration_seconds" {
				base = b
			}
		}
		if !slices.Contains(alertMetrics, base) {
			bad = append(bad, m)
		}
	}
	return bad
}

func runAlerts(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCmd(t, append([]string{"alerts"}, args...)...)
	if code != exitOK {
		t.Fatalf("alerts %v: exit %d: %s", args, code, errOut)
	}
	return out
}

func TestAlertsGolden(t *testing.T) {
	golden.Assert(t, "testdata/alerts-prometheusrule.yaml.golden", runAlerts(t, "-n", "vdi"))
	golden.Assert(t, "testdata/alerts-rules.yaml.golden", runAlerts(t, "-n", "vdi", "--rules-only"))
	golden.Assert(t, "testdata/alerts-grafana.json.golden", runAlerts(t, "--grafana"))
}

// TestAlertsPrometheusRule decodes the PrometheusRule and checks each
// rule's shape: the namespace, the metrics it names, labels and annotations.
func TestAlertsPrometheusRule(t *testing.T) {
	var pr prometheusRule
	if err := yaml.Unmarshal([]byte(runAlerts(t, "-n", "vdi")), &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata.Name != "ctpool-tui" || pr.Metadata.Namespace != "vdi" {
		t.Errorf("%s %s %s/%s", pr.APIVersion, pr.Kind, pr.Metadata.Namespace, pr.Metadata.Name)
	}
	if len(pr.Spec.Groups) != 1 || pr.Spec.Groups[0].Name != "ctpool-tui" {
		t.Fatalf("groups %+v", pr.Spec.Groups)
	}
	var names []string
	for _, r := range pr.Spec.Groups[0].Rules {
		if !slices.Contains(names, r.Alert) {
			names = append(names, r.Alert)
		}
		if bad := unknownMetrics(r.Expr); len(bad) > 0 {
			t.Errorf("%s names metrics the reconciler does not export: %v", r.Alert, bad)
		}
		if s := r.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s: severity %q", r.Alert, s)
		}
		for _, k := range []string{"summary", "description", "runbook"} {
			if r.Annotations[k] == "" {
				t.Errorf("%s has no %s", r.Alert, k)
			}
		}
		if !strings.Contains(r.Annotations["runbook"], "ctpool-tui -n ") {
			t.Errorf("%s: the runbook does not name the dashboard: %s", r.Alert, r.Annotations["runbook"])
		}
		for k, v := range r.Annotations {
			if strings.Contains(v, "http://") || strings.Contains(v, "https://") {
				t.Errorf("%s: %s names a URL: %s", r.Alert, k, v)
			}
		}
	}
	want := []string{"CtpoolPoolExhausted", "CtpoolPoolExhaustedAtCeiling", "CtpoolPoolExhaustionForecast", "CtpoolPoolCeilingForecast",
		"CtpoolMembersUnschedulable", "CtpoolReleaseStuckInMaintenance", "CtpoolReconcilerNotReconciling", "CtpoolPoolNotReconciled", "CtpoolPoolNeverReconciled"}
	if !slices.Equal(names, want) {
		t.Errorf("alerts %v, want %v", names, want)
	}
	// --rules-only is the same group, alone.
	var rf ruleGroups
	if err := yaml.Unmarshal([]byte(runAlerts(t, "-n", "vdi", "--rules-only")), &rf); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(rf)
	b, _ := json.Marshal(pr.Spec)
	if string(a) != string(b) {
		t.Errorf("--rules-only differs from the PrometheusRule's spec:\n%s\n%s", a, b)
	}
}

func TestAlertsThresholdFlags(t *testing.T) {
	out := runAlerts(t, "-n", "vdi", "--rules-only", "--forecast-minutes", "10", "--stale-reconcile", "90s",
		"--exhausted-for", "7m", "--exhausted-fixed-for", "1h30m", "--unschedulable-for", "1h", "--leader-absent-for", "45s")
	for _, want := range []string{"< 600)", "> 90\n", "for: 1m30s\n", "for: 7m\n", "for: 1h30m\n", "for: 1h\n", "for: 45s\n", "the threshold is 10 minutes"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestAlertsFlagsValidated(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--exhausted-for", "0s"}, "--exhausted-for must be a positive duration"},
		{[]string{"--exhausted-fixed-for", "-1m"}, "--exhausted-fixed-for must be a positive duration"},
		{[]string{"--forecast-for", "0"}, "--forecast-for must be a positive duration"},
		{[]string{"--unschedulable-for", "-15m"}, "--unschedulable-for must be a positive duration"},
		{[]string{"--maintenance-stale-for", "0s"}, "--maintenance-stale-for must be a positive duration"},
		{[]string{"--leader-absent-for", "0s"}, "--leader-absent-for must be a positive duration"},
		{[]string{"--stale-reconcile", "-10m"}, "--stale-reconcile must be a positive duration"},
		{[]string{"--stale-reconcile", "1500us"}, "--stale-reconcile must be a whole number of milliseconds"},
		{[]string{"--forecast-minutes", "0"}, "--forecast-minutes must be a positive number"},
		{[]string{"--forecast-minutes", "-5", "--grafana"}, "--forecast-minutes must be a positive number"},
		{[]string{"--rules-only", "--grafana"}, "give one"},
		{[]string{"--exhausted-for", "soon"}, "invalid argument \"soon\" for \"--exhausted-for\""},
		{[]string{"extra"}, "unknown command"},
	} {
		code, out, errOut := runCmd(t, append([]string{"alerts", "-n", "vdi"}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("alerts %v: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", tc.args, code, out, errOut, exitUsage, tc.want)
		}
	}
}

// TestAlertsPromtoolCoversEveryAlert: the promtool tests have, for every
// alert, a case where it fires and one where it must not.
func TestAlertsPromtoolCoversEveryAlert(t *testing.T) {
	raw, err := os.ReadFile("testdata/alerts.promtest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tests []struct {
			Name  string `yaml:"name"`
			Cases []struct {
				Alert     string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tg := range f.Tests {
		for _, c := range tg.Cases {
			if len(c.ExpAlerts) > 0 {
				fires[c.Alert] = true
			} else {
				silent[c.Alert] = true
			}
		}
	}
	for _, r := range alertRules(defaultAlertFlags(), "vdi") {
		if !fires[r.Alert] || !silent[r.Alert] {
			t.Errorf("%s: a case that fires %v, one that must not %v", r.Alert, fires[r.Alert], silent[r.Alert])
		}
	}
}

// promtool is the promtool binary CTPOOL_PROMTOOL names (make promtool
// builds it). Without it the test is skipped, except under CI=true, where a
// skipped check would pass unnoticed.
func promtool(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CTPOOL_PROMTOOL")
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CTPOOL_PROMTOOL is not set and CI=true: make test builds promtool (make promtool) and sets it")
		}
		t.Skip("CTPOOL_PROMTOOL is not set: make promtool builds promtool; make test sets it")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("CTPOOL_PROMTOOL: %v", err)
	}
	return p
}

// TestAlertsPromtool checks the rule file --rules-only prints with the
// default thresholds, and runs the unit tests of testdata/alerts.promtest.yaml
// on it.
func TestAlertsPromtool(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte(runAlerts(t, "-n", "vdi", "--rules-only")), 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("testdata/alerts.promtest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.promtest.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"check", "rules", "--lint=all", "--lint-fatal", rules},
		{"test", "rules", filepath.Join(dir, "alerts.promtest.yaml")},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestGrafanaDashboard decodes the dashboard with the Grafana foundation
// SDK's model, refusing unknown fields, and checks what the SDK does not:
// the metrics, the variables and the panel ids.
func TestGrafanaDashboard(t *testing.T) {
	raw := []byte(runAlerts(t, "--grafana"))
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	if err := sdkErr(d.UnmarshalJSONStrict(raw)); err != nil {
		t.Fatalf("the SDK refuses the dashboard: %v", err)
	}
	if err := sdkErr(d.Validate()); err != nil {
		t.Errorf("the SDK's validation: %v", err)
	}
	defined := map[string]string{}
	for _, v := range d.Templating.List {
		defined[v.Name] = string(v.Type)
	}
	if defined["datasource"] != "datasource" || defined["namespace"] != "query" || defined["pool"] != "query" {
		t.Errorf("variables %v; want datasource (datasource), namespace and pool (query)", defined)
	}
	// Every $variable of the raw JSON is defined or one of Grafana's own.
	uses := regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`).FindAllStringSubmatch(string(raw), -1)
	for _, u := range uses {
		if _, ok := defined[u[1]]; !ok && !strings.HasPrefix(u[1], "__") {
			t.Errorf("$%s is used but not defined", u[1])
		}
	}
	// The SDK's Dashboard checks its panels but drops them (v0.0.22 returns
	// a panel's empty list of errors as an error, and PanelOrRowPanel keeps
	// no panel after an error): decode each panel again, strictly.
	var rawPanels struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &rawPanels); err != nil {
		t.Fatal(err)
	}
	ids := map[uint32]string{}
	queries := 0
	for i, rp := range rawPanels.Panels {
		var p struct{ Panel *dashboard.Panel }
		p.Panel = new(dashboard.Panel)
		if err := sdkErr(p.Panel.UnmarshalJSONStrict(rp)); err != nil {
			t.Errorf("panel %d: %v", i, err)
			continue
		}
		if p.Panel.Id == nil {
			t.Errorf("%s has no id", deref(p.Panel.Title))
			continue
		}
		if prev, dup := ids[*p.Panel.Id]; dup {
			t.Errorf("panels %q and %q share id %d", prev, deref(p.Panel.Title), *p.Panel.Id)
		}
		ids[*p.Panel.Id] = deref(p.Panel.Title)
		if p.Panel.Datasource == nil || deref(p.Panel.Datasource.Uid) != "${datasource}" {
			t.Errorf("%s: datasource %+v; want ${datasource}", deref(p.Panel.Title), p.Panel.Datasource)
		}
		// The panel's targets, decoded again for the same reason.
		var rawTargets struct {
			Targets []json.RawMessage `json:"targets"`
		}
		if err := json.Unmarshal(rp, &rawTargets); err != nil {
			t.Fatal(err)
		}
		if len(rawTargets.Targets) == 0 {
			t.Errorf("%s has no query", deref(p.Panel.Title))
		}
		for _, rt := range rawTargets.Targets {
			var q prometheus.Dataquery
			if err := sdkErr(q.UnmarshalJSONStrict(rt)); err != nil {
				t.Errorf("%s: %v", deref(p.Panel.Title), err)
				continue
			}
			queries++
			if q.Datasource == nil || deref(q.Datasource.Uid) != "${datasource}" {
				t.Errorf("%s: the query's datasource %+v; want ${datasource}", deref(p.Panel.Title), q.Datasource)
			}
			if bad := unknownMetrics(q.Expr); len(bad) > 0 {
				t.Errorf("%s names metrics the reconciler does not export: %v", deref(p.Panel.Title), bad)
			}
			if !metricName.MatchString(q.Expr) {
				t.Errorf("%s: %s names no ctpool metric", deref(p.Panel.Title), q.Expr)
			}
		}
	}
	if len(ids) < 9 || queries < 9 {
		t.Errorf("%d panels, %d queries", len(ids), queries)
	}
	// An unknown field is refused: the check above has teeth.
	bad := strings.Replace(string(raw), `"title": "ctpool-tui"`, `"title": "ctpool-tui", "titel": "x"`, 1)
	if err := sdkErr(new(dashboard.Dashboard).UnmarshalJSONStrict([]byte(bad))); err == nil {
		t.Error("the SDK took an unknown field of the dashboard")
	}
	bad = strings.Replace(string(rawPanels.Panels[0]), `"type": "timeseries"`, `"type": "timeseries", "titel": "x"`, 1)
	if err := sdkErr(new(dashboard.Panel).UnmarshalJSONStrict([]byte(bad))); err == nil {
		t.Error("the SDK took an unknown field of a panel")
	}
	bad = strings.Replace(string(rawPanels.Panels[0]), `"showLegend": true`, `"showLegend": true, "shwo": 1`, 1)
	if err := sdkErr(new(dashboard.Panel).UnmarshalJSONStrict([]byte(bad))); err == nil {
		t.Error("the SDK took an unknown field of a time series panel's options")
	}
}

// sdkErr is the SDK's error, or nil for its empty list of errors: it
// returns a nil cog.BuildErrors as a non-nil error.
func sdkErr(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
