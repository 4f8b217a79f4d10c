package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// metrics are the controller's Prometheus metrics, on a registry of its own.
type metrics struct {
	reg *registry
	// members is MetricPoolMembers{state}.
	members  *prometheus.GaugeVec
	desired  *prometheus.GaugeVec
	exhaust  *prometheus.GaugeVec
	expiring *prometheus.GaugeVec
	// Elastic pools and the forecast (elasticMetrics).
	atCeiling, minMembers, maxMembers, spareMembers *prometheus.GaugeVec
	forecastEmpty, forecastCeiling                  *prometheus.GaugeVec
	lastSuccess, rolloutHalted                      *prometheus.GaugeVec
	// deprecated are the gauges of one state each, by state, that
	// MetricPoolMembers replaces, and deprecatedDesired the one
	// MetricPoolDesiredMembers replaces: ctpool_pool_<state> and
	// ctpool_pool_desired, kept one release as aliases.
	deprecated        map[string]*prometheus.GaugeVec
	deprecatedDesired *prometheus.GaugeVec
	duration          *prometheus.HistogramVec
	steps             *prometheus.HistogramVec
	errors            *prometheus.CounterVec
	actions           *prometheus.CounterVec
	queue             queueMetrics
}

var poolLabels = []string{MetricLabelNamespace, MetricLabelPool}

// stateCount is one series of MetricPoolMembers: a member state and how
// many members are in it.
type stateCount struct {
	state string
	n     int
}

// memberStates are the states of MetricPoolMembers, each a count of
// engine.Status, in docs/operations.md's order. They overlap: a member can be ready,
// claimed and drifted at once.
func memberStates(st engine.Status) []stateCount {
	return []stateCount{
		{MembersReady, st.Ready}, {MembersClaimed, st.Claimed}, {MembersFree, st.Free},
		{MembersUnschedulable, st.Unschedulable}, {MembersDrifted, st.Drifted}, {MembersFailed, st.Failed},
	}
}

// queueName names the work queue: the MetricLabelQueue label of the
// ctpool_workqueue_ metrics.
const queueName = "ctpool-pools"

// reconcileBuckets are the buckets of every duration histogram: 1ms to 262s.
var reconcileBuckets = prometheus.ExponentialBuckets(0.001, 4, 10)

func newMetrics(c *Controller) *metrics {
	r := newRegistry()
	m := &metrics{reg: r, deprecated: map[string]*prometheus.GaugeVec{}}
	m.members = r.gaugeVec(MetricPoolMembers, "Members of the pool in a state, as engine.Observe counts them after each reconcile: ready (the Pod is Running and Ready), claimed (by a user, expired claims included), free (a claim can be given to it now), unschedulable (the scheduler cannot place its Pod), drifted (built from another source than the definition's), failed. States overlap: do not sum them.",
		MetricLabelNamespace, MetricLabelPool, MetricLabelState)
	m.desired = r.gaugeVec(MetricPoolDesiredMembers, "Members the pool definition asks for (its size).", poolLabels...)
	m.exhaust = r.gaugeVec(MetricPoolExhausted, "1 when the pool has members but none is free.", poolLabels...)
	m.expiring = r.gaugeVec(MetricPoolClaimsExpiring, "Claims that expire within 10 minutes (not yet expired).", poolLabels...)
	m.atCeiling = r.gaugeVec(MetricPoolExhaustedAtCeiling, "Elastic pools only: 1 when the pool is at its maxSize and no member is free (a claim fails; below the ceiling a claim grows the pool).", poolLabels...)
	m.minMembers = r.gaugeVec(MetricPoolMinMembers, "Elastic pools only: the definition's minSize.", poolLabels...)
	m.maxMembers = r.gaugeVec(MetricPoolMaxMembers, "Elastic pools only: the definition's maxSize (the ceiling).", poolLabels...)
	m.spareMembers = r.gaugeVec(MetricPoolSpareMembers, "Elastic pools only: the free members the reconciler keeps ready (the spare target).", poolLabels...)
	m.forecastEmpty = r.gaugeVec(MetricPoolExhaustionForecast, "Seconds until no member is free at the pool's current size, at the recent claim rate (engine.ForecastFrom on the recorded history); present only while that rate exhausts the pool within 24 hours.", poolLabels...)
	m.forecastCeiling = r.gaugeVec(MetricPoolCeilingForecast, "Elastic pools only: seconds until the claims reach maxSize at the recent claim rate; present only while that rate reaches it within 24 hours.", poolLabels...)
	m.rolloutHalted = r.gaugeVec(MetricPoolRolloutHalted, "1 while the pool's rollout of a new source is halted: its new members failed or were not Ready within the deadline, and no further member is replaced until an apply or a resume.", poolLabels...)
	m.lastSuccess = r.gaugeVec(MetricReconcileLastSuccess, "Unix time of the pool's last reconcile that ended without an error.", poolLabels...)
	for _, ms := range memberStates(engine.Status{}) {
		m.deprecated[ms.state] = r.deprecatedGaugeVec(deprecatedStatePrefix+ms.state, MetricPoolMembers+`{`+MetricLabelState+`="`+ms.state+`"}`)
	}
	m.deprecatedDesired = r.deprecatedGaugeVec(deprecatedDesired, MetricPoolDesiredMembers)
	m.duration = r.histogramVec(MetricReconcileDuration, "Time one reconcile of a pool took, reads included.", poolLabels...)
	m.steps = r.histogramVec(MetricReconcileStepDuration, "Time one step of a pool's reconcile took: read (the first read of the pool), create, start, replace, delete and status (engine.Step names); a step with nothing to do is not observed.",
		MetricLabelNamespace, MetricLabelPool, MetricLabelStep)
	m.errors = r.counterVec(MetricReconcileErrors, "Failures of reconcile steps: create, start, replace, delete and status (engine.Step names), read (the pool could not be read) and spec (a broken definition).",
		MetricLabelNamespace, MetricLabelPool, MetricLabelStep)
	m.actions = r.counterVec(MetricReconcileActions, "Member actions reconciles took, by step.", MetricLabelNamespace, MetricLabelPool, MetricLabelStep)
	r.gaugeFunc(MetricReconcilerLeader, "1 while this instance runs the workers (the leader, or the only instance).", func() float64 { return b2f(c.Leading()) })
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.queue = newQueueMetrics(r)
	return m
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// record updates a pool's metrics after a reconcile. last is the snapshot the
// engine read last (nil when it read none) and seen its view when already
// observed: the gauges are engine.Observe's status of it. A pool whose
// definition is gone loses its series.
func (m *metrics) record(k engine.PoolRef, res engine.ReconcileResult, err error, last *engine.Snapshot, seen *engine.PoolView, now time.Time, took time.Duration) {
	if errors.Is(err, engine.ErrPoolNotFound) {
		m.forget(k)
		return
	}
	m.duration.WithLabelValues(k.Namespace, k.Name).Observe(took.Seconds())
	for _, st := range res.Timings {
		m.steps.WithLabelValues(k.Namespace, k.Name, st.Step.String()).Observe(st.Took.Seconds())
	}
	counted := false
	for _, a := range res.Actions {
		switch {
		case a.Err != nil:
			m.errors.WithLabelValues(k.Namespace, k.Name, a.Step.String()).Inc()
			counted = true
		case a.Skipped == "":
			m.actions.WithLabelValues(k.Namespace, k.Name, a.Step.String()).Inc()
		}
	}
	if err != nil && !counted {
		step := "spec"
		switch {
		case last == nil:
			step = "read"
		case errors.As(err, new(*engine.StepError)):
			step = engine.StepStatus.String() // the status re-read failed
		}
		m.errors.WithLabelValues(k.Namespace, k.Name, step).Inc()
	}
	if last == nil {
		return
	}
	if last.ConfigMap == nil {
		m.forget(k)
		return
	}
	var v engine.PoolView
	if seen != nil {
		v = *seen
	} else {
		v = engine.Observe(*last, now)
	}
	st := v.Status
	for _, ms := range memberStates(st) {
		m.members.WithLabelValues(k.Namespace, k.Name, ms.state).Set(float64(ms.n))
	}
	m.desired.WithLabelValues(k.Namespace, k.Name).Set(float64(st.Desired))
	m.exhaust.WithLabelValues(k.Namespace, k.Name).Set(b2f(st.Exhausted))
	m.expiring.WithLabelValues(k.Namespace, k.Name).Set(float64(ClaimsExpiring(v, now)))
	for _, ms := range memberStates(st) {
		m.deprecated[ms.state].WithLabelValues(k.Namespace, k.Name).Set(float64(ms.n))
	}
	m.deprecatedDesired.WithLabelValues(k.Namespace, k.Name).Set(float64(st.Desired))
	stale := 0
	for i := range v.Members {
		if mm := &v.Members[i]; mm.InMaintenance() && mm.HoldStale() {
			stale++
		}
	}
	m.members.WithLabelValues(k.Namespace, k.Name, MembersMaintenanceStale).Set(float64(stale))
	// The rollout as this reconcile recorded it (it may have just halted
	// it), else as the pool's status holds it for its definition.
	halted := false
	if ro := res.Rollout; ro != nil {
		halted = ro.Halted != ""
	} else {
		halted = v.RolloutHalted()
	}
	m.rolloutHalted.WithLabelValues(k.Namespace, k.Name).Set(b2f(halted))
	if err == nil {
		m.lastSuccess.WithLabelValues(k.Namespace, k.Name).Set(float64(now.UnixNano()) / 1e9)
	}
	m.elastic(k, v, res.Status, now)
}

// elastic sets an elastic pool's gauges and every pool's forecast from the
// status the reconcile recorded (rec; the view's recorded status when the
// reconcile computed none), and removes the series that do not apply.
func (m *metrics) elastic(k engine.PoolRef, v engine.PoolView, rec engine.Status, now time.Time) {
	l := prometheus.Labels{MetricLabelNamespace: k.Namespace, MetricLabelPool: k.Name}
	hist, el := rec.History, rec.Elastic
	if hist == nil {
		hist, el = v.Recorded.History, v.Recorded.Elastic
	}
	spec := v.Spec
	if spec.Elastic() {
		m.minMembers.With(l).Set(float64(spec.MinSize))
		m.maxMembers.With(l).Set(float64(spec.MaxSize))
		m.spareMembers.With(l).Set(float64(spec.SpareTarget()))
		m.atCeiling.With(l).Set(b2f(el != nil && el.AtCeiling))
	} else {
		for _, g := range []*prometheus.GaugeVec{m.minMembers, m.maxMembers, m.spareMembers, m.atCeiling, m.forecastCeiling} {
			g.Delete(l)
		}
	}
	var samples []engine.Sample
	if hist != nil {
		samples = hist.Filled(now)
	}
	f := engine.ForecastFrom(samples, now, v.Status.Free, v.Status.Claimed, spec.MaxSize)
	setOrDelete := func(g *prometheus.GaugeVec, d *time.Duration) {
		if d == nil {
			g.Delete(l)
			return
		}
		g.With(l).Set(d.Seconds())
	}
	if !f.OK || f.Rate <= engine.ForecastMinRate {
		// Too little history, or claims do not outpace releases: no
		// forecast (a pool exhausted already has its own gauge).
		f.ToEmpty, f.ToCeiling = nil, nil
	}
	setOrDelete(m.forecastEmpty, f.ToEmpty)
	if spec.Elastic() {
		setOrDelete(m.forecastCeiling, f.ToCeiling)
	}
}

// ClaimsExpiring counts the user claims of a view that have not expired but
// will within engine.ExpiringSoon (10 minutes).
func ClaimsExpiring(v engine.PoolView, now time.Time) int {
	n := 0
	for i := range v.Members {
		m := &v.Members[i]
		if m.Claim != nil && !m.Claim.Expired && m.Claim.Expires.Sub(now) <= engine.ExpiringSoon {
			n++
		}
	}
	return n
}

// forget removes every series of a pool.
func (m *metrics) forget(k engine.PoolRef) {
	l := prometheus.Labels{MetricLabelNamespace: k.Namespace, MetricLabelPool: k.Name}
	gauges := []*prometheus.GaugeVec{m.members, m.desired, m.exhaust, m.expiring, m.deprecatedDesired,
		m.atCeiling, m.minMembers, m.maxMembers, m.spareMembers, m.forecastEmpty, m.forecastCeiling, m.lastSuccess, m.rolloutHalted}
	for _, g := range append(gauges, slices.Collect(maps.Values(m.deprecated))...) {
		g.DeletePartialMatch(l)
	}
	m.duration.DeletePartialMatch(l)
	m.steps.DeletePartialMatch(l)
	m.errors.DeletePartialMatch(l)
	m.actions.DeletePartialMatch(l)
}

// Handler serves /metrics (this controller's registry only), /healthz (the
// process is alive) and /readyz (the caches have synced and, with leader
// election, this instance leads with a fresh Lease or stands by).
func (c *Controller) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(c.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := c.Ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		role := "reconciling"
		if c.opts.LeaderElection != nil && !c.Leading() {
			role = "standing by"
		}
		fmt.Fprintln(w, "ok: "+role)
	})
	return mux
}

// Ready is the /readyz check.
func (c *Controller) Ready() error {
	if !c.Synced() {
		return errors.New("the informer caches have not synced")
	}
	if err := c.leaderHealthy(); err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	return nil
}

// Serve serves Handler on l until ctx ends, then shuts the server down.
func (c *Controller) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	return err
}
