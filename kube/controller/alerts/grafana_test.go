package alerts

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

// TestGrafanaDashboard decodes the dashboard with the Grafana foundation
// SDK's model, refusing unknown fields, and checks what the SDK does not:
// the variables, the panel ids and the data sources (the metrics the
// queries name: TestQueriesNameRegisteredMetrics).
func TestGrafanaDashboard(t *testing.T) {
	raw := []byte(dashboardJSON(t))
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
