// Package engine is the pool model of ctpool-tui: the pool definition (spec) and
// its source hash, member naming, the Pod/PVC/Lease builders, Observe (a
// snapshot of the cluster -> member states, markers and pool status), and the
// operations Reconcile, Claim, Release, Apply, Resize and Delete.
//
// The engine uses k8s.io/api and apimachinery types but imports no client-go
// and nothing from the UI. It never reads the wall clock: time is passed in.
// Every write goes through the Writer interface declared here and implemented
// by package kube (or by a fake in tests).
package engine
