package controller

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The names of the metrics the reconciler serves on /metrics (Handler). The
// registrations use them, and the alert rules and the dashboard (package
// alerts) build their queries from them; Metrics lists every one registered.
const (
	// MetricPoolMembers has a series per MetricLabelState value (MemberStates).
	MetricPoolMembers            = "ctpool_pool_members"
	MetricPoolDesiredMembers     = "ctpool_pool_desired_members"
	MetricPoolExhausted          = "ctpool_pool_exhausted"
	MetricPoolClaimsExpiring     = "ctpool_pool_claims_expiring"
	MetricPoolExhaustedAtCeiling = "ctpool_pool_exhausted_at_ceiling"
	MetricPoolMinMembers         = "ctpool_pool_min_members"
	MetricPoolMaxMembers         = "ctpool_pool_max_members"
	MetricPoolSpareMembers       = "ctpool_pool_spare_members"
	MetricPoolExhaustionForecast = "ctpool_pool_exhaustion_forecast_seconds"
	MetricPoolCeilingForecast    = "ctpool_pool_ceiling_forecast_seconds"
	MetricPoolRolloutHalted      = "ctpool_pool_rollout_halted"
	MetricReconcileLastSuccess   = "ctpool_reconcile_last_success_timestamp_seconds"
	MetricReconcileDuration      = "ctpool_reconcile_duration_seconds"
	MetricReconcileStepDuration  = "ctpool_reconcile_step_duration_seconds"
	MetricReconcileErrors        = "ctpool_reconcile_errors_total"
	MetricReconcileActions       = "ctpool_reconcile_actions_total"
	MetricReconcilerLeader       = "ctpool_reconciler_leader"

	// The work queue's metrics (client-go's workqueue metrics, with the
	// ctpool_ prefix).
	MetricWorkqueueDepth          = "ctpool_workqueue_depth"
	MetricWorkqueueAdds           = "ctpool_workqueue_adds_total"
	MetricWorkqueueQueueDuration  = "ctpool_workqueue_queue_duration_seconds"
	MetricWorkqueueWorkDuration   = "ctpool_workqueue_work_duration_seconds"
	MetricWorkqueueUnfinishedWork = "ctpool_workqueue_unfinished_work_seconds"
	MetricWorkqueueLongestRunning = "ctpool_workqueue_longest_running_processor_seconds"
	MetricWorkqueueRetries        = "ctpool_workqueue_retries_total"
)

// The deprecated aliases, kept one release: ctpool_pool_<state> for
// MetricPoolMembers{state="<state>"} and ctpool_pool_desired for
// MetricPoolDesiredMembers.
const (
	deprecatedStatePrefix = "ctpool_pool_"
	deprecatedDesired     = "ctpool_pool_desired"
)

// The labels of the metrics.
const (
	MetricLabelNamespace = "namespace"
	MetricLabelPool      = "pool"
	// MetricLabelState is MetricPoolMembers' state (MemberStates).
	MetricLabelState = "state"
	// MetricLabelStep is the step of the reconcile histograms and counters:
	// engine.Step names, and read and spec for errors.
	MetricLabelStep = "step"
	// MetricLabelQueue is the work queue's name on its metrics.
	MetricLabelQueue = "name"
)

// The values of MetricPoolMembers' state label. They overlap: a member can
// be ready, claimed and drifted at once.
const (
	MembersReady         = "ready"
	MembersClaimed       = "claimed"
	MembersFree          = "free"
	MembersUnschedulable = "unschedulable"
	MembersDrifted       = "drifted"
	MembersFailed        = "failed"
	// MembersMaintenanceStale are the members the reconciler took for a
	// release or a step over 10 minutes ago (engine's Member.InMaintenance and
	// HoldStale).
	MembersMaintenanceStale = "maintenance_stale"
)

// MemberStates are the values of MetricPoolMembers' state label, in
// docs/operations.md's order: memberStates' and MembersMaintenanceStale.
func MemberStates() []string {
	var out []string
	for _, ms := range memberStates(engine.Status{}) {
		out = append(out, ms.state)
	}
	return append(out, MembersMaintenanceStale)
}

// The types of Metric.
const (
	MetricGauge     = "gauge"
	MetricCounter   = "counter"
	MetricHistogram = "histogram"
)

// Metric is a metric the reconciler registers.
type Metric struct {
	Name string
	// Type is MetricGauge, MetricCounter or MetricHistogram; a histogram's
	// series are Name_bucket, Name_sum and Name_count.
	Type   string
	Labels []string
	// Deprecated marks an alias kept one release; its help names the
	// metric that replaces it.
	Deprecated bool
}

// Metrics are the ctpool_ metrics the reconciler registers, in the order it
// registers them: the list its registrations record (the registry's
// methods), not a copy. The Go and process collectors' metrics are not
// listed.
func Metrics() []Metric {
	return slices.Clone(newMetrics(&Controller{}).reg.metrics)
}

// registry is the controller's Prometheus registry, and the ctpool_ metrics
// registered on it: each is made and registered by one of its methods, which
// records it.
type registry struct {
	*prometheus.Registry
	metrics []Metric
}

func newRegistry() *registry {
	return &registry{Registry: prometheus.NewRegistry()}
}

func (r *registry) add(c prometheus.Collector, m Metric) {
	r.MustRegister(c)
	m.Labels = slices.Clone(m.Labels)
	r.metrics = append(r.metrics, m)
}

func (r *registry) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	r.add(g, Metric{Name: name, Type: MetricGauge, Labels: labels})
	return g
}

// deprecatedGaugeVec is an alias of a pool's gauge, kept one release; use is
// what replaces it.
func (r *registry) deprecatedGaugeVec(name, use string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: name,
		Help: "Deprecated: use " + use + " instead; this name goes in the next release.",
	}, poolLabels)
	r.add(g, Metric{Name: name, Type: MetricGauge, Labels: poolLabels, Deprecated: true})
	return g
}

func (r *registry) gaugeFunc(name, help string, f func() float64) {
	r.add(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f), Metric{Name: name, Type: MetricGauge})
}

func (r *registry) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	r.add(c, Metric{Name: name, Type: MetricCounter, Labels: labels})
	return c
}

// histogramVec is a histogram of durations, in reconcileBuckets.
func (r *registry) histogramVec(name, help string, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: reconcileBuckets}, labels)
	r.add(h, Metric{Name: name, Type: MetricHistogram, Labels: labels})
	return h
}
