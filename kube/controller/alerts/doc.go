// Package alerts builds what watches the reconciler's metrics: the
// Prometheus alerting rules (a PrometheusRule for the prometheus-operator, or
// a rule file) and a Grafana dashboard, for the thresholds given. ctpool-tui
// alerts prints them; its flags are the Thresholds.
//
// testdata/alerts.promtest.yaml holds promtool unit tests of the rules
// (make promtool runs them).
package alerts
