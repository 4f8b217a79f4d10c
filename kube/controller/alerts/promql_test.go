package alerts

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// selector is a series a PromQL expression selects: a metric name and its
// label matchers.
type selector struct {
	name     string
	matchers []matcher
}

type matcher struct{ label, op, value string }

// promQL is what parsePromQL finds in an expression: the selectors and the
// labels of its by, without, on, ignoring and group_ clauses.
type promQL struct {
	selectors []selector
	grouping  []string
}

// promKeywords are PromQL's words that are neither metrics nor functions,
// and those of them that a list of labels follows.
var (
	promKeywords = map[string]bool{
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	}
	promLabelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	// promAggregations are PromQL's aggregation operators, which a clause
	// (by, without) may separate from their parenthesis.
	promAggregations = map[string]bool{
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
		"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
	}
)

// parsePromQL tokenizes a PromQL expression just enough to find its metric
// names: an identifier is a keyword, an aggregation, a function (before
// "("), a label of a clause's list or of a matcher, or else a metric name.
// Strings, numbers, durations and ranges ([5m], [$__rate_interval]) are
// skipped. It is no parser: it assumes an expression Prometheus accepts,
// which promtool checks (TestAlertsPromtool).
func parsePromQL(expr string) (promQL, error) {
	var q promQL
	s := expr
	skipSpace := func() { s = strings.TrimLeft(s, " \t\n") }
	ident := func() string {
		i := 0
		for i < len(s) && (s[i] == '_' || s[i] == ':' || 'a' <= s[i] && s[i] <= 'z' || 'A' <= s[i] && s[i] <= 'Z' || i > 0 && '0' <= s[i] && s[i] <= '9') {
			i++
		}
		id := s[:i]
		s = s[i:]
		return id
	}
	quoted := func() (string, error) {
		if s == "" {
			return "", fmt.Errorf("%q: a string expected at the end", expr)
		}
		quote := s[0]
		for i := 1; i < len(s); i++ {
			if s[i] == '\\' && quote != '`' {
				i++
				continue
			}
			if s[i] == quote {
				lit := s[:i+1]
				s = s[i+1:]
				if quote == '\'' { // strconv.Unquote takes single quotes for a rune only
					lit = `"` + strings.ReplaceAll(lit[1:len(lit)-1], `"`, `\"`) + `"`
				}
				return strconv.Unquote(lit)
			}
		}
		return "", fmt.Errorf("%q: unterminated string", expr)
	}
	labelList := func() error { // ( label, label ... )
		s = s[1:]
		for {
			skipSpace()
			switch {
			case s == "":
				return fmt.Errorf("%q: unterminated label list", expr)
			case s[0] == ')':
				s = s[1:]
				return nil
			case s[0] == ',':
				s = s[1:]
			default:
				l := ident()
				if l == "" {
					return fmt.Errorf("%q: a label expected at %q", expr, s)
				}
				q.grouping = append(q.grouping, l)
			}
		}
	}
	matchers := func() ([]matcher, error) { // { label op "value", ... }
		s = s[1:]
		var ms []matcher
		for {
			skipSpace()
			switch {
			case s == "":
				return nil, fmt.Errorf("%q: unterminated matchers", expr)
			case s[0] == '}':
				s = s[1:]
				return ms, nil
			case s[0] == ',':
				s = s[1:]
				continue
			}
			l := ident()
			skipSpace()
			op := ""
			for _, o := range []string{"=~", "!~", "!=", "="} {
				if strings.HasPrefix(s, o) {
					op = o
					break
				}
			}
			if l == "" || op == "" {
				return nil, fmt.Errorf("%q: a matcher expected at %q", expr, s)
			}
			s = s[len(op):]
			skipSpace()
			v, err := quoted()
			if err != nil {
				return nil, err
			}
			ms = append(ms, matcher{l, op, v})
		}
	}
	for {
		skipSpace()
		if s == "" {
			return q, nil
		}
		switch c := s[0]; {
		case c == '"' || c == '\'' || c == '`':
			if _, err := quoted(); err != nil {
				return q, err
			}
		case c == '[': // a range or a subquery's: durations and variables
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return q, fmt.Errorf("%q: unterminated range", expr)
			}
			s = s[end+1:]
		case '0' <= c && c <= '9' || c == '.': // a number, or a duration (offset 5m)
			s = strings.TrimLeft(s, "0123456789.eEdhmswy")
		case c == '{': // a selector by its matchers alone: {__name__="..."}
			ms, err := matchers()
			if err != nil {
				return q, err
			}
			name := ""
			for _, m := range ms {
				if m.label == "__name__" && m.op == "=" {
					name = m.value
				}
			}
			if name == "" {
				return q, fmt.Errorf("%q: a selector without a metric name", expr)
			}
			q.selectors = append(q.selectors, selector{name, ms})
		case c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			id := ident()
			skipSpace()
			next := byte(0)
			if s != "" {
				next = s[0]
			}
			switch {
			case promLabelLists[id] && next == '(':
				if err := labelList(); err != nil {
					return q, err
				}
			case promKeywords[id] || promAggregations[id]:
			case next == '(': // a function
			default:
				sel := selector{name: id}
				if next == '{' {
					ms, err := matchers()
					if err != nil {
						return q, err
					}
					sel.matchers = ms
				}
				q.selectors = append(q.selectors, sel)
			}
		default: // operators, parentheses, commas
			s = s[1:]
		}
	}
}

func TestParsePromQL(t *testing.T) {
	for _, tc := range []struct {
		expr      string
		selectors []string
		grouping  []string
	}{
		{`max by (namespace, pool) (a_b{state="x", pool=~"$pool"}) > 0`, []string{`a_b{state="x",pool=~"$pool"}`}, []string{"namespace", "pool"}},
		{`max(l) < 1 or absent(l)`, []string{"l", "l"}, nil},
		{`max by (a) (x) + sum without(b) (count(y)) - topk(3, z)`, []string{"x", "y", "z"}, []string{"a", "b"}},
		{`sum(rate(c_total{n!="a,b}"}[$__rate_interval])) by (n) / on (n) group_left (m) g offset 5m`, []string{`c_total{n!="a,b}"}`, "g"}, []string{"n", "n", "m"}},
		{`histogram_quantile(0.95, sum by (le) (rate(h_bucket[5m]))) unless on(a) {__name__="x", a='b'}`, []string{"h_bucket", `x{__name__="x",a="b"}`}, []string{"le", "a"}},
		{`time() - a > 600 and bool 1e3`, []string{"a"}, nil},
		{`label_replace(a, "dst", "ctpool_not_a_metric", "src", "(.*)")`, []string{"a"}, nil},
	} {
		q, err := parsePromQL(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		var got []string
		for _, s := range q.selectors {
			var ms []string
			for _, m := range s.matchers {
				ms = append(ms, m.label+m.op+strconv.Quote(m.value))
			}
			if ms == nil {
				got = append(got, s.name)
			} else {
				got = append(got, s.name+"{"+strings.Join(ms, ",")+"}")
			}
		}
		if !slices.Equal(got, tc.selectors) || !slices.Equal(q.grouping, tc.grouping) {
			t.Errorf("%s: selectors %q, grouping %q; want %q, %q", tc.expr, got, q.grouping, tc.selectors, tc.grouping)
		}
	}
	for _, bad := range []string{`a{b="c"`, `a{b}`, `{b="c"}`, `sum by (a`, `a{b="c}`} {
		if _, err := parsePromQL(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// query is one PromQL query the alerts or the dashboard hold; where names it.
type query struct {
	where, expr string
	// label is set on a dashboard variable's label_values(expr, label).
	label string
}

// labelValues is a dashboard variable's query: label_values(selector, label).
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// allQueries are the rules' expressions and the dashboard's queries (its
// panels' targets and its variables), at the default thresholds, read from
// the dashboard as it is printed.
func allQueries(t *testing.T) (rules, dashboard []query) {
	t.Helper()
	for _, r := range alertRules(DefaultThresholds(), "vdi") {
		rules = append(rules, query{where: "rule " + r.Alert + " (" + r.Labels["pool_kind"] + ")", expr: r.Expr})
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr  string `json:"expr"`
				RefID string `json:"refId"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal([]byte(dashboardJSON(t)), &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			dashboard = append(dashboard, query{where: "panel " + p.Title + " query " + tg.RefID, expr: tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)["query"].(string)
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(selector, label)", v.Name, q)
			continue
		}
		dashboard = append(dashboard, query{where: "variable " + v.Name, expr: m[1], label: m[2]})
	}
	if len(rules) == 0 || len(dashboard) == 0 {
		t.Fatalf("%d rules, %d dashboard queries", len(rules), len(dashboard))
	}
	return rules, dashboard
}

// registered are the metrics the controller registers, by the names of
// their series: a histogram's _bucket, _sum and _count.
func registered() map[string]controller.Metric {
	out := map[string]controller.Metric{}
	for _, m := range controller.Metrics() {
		if m.Type == controller.MetricHistogram {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				out[m.Name+suffix] = m
			}
			continue
		}
		out[m.Name] = m
	}
	return out
}

// used are the metrics (by their registered names) and the member states
// that queries select.
func used(t *testing.T, qs []query) (metrics, states map[string]bool) {
	t.Helper()
	reg := registered()
	metrics, states = map[string]bool{}, map[string]bool{}
	for _, q := range qs {
		p, err := parsePromQL(q.expr)
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		for _, s := range p.selectors {
			if m, ok := reg[s.name]; ok {
				metrics[m.Name] = true
			}
			for _, mt := range s.matchers {
				if s.name == controller.MetricPoolMembers && mt.label == controller.MetricLabelState && mt.op == "=" {
					states[mt.value] = true
				}
			}
		}
	}
	return metrics, states
}

// TestQueriesNameRegisteredMetrics: every metric a rule or a dashboard query
// selects is one the controller registers (controller.Metrics, the list its
// registrations record), not a deprecated alias; its matchers and the
// labels the query groups by are the metric's labels; a state it matches is
// one of controller.MemberStates. Every word of the printed rules and
// dashboard that starts with ctpool_ (an annotation's too) is a registered
// series. A renamed metric, label or state fails it.
func TestQueriesNameRegisteredMetrics(t *testing.T) {
	reg := registered()
	states := controller.MemberStates()
	rules, dashboard := allQueries(t)
	for _, q := range append(rules, dashboard...) {
		p, err := parsePromQL(q.expr)
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		if len(p.selectors) == 0 {
			t.Errorf("%s: %s selects no metric", q.where, q.expr)
		}
		labels, known := map[string]bool{}, true
		for _, s := range p.selectors {
			m, ok := reg[s.name]
			if !ok {
				t.Errorf("%s: %s is not a metric the controller registers (controller.Metrics): %s", q.where, s.name, q.expr)
				known = false
				continue
			}
			if m.Deprecated {
				t.Errorf("%s: %s is a deprecated alias", q.where, s.name)
			}
			for _, l := range m.Labels {
				labels[l] = true
			}
			if strings.HasSuffix(s.name, "_bucket") && m.Type == controller.MetricHistogram {
				labels["le"] = true
			}
			for _, mt := range s.matchers {
				if !slices.Contains(m.Labels, mt.label) {
					t.Errorf("%s: %s has no label %s: %s", q.where, s.name, mt.label, q.expr)
				}
				if mt.label == controller.MetricLabelState && (mt.op == "=" || mt.op == "!=") && !slices.Contains(states, mt.value) {
					t.Errorf("%s: %s{%s=%q} matches a state the controller never sets (controller.MemberStates: %v)", q.where, s.name, mt.label, mt.value, states)
				}
			}
		}
		for _, l := range append(p.grouping, q.label) {
			if known && l != "" && !labels[l] {
				t.Errorf("%s: the label %s is on none of its metrics: %s", q.where, l, q.expr)
			}
		}
	}
	// The text too: an annotation or a description that names a metric.
	word := regexp.MustCompile(`\bctpool_[a-zA-Z0-9_:]*`)
	for _, out := range []string{rulesYAML(t, false), dashboardJSON(t)} {
		for _, w := range word.FindAllString(out, -1) {
			if _, ok := reg[w]; !ok {
				t.Errorf("the output names %s, which the controller does not register", w)
			}
		}
	}
}

// unwatched are the registered metrics that neither the rules nor the
// dashboard select, and why; deprecated aliases need no entry. Every other
// registered metric must be selected by one of them.
var unwatched = map[string]string{
	controller.MetricPoolClaimsExpiring:      "the TUI shows expiring claims; a claim that expires is no fault",
	controller.MetricPoolMinMembers:          "an elastic pool's bounds are its definition's; the ceiling (max) is on the dashboard",
	controller.MetricPoolSpareMembers:        "the spare target is the definition's",
	controller.MetricReconcileStepDuration:   "the dashboard shows whole reconciles; steps are for benchmarks and profiling",
	controller.MetricReconcileActions:        "actions are no fault; errors are on the dashboard",
	controller.MetricWorkqueueDepth:          "the work queue's metrics are client-go's, for a generic controller dashboard",
	controller.MetricWorkqueueAdds:           "the work queue's metrics are client-go's, for a generic controller dashboard",
	controller.MetricWorkqueueQueueDuration:  "the work queue's metrics are client-go's, for a generic controller dashboard",
	controller.MetricWorkqueueWorkDuration:   "the work queue's metrics are client-go's, for a generic controller dashboard",
	controller.MetricWorkqueueUnfinishedWork: "the work queue's metrics are client-go's, for a generic controller dashboard",
	controller.MetricWorkqueueLongestRunning: "the work queue's metrics are client-go's, for a generic controller dashboard",
	controller.MetricWorkqueueRetries:        "the work queue's metrics are client-go's, for a generic controller dashboard",
}

// unwatchedStates are the member states neither the rules nor the dashboard
// select, and why.
var unwatchedStates = map[string]string{
	controller.MembersReady:   "free and claimed are what a user meets; ready overlaps both",
	controller.MembersDrifted: "drifted members are replaced by the reconcile once free; the TUI shows them",
	controller.MembersFailed:  "failed members are replaced by the reconcile; one that is not shows as not reconciled",
}

// TestRulesAndDashboardCoverTheMetrics: every metric the controller
// registers (not a deprecated alias) and every member state is selected by a
// rule or the dashboard, unless unwatched says why not; an unwatched entry
// is registered and indeed unselected. Every metric and state a rule
// watches is on the dashboard too, where an alert is looked into.
func TestRulesAndDashboardCoverTheMetrics(t *testing.T) {
	rules, dashboard := allQueries(t)
	ruleMetrics, ruleStates := used(t, rules)
	dashMetrics, dashStates := used(t, dashboard)
	all := map[string]controller.Metric{}
	for _, m := range controller.Metrics() {
		all[m.Name] = m
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		m, selected := all[name], ruleMetrics[name] || dashMetrics[name]
		why, skipped := unwatched[name]
		switch {
		case m.Deprecated && selected:
			t.Errorf("%s is a deprecated alias, but a query selects it", name)
		case m.Deprecated:
		case skipped && selected:
			t.Errorf("%s is selected, but unwatched says %q: remove it from unwatched", name, why)
		case !skipped && !selected:
			t.Errorf("%s is registered but neither a rule nor the dashboard selects it: watch it, or say why not in unwatched", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(unwatched)) {
		if _, ok := all[name]; !ok {
			t.Errorf("unwatched names %s, which the controller does not register", name)
		}
	}
	for _, st := range controller.MemberStates() {
		selected := ruleStates[st] || dashStates[st]
		why, skipped := unwatchedStates[st]
		switch {
		case skipped && selected:
			t.Errorf("the state %s is selected, but unwatchedStates says %q", st, why)
		case !skipped && !selected:
			t.Errorf("the state %s is set but neither a rule nor the dashboard selects it: watch it, or say why not in unwatchedStates", st)
		}
	}
	for _, st := range slices.Sorted(maps.Keys(unwatchedStates)) {
		if !slices.Contains(controller.MemberStates(), st) {
			t.Errorf("unwatchedStates names %s, which is no state of %s", st, controller.MetricPoolMembers)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ruleMetrics)) {
		if !dashMetrics[name] {
			t.Errorf("a rule watches %s, but the dashboard does not show it", name)
		}
	}
	for _, st := range slices.Sorted(maps.Keys(ruleStates)) {
		if !dashStates[st] {
			t.Errorf("a rule watches the state %s, but the dashboard does not show it", st)
		}
	}
}
