// Package kube wraps client-go for ctpool-tui: kubeconfig loading with
// kubectl's rules, the typed clients, the implementation of engine.Cluster
// (Lease compare-and-swap, delete preconditions, waits on watches), the
// conversion of API errors into engine errors, and the shared informers the
// dashboard reads (Watcher; Contexts merges the Watchers of several
// clusters, each pool carrying its cluster's context). It imports engine,
// never the UI.
package kube
