package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// queueMetrics are the work queue's metrics: client-go's workqueue metrics
// (the names kube-controller-manager exports, with the ctpool_ prefix), fed
// by the queue through MetricsProvider. The name label is the queue's name.
type queueMetrics struct {
	depth      *prometheus.GaugeVec
	adds       *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	work       *prometheus.HistogramVec
	unfinished *prometheus.GaugeVec
	longest    *prometheus.GaugeVec
	retries    *prometheus.CounterVec
}

// newQueueMetrics makes the queue's metrics on r.
func newQueueMetrics(r *registry) queueMetrics {
	return queueMetrics{
		depth:      r.gaugeVec(MetricWorkqueueDepth, "Pools waiting in the work queue to be reconciled.", MetricLabelQueue),
		adds:       r.counterVec(MetricWorkqueueAdds, "Pools added to the work queue (an add of a pool already waiting is not counted).", MetricLabelQueue),
		latency:    r.histogramVec(MetricWorkqueueQueueDuration, "Time a pool waited in the work queue before a worker took it (after its settle or retry delay).", MetricLabelQueue),
		work:       r.histogramVec(MetricWorkqueueWorkDuration, "Time a worker held a pool taken from the work queue: its reconcile and the bookkeeping around it.", MetricLabelQueue),
		unfinished: r.gaugeVec(MetricWorkqueueUnfinishedWork, "Seconds the reconciles in progress have run, summed; a value that grows while the work queue's work duration observes nothing means a stuck worker.", MetricLabelQueue),
		longest:    r.gaugeVec(MetricWorkqueueLongestRunning, "Seconds the longest reconcile in progress has run.", MetricLabelQueue),
		retries:    r.counterVec(MetricWorkqueueRetries, "Delayed adds to the work queue: the rate-limited retries of pools whose reconcile failed, and the adds of events delayed by the settle time.", MetricLabelQueue),
	}
}

// The queue's workqueue.MetricsProvider: each metric is the series of the
// queue's name, on the controller's registry. A second queue of the same
// name would share the series.
var _ workqueue.MetricsProvider = queueMetrics{}

func (q queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return q.depth.WithLabelValues(name)
}

func (q queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return q.adds.WithLabelValues(name)
}

func (q queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return q.latency.WithLabelValues(name)
}

func (q queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return q.work.WithLabelValues(name)
}

func (q queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.unfinished.WithLabelValues(name)
}

func (q queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.longest.WithLabelValues(name)
}

func (q queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return q.retries.WithLabelValues(name)
}
