package alerts

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ctpool-tui/ctpool-tui/internal/golden"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// rulesYAML is the PrometheusRule of the default thresholds in namespace
// vdi, or with rulesOnly the rule file.
func rulesYAML(t *testing.T, rulesOnly bool) string {
	t.Helper()
	out, err := RulesYAML(DefaultThresholds(), "vdi", rulesOnly)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// dashboardJSON is the dashboard of the default thresholds.
func dashboardJSON(t *testing.T) string {
	t.Helper()
	out, err := Dashboard(DefaultThresholds())
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestAlertsGolden(t *testing.T) {
	golden.Assert(t, "testdata/alerts-prometheusrule.yaml.golden", rulesYAML(t, false))
	golden.Assert(t, "testdata/alerts-rules.yaml.golden", rulesYAML(t, true))
	golden.Assert(t, "testdata/alerts-grafana.json.golden", dashboardJSON(t))
}

// TestAlertsPrometheusRule decodes the PrometheusRule and checks each
// rule's shape: the namespace, labels and annotations (the metrics it names:
// TestQueriesNameRegisteredMetrics).
func TestAlertsPrometheusRule(t *testing.T) {
	var pr prometheusRule
	if err := yaml.Unmarshal([]byte(rulesYAML(t, false)), &pr); err != nil {
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
		"CtpoolRolloutHalted", "CtpoolMembersUnschedulable", "CtpoolReleaseStuckInMaintenance", "CtpoolReconcilerNotReconciling", "CtpoolPoolNotReconciled", "CtpoolPoolNeverReconciled"}
	if !slices.Equal(names, want) {
		t.Errorf("alerts %v, want %v", names, want)
	}
	// --rules-only is the same group, alone.
	var rf ruleGroups
	if err := yaml.Unmarshal([]byte(rulesYAML(t, true)), &rf); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(rf)
	b, _ := json.Marshal(pr.Spec)
	if string(a) != string(b) {
		t.Errorf("--rules-only differs from the PrometheusRule's spec:\n%s\n%s", a, b)
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
	for _, r := range alertRules(DefaultThresholds(), "vdi") {
		if !fires[r.Alert] || !silent[r.Alert] {
			t.Errorf("%s: a case that fires %v, one that must not %v", r.Alert, fires[r.Alert], silent[r.Alert])
		}
	}
}

// TestPromtoolSeriesAreRegistered: the promtool tests' input series are of
// metrics the controller registers (not deprecated aliases), with states it
// sets, and every metric a rule selects has input series there: a rename
// cannot leave the promtool tests feeding series no rule reads, or a rule's
// metric untested.
func TestPromtoolSeriesAreRegistered(t *testing.T) {
	raw, err := os.ReadFile("testdata/alerts.promtest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tests []struct {
			Name   string `yaml:"name"`
			Series []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	reg := registered()
	fed := map[string]bool{}
	for _, tg := range f.Tests {
		for _, in := range tg.Series {
			p, err := parsePromQL(in.Series)
			if err != nil || len(p.selectors) != 1 {
				t.Errorf("%s: the series %q: %v", tg.Name, in.Series, err)
				continue
			}
			s := p.selectors[0]
			m, ok := reg[s.name]
			switch {
			case !ok:
				t.Errorf("%s: %s is not a metric the controller registers", tg.Name, in.Series)
				continue
			case m.Deprecated:
				t.Errorf("%s: %s is a deprecated alias", tg.Name, in.Series)
			}
			fed[m.Name] = true
			for _, mt := range s.matchers {
				if mt.label == controller.MetricLabelState && !slices.Contains(controller.MemberStates(), mt.value) {
					t.Errorf("%s: %s has a state the controller never sets", tg.Name, in.Series)
				}
			}
		}
	}
	rules, _ := allQueries(t)
	ruleMetrics, _ := used(t, rules)
	for _, name := range slices.Sorted(maps.Keys(ruleMetrics)) {
		if !fed[name] {
			t.Errorf("a rule selects %s, but no promtool test has a series of it", name)
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
	if err := os.WriteFile(rules, []byte(rulesYAML(t, true)), 0o644); err != nil {
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
