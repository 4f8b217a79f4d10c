package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// metrics are the controller's Prometheus metrics, on a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	gauges   []*prometheus.GaugeVec // every per-pool gauge, for removal
	desired  *prometheus.GaugeVec
	ready    *prometheus.GaugeVec
	claimed  *prometheus.GaugeVec
	free     *prometheus.GaugeVec
	unsched  *prometheus.GaugeVec
	drifted  *prometheus.GaugeVec
	failed   *prometheus.GaugeVec
	exhaust  *prometheus.GaugeVec
	expiring *prometheus.GaugeVec
	duration *prometheus.HistogramVec
	steps    *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	actions  *prometheus.CounterVec
}

var poolLabels = []string{"namespace", "pool"}

func newMetrics(c *Controller) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	gauge := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, poolLabels)
		m.gauges = append(m.gauges, g)
		return g
	}
	m.desired = gauge("ctpool_pool_desired", "Members the pool definition asks for (its size).")
	m.ready = gauge("ctpool_pool_ready", "Members whose Pod is Running and Ready.")
	m.claimed = gauge("ctpool_pool_claimed", "Members claimed by a user (expired claims included).")
	m.free = gauge("ctpool_pool_free", "Members a claim can be given to now.")
	m.unsched = gauge("ctpool_pool_unschedulable", "Members whose Pod the scheduler cannot place.")
	m.drifted = gauge("ctpool_pool_drifted", "Members built from another source than the definition's.")
	m.failed = gauge("ctpool_pool_failed", "Members in the Failed state.")
	m.exhaust = gauge("ctpool_pool_exhausted", "1 when the pool has members but none is free.")
	m.expiring = gauge("ctpool_pool_claims_expiring", "Claims that expire within 10 minutes (not yet expired).")
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ctpool_reconcile_duration_seconds",
		Help:    "Time one reconcile of a pool took, reads included.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
	}, poolLabels)
	m.steps = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ctpool_reconcile_step_duration_seconds",
		Help:    "Time one step of a pool's reconcile took: read (the first read of the pool), create, start, replace, delete and status (engine.Step names); a step with nothing to do is not observed.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
	}, []string{"namespace", "pool", "step"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ctpool_reconcile_errors_total",
		Help: "Failures of reconcile steps: create, start, replace, delete and status (engine.Step names), read (the pool could not be read) and spec (a broken definition).",
	}, []string{"namespace", "pool", "step"})
	m.actions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ctpool_reconcile_actions_total",
		Help: "Member actions reconciles took, by step.",
	}, []string{"namespace", "pool", "step"})
	for _, g := range m.gauges {
		m.reg.MustRegister(g)
	}
	m.reg.MustRegister(m.duration, m.steps, m.errors, m.actions,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ctpool_reconciler_leader",
			Help: "1 while this instance runs the workers (the leader, or the only instance).",
		}, func() float64 { return b2f(c.Leading()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ctpool_workqueue_depth",
			Help: "Pools waiting to be reconciled.",
		}, func() float64 { return float64(c.QueueLen()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
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
func (m *metrics) record(k Key, res engine.ReconcileResult, err error, last *engine.Snapshot, seen *engine.PoolView, now time.Time, took time.Duration) {
	if errors.Is(err, engine.ErrPoolNotFound) {
		m.forget(k)
		return
	}
	m.duration.WithLabelValues(k.Namespace, k.Pool).Observe(took.Seconds())
	for _, st := range res.Timings {
		m.steps.WithLabelValues(k.Namespace, k.Pool, st.Step.String()).Observe(st.Took.Seconds())
	}
	counted := false
	for _, a := range res.Actions {
		switch {
		case a.Err != nil:
			m.errors.WithLabelValues(k.Namespace, k.Pool, a.Step.String()).Inc()
			counted = true
		case a.Skipped == "":
			m.actions.WithLabelValues(k.Namespace, k.Pool, a.Step.String()).Inc()
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
		m.errors.WithLabelValues(k.Namespace, k.Pool, step).Inc()
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
	set := func(g *prometheus.GaugeVec, x float64) { g.WithLabelValues(k.Namespace, k.Pool).Set(x) }
	set(m.desired, float64(st.Desired))
	set(m.ready, float64(st.Ready))
	set(m.claimed, float64(st.Claimed))
	set(m.free, float64(st.Free))
	set(m.unsched, float64(st.Unschedulable))
	set(m.drifted, float64(st.Drifted))
	set(m.failed, float64(st.Failed))
	set(m.exhaust, b2f(st.Exhausted))
	set(m.expiring, float64(ClaimsExpiring(v, now)))
}

// ClaimsExpiring counts the user claims of a view that have not expired but
// will within engine.ExpiringSoon (10 minutes).
func ClaimsExpiring(v engine.PoolView, now time.Time) int {
	n := 0
	for i := range v.Members {
		m := &v.Members[i]
		if m.Claimed && m.Claim != nil && !m.Claim.Expired && m.Claim.Expires.Sub(now) <= engine.ExpiringSoon {
			n++
		}
	}
	return n
}

// forget removes every series of a pool.
func (m *metrics) forget(k Key) {
	l := prometheus.Labels{"namespace": k.Namespace, "pool": k.Pool}
	for _, g := range m.gauges {
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
