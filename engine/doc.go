// Package engine is the pool model of ctpool-tui: the pool definition (spec) and
// its source hash, member naming, the Pod/PVC/Lease builders, Observe (a
// snapshot of the cluster -> member states, markers and pool status), and the
// operations Reconcile, Claim, Release, Apply, Resize and Delete.
//
// The engine uses k8s.io/api and apimachinery types but imports no client-go
// and nothing from the UI. It never reads the wall clock: time is passed in.
// Every write goes through the Writer interface declared here and implemented
// by package kube (or by a fake in tests).
//
// Where things are:
//
//   - The definition: spec.go (the fields, defaults, validation and the
//     source hash), definition.go (a ConfigMap read into a view, leniently
//     when it is broken), runtime.go (the runtime backends and their Pod
//     fields), podsecurity.go, pullsecrets.go, credentials.go (what a
//     definition may hold), isolate.go (the pool's NetworkPolicy), elastic.go
//     (an elastic pool's fields and PlanElastic, its size decision).
//   - Names: names.go (members, PVCs, the ConfigMap, and DefinedPool, the
//     one rule of what defines a pool), leasename.go (a claim Lease known by
//     its name), poolref.go (a pool's identity across namespaces and
//     contexts), contexts.go (a context's connection, for a reader of
//     several contexts).
//   - Reading the cluster: cluster.go (the Reader and Writer the engine
//     needs, and Engine), view.go (Snapshot, PoolView, Member, Claim),
//     observe.go (Observe: member states, markers and counts), member.go,
//     incremental.go (PoolState: a view kept by difference for the
//     dashboard), namespace.go (GroupByPool), nodedown.go (down nodes),
//     foreign.go (objects the engine did not make, which block a member).
//   - The status: status.go (its encoding, bounded in size),
//     status_messages.go (the shared message table), trend.go (the
//     history of counts), forecast.go (time to exhaustion), errgroup.go
//     (errors grouped by cause).
//   - The operations: reconcile.go and steps.go (the five steps and how one
//     runs over its members), reconcile_status.go (the status a reconcile
//     records), claim.go (a claim's rounds: the recorded status first, a
//     fresh read when it fails), claim_pick.go (which free member it tries
//     next), claim_start.go (starting a claimed member), release.go,
//     lease.go (the reconciler's Lease and
//     the clock rules of Lease times), ops.go (Apply, Resize and the
//     definition's compare-and-swap), delete.go, build.go (Pods and PVCs),
//     progress.go (how far a long operation is).
//   - For the people around it: diagnose.go and diagnose_scheduling.go (why
//     a member is not Ready, in words), action.go and permissions.go (the
//     actions and the RBAC each needs), streaming.go (whether a backend has
//     logs and exec), errors.go (sentinel and typed errors).
package engine
