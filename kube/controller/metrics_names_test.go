package controller

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// busyRegistry is the registry of metrics after a reconcile that did a bit of
// everything, so that every metric the controller sets has a series: an
// elastic pool below its ceiling whose claims rose for an hour (both
// forecasts), a step timed, an action taken and one failed; and the work
// queue's series, as the queue makes them.
func busyRegistry(t *testing.T) *metrics {
	t.Helper()
	m := newMetrics(&Controller{})
	k := engine.PoolRef{Namespace: testNS, Name: "el"}
	spare := 2
	spec := engine.Spec{Image: "img", Size: 2, MinSize: 2, MaxSize: 20, Spare: &spare}
	spec.Default()
	var h engine.History
	start := testNow.Add(-time.Hour)
	for i := 0; i <= 12; i++ {
		h = h.Add(engine.Sample{At: start.Add(time.Duration(i) * 5 * time.Minute), Claimed: i / 2, Free: 10 - i/2, Size: 10})
	}
	rec := engine.Status{Desired: 10, Claimed: 6, Free: 4, History: &h, Elastic: &engine.ElasticStatus{Size: 10, From: 2}}
	cm := engine.BuildConfigMap(testNS, "el", spec)
	cm.Data[engine.KeyStatus] = rec.Encode()
	snap := engine.Snapshot{Namespace: testNS, Pool: "el", ConfigMap: cm}
	view := engine.Observe(snap, testNow)
	view.Status.Claimed, view.Status.Free = 6, 4
	res := engine.ReconcileResult{Status: rec,
		Timings: []engine.StepTiming{{Step: engine.StepCreate, Took: time.Millisecond}},
		Actions: []engine.MemberAction{{Step: engine.StepCreate, Member: "el-1"}, {Step: engine.StepStart, Member: "el-2", Err: errors.New("boom")}}}
	m.record(k, res, nil, &snap, &view, testNow, time.Millisecond)
	q := m.queue
	q.NewDepthMetric(queueName).Inc()
	q.NewAddsMetric(queueName).Inc()
	q.NewLatencyMetric(queueName).Observe(0)
	q.NewWorkDurationMetric(queueName).Observe(0)
	q.NewUnfinishedWorkSecondsMetric(queueName).Set(0)
	q.NewLongestRunningProcessorSecondsMetric(queueName).Set(0)
	q.NewRetriesMetric(queueName).Inc()
	return m
}

// TestMetricsAreTheRegistry: the ctpool_ metrics the registry serves after a
// busy reconcile are exactly the ones Metrics lists, with their types and
// labels. A metric registered around the registry's recording methods, or
// one listed that the controller never sets, fails it.
func TestMetricsAreTheRegistry(t *testing.T) {
	m := busyRegistry(t)
	listed := map[string]Metric{}
	for _, mt := range Metrics() {
		if _, dup := listed[mt.Name]; dup {
			t.Errorf("%s is listed twice", mt.Name)
		}
		listed[mt.Name] = mt
	}
	if len(listed) == 0 {
		t.Fatal("Metrics lists nothing")
	}
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "ctpool_") {
			continue
		}
		served[name] = true
		mt, ok := listed[name]
		if !ok {
			t.Errorf("%s is served but Metrics does not list it (registered around the registry's methods?)", name)
			continue
		}
		if typ := strings.ToLower(mf.GetType().String()); typ != mt.Type {
			t.Errorf("%s is a %s; Metrics says %s", name, typ, mt.Type)
		}
		for _, s := range mf.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName())
			}
			if want := slices.Sorted(slices.Values(mt.Labels)); !slices.Equal(labels, want) {
				t.Errorf("%s has labels %v; Metrics says %v", name, labels, want)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(listed)) {
		if !served[name] {
			t.Errorf("%s is listed but has no series after a busy reconcile", name)
		}
	}
}

// TestMemberStatesAreTheSeries: MetricPoolMembers has one series per state
// MemberStates lists, and no other.
func TestMemberStatesAreTheSeries(t *testing.T) {
	m := busyRegistry(t)
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, mf := range mfs {
		if mf.GetName() != MetricPoolMembers {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == MetricLabelState {
					states = append(states, l.GetValue())
				}
			}
		}
	}
	slices.Sort(states)
	if want := slices.Sorted(slices.Values(MemberStates())); !slices.Equal(states, want) {
		t.Errorf("%s has the states %v; MemberStates says %v", MetricPoolMembers, states, want)
	}
}

// TestMetricsIsACopy: changing what Metrics returns changes no registration.
func TestMetricsIsACopy(t *testing.T) {
	a := Metrics()
	a[0].Name = "changed"
	for i := range a {
		for j := range a[i].Labels {
			a[i].Labels[j] = "changed"
		}
	}
	b := Metrics()
	if b[0].Name == "changed" || slices.Contains(poolLabels, "changed") || slices.Contains(b[1].Labels, "changed") {
		t.Errorf("Metrics shares its slices: %+v, pool labels %v", b[:2], poolLabels)
	}
}
