package kube

// WithProbeInterval is withProbeInterval for the tests of package kube_test
// (the perf runs and the storm benchmarks turn the /livez probe off).
var WithProbeInterval = withProbeInterval
