// Command benchreport reads `go test -bench` output on stdin and prints each
// performance target of ctpool-tui with PASS or FAIL: a ratio of two
// benchmarks measured in the same run, or one benchmark's figure against an
// absolute bound. It exits 1 when a target is missed or its benchmarks are
// missing. Run it through `make bench` (the unit benchmarks) or
// `make bench-integration` (-set integration: the real control plane).
//
// A benchmark that ran several times (-count) is summarised by the median
// of its figures for a ratio, which the noise of a shared machine moves
// least, and by the worst of them for an absolute bound.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// target compares one metric of a benchmark with another benchmark's (a
// ratio) or, without den, with an absolute bound. A target with no bound
// is a figure to report, never a failure.
type target struct {
	set      string // "unit" or "integration"
	what     string
	num, den string // benchmark names without the -GOMAXPROCS suffix
	metric   string // unit column, e.g. ns/op or ns/member
	max      float64
	hasMax   bool
}

func ratio(set, what, num, den, metric string, max float64) target {
	return target{set: set, what: what, num: num, den: den, metric: metric, max: max, hasMax: true}
}

func bound(set, what, bench, metric string, max float64) target {
	return target{set: set, what: what, num: bench, metric: metric, max: max, hasMax: true}
}

func info(set, what, bench, metric string) target {
	return target{set: set, what: what, num: bench, metric: metric}
}

const (
	unit        = "unit"
	integration = "integration"
)

var targets = []target{
	// 1. engine.Observe is linear.
	ratio(unit, "1 engine.Observe per member, 10,000 vs 100 members",
		"BenchmarkObserve/members=10000", "BenchmarkObserve/members=100", "ns/member", 1.5),
	// 2. The frame cost does not grow with the pool.
	ratio(unit, "2 members view View() at 120x40, 10,000 vs 100 members",
		"BenchmarkMembersView10000", "BenchmarkMembersView100", "ns/op", 1.5),
	// 3. Event storms coalesce (fake informer, unit benchmark).
	bound(unit, "3 storm of 10,000 Pod updates in 1s, 1,000 members: rebuilds",
		"BenchmarkWatcherStorm/members=1000", "rebuilds", 30),
	bound(unit, "3 ... final state on screen after the last event (ms)",
		"BenchmarkWatcherStorm/members=1000", "ms-final", 250),
	info(unit, "3 ... time the 10,000 updates took to send (ms)",
		"BenchmarkWatcherStorm/members=1000", "ms-sent"),
	bound(unit, "3 storm of 10,000 Pod updates in 1s, 10,000 members: rebuilds",
		"BenchmarkWatcherStorm/members=10000", "rebuilds", 30),
	bound(unit, "3 ... final state on screen after the last event (ms)",
		"BenchmarkWatcherStorm/members=10000", "ms-final", 250),
	// 4. The informer cache holds at most 40% of the untransformed bytes.
	ratio(unit, "4 informer cache bytes, transformed vs raw, 1,000 members",
		"BenchmarkInformerCacheBytes/members=1000/transformed", "BenchmarkInformerCacheBytes/members=1000/raw", "bytes/member", 0.40),
	ratio(unit, "4 informer cache bytes, transformed vs raw, 10,000 members",
		"BenchmarkInformerCacheBytes/members=10000/transformed", "BenchmarkInformerCacheBytes/members=10000/raw", "bytes/member", 0.40),
	info(unit, "4 heap per member, transformed cache, 1,000 members",
		"BenchmarkInformerCacheBytes/members=1000/transformed", "bytes/member"),
	info(unit, "4 heap per member, transformed cache, 10,000 members",
		"BenchmarkInformerCacheBytes/members=10000/transformed", "bytes/member"),
	info(unit, "4 heap per member, untransformed cache, 10,000 members",
		"BenchmarkInformerCacheBytes/members=10000/raw", "bytes/member"),
	// 18.3 Cost proportional to change: a steady churn through a fake
	// informer, the dashboard's CPU per member change.
	ratio(unit, "18.3 churn, CPU per member change, 10,000 vs 1,000 members (members screen)",
		"BenchmarkChurn/members=10000/incremental", "BenchmarkChurn/members=1000/incremental", "cpu-ns/change", 2),
	ratio(unit, "18.3 ... same, pools screen",
		"BenchmarkChurn/members=10000/incremental-pools", "BenchmarkChurn/members=1000/incremental-pools", "cpu-ns/change", 2),
	info(unit, "18.3 ... by difference, 1,000 members (ns CPU per change)",
		"BenchmarkChurn/members=1000/incremental", "cpu-ns/change"),
	info(unit, "18.3 ... by difference, 10,000 members (ns CPU per change)",
		"BenchmarkChurn/members=10000/incremental", "cpu-ns/change"),
	info(unit, "18.3 ... whole rebuild at every change (before), 1,000 members",
		"BenchmarkChurn/members=1000/whole", "cpu-ns/change"),
	info(unit, "18.3 ... whole rebuild at every change (before), 10,000 members",
		"BenchmarkChurn/members=10000/whole", "cpu-ns/change"),

	// 41 The idle dashboard: one tick (Update, then View) at 120x40 on one
	// pool whose objects do not change, with a day of history recorded in
	// its status. Its cost does not grow with the pool, and the trend is
	// drawn once a slot, not once a tick: a tick costs what it cost without
	// a recorded history (before the trend). CPU is the process's (the
	// GC's too), in each run's steady state.
	ratio(unit, "41 idle tick, pools screen, CPU, 10,000 vs 1,000 members",
		"BenchmarkIdleTick/members=10000/screen=pools", "BenchmarkIdleTick/members=1000/screen=pools", "cpu-ns/tick", 1.5),
	ratio(unit, "41 ... CPU, a day of recorded history (the trend) vs none, 10,000 members",
		"BenchmarkIdleTick/members=10000/screen=pools", "BenchmarkIdleTick/members=10000/screen=pools/no-history", "cpu-ns/tick", 1.25),
	ratio(unit, "41 ... bytes allocated, a day of recorded history vs none, 10,000 members",
		"BenchmarkIdleTick/members=10000/screen=pools", "BenchmarkIdleTick/members=10000/screen=pools/no-history", "B/op", 1.1),
	info(unit, "41 ... CPU per tick, 1,000 members (ns)", "BenchmarkIdleTick/members=1000/screen=pools", "cpu-ns/tick"),
	info(unit, "41 ... CPU per tick, 10,000 members (ns)", "BenchmarkIdleTick/members=10000/screen=pools", "cpu-ns/tick"),
	info(unit, "41 ... time per tick, 1,000 members", "BenchmarkIdleTick/members=1000/screen=pools", "ns/op"),
	info(unit, "41 ... time per tick, 10,000 members", "BenchmarkIdleTick/members=10000/screen=pools", "ns/op"),
	info(unit, "41 ... allocations per tick, 1,000 members", "BenchmarkIdleTick/members=1000/screen=pools", "allocs/op"),
	info(unit, "41 ... allocations per tick, 10,000 members", "BenchmarkIdleTick/members=10000/screen=pools", "allocs/op"),
	// The wall lists what needs attention from every member at each frame
	// (a claim expires with the clock): it grows with the pool.
	info(unit, "41 idle tick, wall (read-only), CPU per tick, 1,000 members (ns)", "BenchmarkIdleTick/members=1000/screen=wall", "cpu-ns/tick"),
	info(unit, "41 ... CPU per tick, 10,000 members (ns)", "BenchmarkIdleTick/members=10000/screen=wall", "cpu-ns/tick"),

	// ---- fleet scale (issue 15 item 5): 3 clusters x 20 namespaces x 50
	// pools of 20 members (60,000 members) on fake informers, each measure
	// against the same measure at one-pool or one-namespace scale in the
	// same run, with the one-namespace dashboard's targets. ----
	// 1 at fleet scale: a coalesced change costs the same per member.
	// A read after a coalesced change (1,000 Pod updates: in 1,000 of the
	// fleet's 3,000 pools, or all in the one pool): a fleet Watcher regroups
	// only the pools that changed.
	ratio(unit, "1f fleet: caches read, grouped and merged per member after 1,000 Pod updates, 60,000 vs one pool of 1,000",
		"BenchmarkFleetSnapshotsChanged/scale=fleet", "BenchmarkFleetSnapshotsChanged/scale=one-pool", "ns/member", 1.5),
	info(unit, "1f ... the same read with nothing changed, fleet (ns/member)",
		"BenchmarkFleetSnapshots/scale=fleet", "ns/member"),
	ratio(unit, "1f fleet: observe and model update per member, 60,000 vs one namespace of 1,000",
		"BenchmarkFleetRebuild/scale=fleet", "BenchmarkFleetRebuild/scale=one-namespace", "ns/member", 1.5),
	// 2 at fleet scale: the frame cost does not grow with the fleet.
	ratio(unit, "2f fleet pools view View() at 120x40, 60,000 vs one namespace of 1,000",
		"BenchmarkFleetPoolsView/scale=fleet", "BenchmarkFleetPoolsView/scale=one-namespace", "ns/op", 1.5),
	ratio(unit, "2f fleet members view View() at 120x40, 60,000 vs one namespace of 1,000",
		"BenchmarkFleetMembersView/scale=fleet", "BenchmarkFleetMembersView/scale=one-namespace", "ns/op", 1.5),
	// 3 at fleet scale: a storm of 10,000 Pod updates in 1s coalesces.
	bound(unit, "3f storm of 10,000 Pod updates in 1s, one pool of 1,000: rebuilds",
		"BenchmarkFleetStorm/scale=one-pool", "rebuilds", 30),
	bound(unit, "3f ... final state on screen after the last event (ms)",
		"BenchmarkFleetStorm/scale=one-pool", "ms-final", 250),
	bound(unit, "3f storm of 10,000 Pod updates in 1s, fleet of 60,000: rebuilds",
		"BenchmarkFleetStorm/scale=fleet", "rebuilds", 30),
	bound(unit, "3f ... final state on screen after the last event (ms)",
		"BenchmarkFleetStorm/scale=fleet", "ms-final", 250),
	info(unit, "3f ... one rebuild of the fleet, caches to views (ms)",
		"BenchmarkFleetStorm/scale=fleet", "ms-rebuild"),
	info(unit, "3f ... one rebuild of one pool of 1,000, caches to views (ms)",
		"BenchmarkFleetStorm/scale=one-pool", "ms-rebuild"),
	// 4 at fleet scale: memory per member does not grow with the fleet.
	ratio(unit, "4f informer cache heap per member, 60,000 vs one pool of 1,000",
		"BenchmarkFleetCacheBytes/scale=fleet", "BenchmarkFleetCacheBytes/scale=one-pool", "bytes/member", 1.5),
	ratio(unit, "4f dashboard model heap per member, 60,000 vs one namespace of 1,000",
		"BenchmarkFleetModelBytes/scale=fleet", "BenchmarkFleetModelBytes/scale=one-namespace", "bytes/member", 1.5),
	info(unit, "4f informer cache heap per member, fleet of 60,000",
		"BenchmarkFleetCacheBytes/scale=fleet", "bytes/member"),
	info(unit, "4f dashboard model heap per member, fleet of 60,000",
		"BenchmarkFleetModelBytes/scale=fleet", "bytes/member"),
	// ---- end of fleet scale ----

	// 3 on the real control plane.
	bound(integration, "3 real plane: Pod status storm, rebuilds per second of storm",
		"BenchmarkIntegrationPerfStorm", "rebuilds/s", 10),
	bound(integration, "3 real plane: final state on screen after the last event (ms)",
		"BenchmarkIntegrationPerfStorm", "ms-final", 250),
	info(integration, "3 real plane: Pod updates per second the plane took",
		"BenchmarkIntegrationPerfStorm", "updates/s"),
	// 5. Reconcile throughput: the engine's fill of 500 members (4 writes
	// each: the contract's Lease, PVC, Pod, Lease removal) against a bare
	// client-go loop of the same 2,000 writes with the same requests in
	// flight, and against one of the 1,000 PVC and Pod creates alone (the
	// price of the contract's Lease).
	bound(integration, "5 reconcile 0->500 vs bare loop of the same 2,000 writes",
		"BenchmarkIntegrationPerfReconcile", "engine/bare", 1.15),
	info(integration, "5 ... vs bare loop of the 1,000 PVC and Pod creates alone",
		"BenchmarkIntegrationPerfReconcile", "engine/bare2"),
	bound(integration, "5 ... requests that waited for client-side throttling",
		"BenchmarkIntegrationPerfReconcile", "throttled", 0),
	info(integration, "5 ... seconds to fill the pool, engine",
		"BenchmarkIntegrationPerfReconcile", "s-engine"),
	info(integration, "5 ... seconds for the 2,000 writes, bare loop",
		"BenchmarkIntegrationPerfReconcile", "s-bare"),
	info(integration, "5 ... seconds for the 1,000 creates, bare loop",
		"BenchmarkIntegrationPerfReconcile", "s-bare2"),
	info(integration, "5 ... peak requests in flight, engine",
		"BenchmarkIntegrationPerfReconcile", "peak-engine"),
	info(integration, "5 ... peak requests in flight, bare loops",
		"BenchmarkIntegrationPerfReconcile", "peak-bare"),
	info(integration, "5 ... mean requests in flight, engine",
		"BenchmarkIntegrationPerfReconcile", "mean-inflight-engine"),
	info(integration, "5 ... mean requests in flight, bare loop of the same writes",
		"BenchmarkIntegrationPerfReconcile", "mean-inflight-bare"),
	info(integration, "5 same without a client-side limit on either side: engine/bare",
		"BenchmarkIntegrationPerfReconcileUnthrottled", "engine/bare"),
	info(integration, "5 ... engine/bare2", "BenchmarkIntegrationPerfReconcileUnthrottled", "engine/bare2"),
	// 18.6 The in-cluster reconciler (reconcile --all --watch, the binary
	// with the Deployment's flags) over 1,000 pools of 10 members, in one
	// namespace and over 10 with -A (CTPOOL_PERF_CONTROLLER_POOLS may shrink
	// the run; "members" says its size).
	info(integration, "18.6 reconciler, one namespace: members", "BenchmarkIntegrationPerfController/namespace", "members"),
	bound(integration, "18.6 ... requests/min at rest from reconciles (watches, probe, election aside)",
		"BenchmarkIntegrationPerfController/namespace", "req/min-reconcile", 0),
	info(integration, "18.6 ... requests/min at rest, all but the watches (/livez probe, election Lease)",
		"BenchmarkIntegrationPerfController/namespace", "req/min-rest"),
	bound(integration, "18.6 ... peak RSS, MiB (the Deployment's limit)", "BenchmarkIntegrationPerfController/namespace", "MiB-rss-peak", 256),
	info(integration, "18.6 ... RSS at rest, MiB", "BenchmarkIntegrationPerfController/namespace", "MiB-rss-rest"),
	info(integration, "18.6 ... anonymous RSS at rest (heap, stacks), MiB", "BenchmarkIntegrationPerfController/namespace", "MiB-rss-anon-rest"),
	info(integration, "18.6 ... Go heap in use at rest, MiB", "BenchmarkIntegrationPerfController/namespace", "MiB-heap-rest"),
	info(integration, "18.6 ... CPU at rest, millicores", "BenchmarkIntegrationPerfController/namespace", "mcpu-idle"),
	info(integration, "18.6 ... seconds from start to converged (Ready or Unschedulable)", "BenchmarkIntegrationPerfController/namespace", "s-fill"),
	info(integration, "18.6 ... Pod deleted -> member Ready again, p50 (ms)", "BenchmarkIntegrationPerfController/namespace", "ready-p50-ms"),
	info(integration, "18.6 ... Pod deleted -> member Ready again, p95 (ms)", "BenchmarkIntegrationPerfController/namespace", "ready-p95-ms"),
	info(integration, "18.6 reconciler, -A over 10 namespaces: members", "BenchmarkIntegrationPerfController/all-namespaces", "members"),
	bound(integration, "18.6 ... requests/min at rest from reconciles (watches, probe, election aside)",
		"BenchmarkIntegrationPerfController/all-namespaces", "req/min-reconcile", 0),
	info(integration, "18.6 ... requests/min at rest, all but the watches (/livez probe, election Lease)",
		"BenchmarkIntegrationPerfController/all-namespaces", "req/min-rest"),
	bound(integration, "18.6 ... peak RSS, MiB (the Deployment's limit)", "BenchmarkIntegrationPerfController/all-namespaces", "MiB-rss-peak", 256),
	info(integration, "18.6 ... RSS at rest, MiB", "BenchmarkIntegrationPerfController/all-namespaces", "MiB-rss-rest"),
	info(integration, "18.6 ... anonymous RSS at rest (heap, stacks), MiB", "BenchmarkIntegrationPerfController/all-namespaces", "MiB-rss-anon-rest"),
	info(integration, "18.6 ... Go heap in use at rest, MiB", "BenchmarkIntegrationPerfController/all-namespaces", "MiB-heap-rest"),
	info(integration, "18.6 ... CPU at rest, millicores", "BenchmarkIntegrationPerfController/all-namespaces", "mcpu-idle"),
	info(integration, "18.6 ... seconds from start to converged (Ready or Unschedulable)", "BenchmarkIntegrationPerfController/all-namespaces", "s-fill"),
	info(integration, "18.6 ... Pod deleted -> member Ready again, p50 (ms)", "BenchmarkIntegrationPerfController/all-namespaces", "ready-p50-ms"),
	info(integration, "18.6 ... Pod deleted -> member Ready again, p95 (ms)", "BenchmarkIntegrationPerfController/all-namespaces", "ready-p95-ms"),
	// 6. Claim requests and round trips.
	bound(integration, "6 claim on 1,000 members from the dashboard (informer cache): requests",
		"BenchmarkIntegrationPerfClaim", "req-informer", 3),
	info(integration, "6 claim on 1,000 members from the CLI (fresh reads): requests",
		"BenchmarkIntegrationPerfClaim", "req-cli"),
	info(integration, "6 claim round trip p50 (ms)", "BenchmarkIntegrationPerfClaim", "claim-p50-ms"),
	info(integration, "6 claim round trip p95 (ms)", "BenchmarkIntegrationPerfClaim", "claim-p95-ms"),
	info(integration, "6 claim through the informer cache, round trip p50 (ms)", "BenchmarkIntegrationPerfClaim", "claim-cached-p50-ms"),
	info(integration, "6 claim through the informer cache, round trip p95 (ms)", "BenchmarkIntegrationPerfClaim", "claim-cached-p95-ms"),
	info(integration, "6 release round trip p50 (ms)", "BenchmarkIntegrationPerfClaim", "release-p50-ms"),
	info(integration, "6 release round trip p95 (ms)", "BenchmarkIntegrationPerfClaim", "release-p95-ms"),
	info(integration, "6 force-release round trip p50 (ms)", "BenchmarkIntegrationPerfClaim", "force-p50-ms"),
	info(integration, "6 force-release round trip p95 (ms)", "BenchmarkIntegrationPerfClaim", "force-p95-ms"),
	// 27. A burst of 20 claims on an elastic pool with spare 3: every
	// claimant's desktop against the same 20 members started by one apply
	// (the plane's own pace under that load) and one member alone.
	bound(integration, "27 elastic burst of 20 claims, spare 3: claimant to desktop p95 vs 20 members of one apply p95",
		"BenchmarkIntegrationElasticBurst", "p95/apply20-p95", 2.0),
	info(integration, "27 ... claimant to desktop p50 (s)", "BenchmarkIntegrationElasticBurst", "claim-p50-s"),
	info(integration, "27 ... claimant to desktop p95 (s)", "BenchmarkIntegrationElasticBurst", "claim-p95-s"),
	info(integration, "27 ... claim answered p95 (s)", "BenchmarkIntegrationElasticBurst", "answer-p95-s"),
	info(integration, "27 ... 20 members of one apply to Ready p95 (s)", "BenchmarkIntegrationElasticBurst", "apply20-p95-s"),
	info(integration, "27 ... one member alone to Ready (s)", "BenchmarkIntegrationElasticBurst", "member-start-s"),
	info(integration, "27 ... claims that grew the pool", "BenchmarkIntegrationElasticBurst", "claims-grew"),
	// 41. The morning login storm: n claims at once from n identities, on n
	// free Ready members (fixed) and on an elastic pool of maxSize n (spare
	// 10, starting at size 10), each against one claim alone on the same
	// pool (elastic: a claim alone that grows the pool). Lease creates are
	// the API server's count (apiserver_request_total, POST leases, 201 and
	// 409 alike); the client's own count is beside it.
	info(integration, "41 100 claims at once on 100 free members: Lease creates per claim",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "leases/claim"),
	info(integration, "41 ... Lease creates per claim, the client's count",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "leases/claim-client"),
	bound(integration, "41 ... claims that failed (not refused) or whose desktop was not Ready in time",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "failed", 0),
	bound(integration, "41 ... claim to answer p95 vs one claim alone",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "answer-p95/alone", 3),
	info(integration, "41 ... claim to desktop Ready p95 vs one claim alone",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "ready-p95/alone"),
	info(integration, "41 ... claims per second",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "claims/s"),
	info(integration, "41 ... claim to desktop Ready p50 (ms)",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "ready-p50-ms"),
	info(integration, "41 ... claim to desktop Ready p95 (ms)",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "ready-p95-ms"),
	info(integration, "41 ... claim to desktop Ready p99 (ms)",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "ready-p99-ms"),
	info(integration, "41 ... claim to answer p95 (ms)",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "answer-p95-ms"),
	info(integration, "41 ... one claim alone to desktop Ready, median (ms)",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "alone-ready-ms"),
	info(integration, "41 ... client requests per claim",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "req/claim"),
	info(integration, "41 ... requests that waited for the client's rate limiter",
		"BenchmarkIntegrationClaimStorm/fixed/n=100", "throttled"),
	bound(integration, "41 1,000 claims at once on 1,000 free members: Lease creates per claim",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "leases/claim", 1.5),
	info(integration, "41 ... Lease creates per claim, the client's count",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "leases/claim-client"),
	bound(integration, "41 ... claims that failed (not refused) or whose desktop was not Ready in time",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "failed", 0),
	info(integration, "41 ... claim to answer p95 vs one claim alone",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "answer-p95/alone"),
	info(integration, "41 ... claim to desktop Ready p95 vs one claim alone",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "ready-p95/alone"),
	info(integration, "41 ... claims per second",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "claims/s"),
	info(integration, "41 ... claim to desktop Ready p50 (ms)",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "ready-p50-ms"),
	info(integration, "41 ... claim to desktop Ready p95 (ms)",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "ready-p95-ms"),
	info(integration, "41 ... claim to desktop Ready p99 (ms)",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "ready-p99-ms"),
	info(integration, "41 ... claim to answer p95 (ms)",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "answer-p95-ms"),
	info(integration, "41 ... one claim alone to desktop Ready, median (ms)",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "alone-ready-ms"),
	info(integration, "41 ... client requests per claim",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "req/claim"),
	info(integration, "41 ... requests that waited for the client's rate limiter",
		"BenchmarkIntegrationClaimStorm/fixed/n=1000", "throttled"),
	info(integration, "41 100 claims at once on an elastic pool of maxSize 100: Lease creates per claim",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "leases/claim"),
	info(integration, "41 ... Lease creates per claim, the client's count",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "leases/claim-client"),
	bound(integration, "41 ... claims that failed (not refused) or whose desktop was not Ready in time",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "failed", 0),
	info(integration, "41 ... claim to answer p95 vs one claim alone",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "answer-p95/alone"),
	info(integration, "41 ... claim to desktop Ready p95 vs one claim alone",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "ready-p95/alone"),
	info(integration, "41 ... claims per second",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "claims/s"),
	info(integration, "41 ... claim to desktop Ready p50 (ms)",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "ready-p50-ms"),
	info(integration, "41 ... claim to desktop Ready p95 (ms)",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "ready-p95-ms"),
	info(integration, "41 ... claim to desktop Ready p99 (ms)",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "ready-p99-ms"),
	info(integration, "41 ... claim to answer p95 (ms)",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "answer-p95-ms"),
	info(integration, "41 ... one claim alone that grows the pool to desktop Ready, median (ms)",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "alone-ready-ms"),
	info(integration, "41 ... client requests per claim",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "req/claim"),
	info(integration, "41 ... requests that waited for the client's rate limiter",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "throttled"),
	info(integration, "41 ... claims that grew the pool",
		"BenchmarkIntegrationClaimStorm/elastic/n=100", "claims-grew"),
	info(integration, "41 1,000 claims at once on an elastic pool of maxSize 1,000: Lease creates per claim",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "leases/claim"),
	info(integration, "41 ... Lease creates per claim, the client's count",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "leases/claim-client"),
	bound(integration, "41 ... claims that failed (not refused) or whose desktop was not Ready in time",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "failed", 0),
	info(integration, "41 ... claim to answer p95 vs one claim alone",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "answer-p95/alone"),
	info(integration, "41 ... claim to desktop Ready p95 vs one claim alone",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "ready-p95/alone"),
	info(integration, "41 ... claims per second",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "claims/s"),
	info(integration, "41 ... claim to desktop Ready p50 (ms)",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "ready-p50-ms"),
	info(integration, "41 ... claim to desktop Ready p95 (ms)",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "ready-p95-ms"),
	info(integration, "41 ... claim to desktop Ready p99 (ms)",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "ready-p99-ms"),
	info(integration, "41 ... claim to answer p95 (ms)",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "answer-p95-ms"),
	info(integration, "41 ... one claim alone that grows the pool to desktop Ready, median (ms)",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "alone-ready-ms"),
	info(integration, "41 ... client requests per claim",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "req/claim"),
	info(integration, "41 ... requests that waited for the client's rate limiter",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "throttled"),
	info(integration, "41 ... claims that grew the pool",
		"BenchmarkIntegrationClaimStorm/elastic/n=1000", "claims-grew"),
	// 7. --once against kubectl get.
	bound(integration, "7 ctpool-tui --once vs kubectl get, 1,000 members (median)",
		"BenchmarkIntegrationPerfOnce", "once/kubectl", 1.0),
	info(integration, "7 ... ctpool-tui --once, median (ms)", "BenchmarkIntegrationPerfOnce", "once-ms"),
	info(integration, "7 ... kubectl get, median (ms)", "BenchmarkIntegrationPerfOnce", "kubectl-ms"),
}

var suffix = regexp.MustCompile(`-\d+$`)

// parse collects every figure of every benchmark line, per benchmark and unit.
func parse(r io.Reader) map[string]map[string][]float64 {
	metrics := map[string]map[string][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := suffix.ReplaceAllString(f[0], "")
		if metrics[name] == nil {
			metrics[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				metrics[name][f[i+1]] = append(metrics[name][f[i+1]], v)
			}
		}
	}
	return metrics
}

func median(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func worst(vs []float64) float64 {
	m := vs[0]
	for _, v := range vs[1:] {
		m = max(m, v)
	}
	return m
}

// report prints the targets of one set and reports whether all are met.
// With only set, the targets of other benchmarks are left out.
func report(w io.Writer, set, only string, metrics map[string]map[string][]float64) bool {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "performance targets, %s benchmarks (measured in this run)\n", set)
	ok := true
	for _, t := range targets {
		if t.set != set || !strings.HasPrefix(t.num, only) {
			continue
		}
		nv := metrics[t.num][t.metric]
		if len(nv) == 0 {
			fmt.Fprintf(w, "  MISSING  %-66s (no %s for %s)\n", t.what, t.metric, t.num)
			ok = false
			continue
		}
		if t.den == "" {
			v := worst(nv)
			switch {
			case !t.hasMax:
				fmt.Fprintf(w, "  info     %-66s %.4g %s\n", t.what, median(nv), t.metric)
			case v > t.max:
				ok = false
				fmt.Fprintf(w, "  FAIL     %-66s %.4g (target <= %.4g %s; worst of %d)\n", t.what, v, t.max, t.metric, len(nv))
			default:
				fmt.Fprintf(w, "  PASS     %-66s %.4g (target <= %.4g %s; worst of %d)\n", t.what, v, t.max, t.metric, len(nv))
			}
			continue
		}
		dv := metrics[t.den][t.metric]
		if len(dv) == 0 || median(dv) == 0 {
			fmt.Fprintf(w, "  MISSING  %-66s (no %s for %s)\n", t.what, t.metric, t.den)
			ok = false
			continue
		}
		n, d := median(nv), median(dv)
		r := n / d
		verdict := "PASS"
		if r > t.max {
			verdict, ok = "FAIL", false
		}
		fmt.Fprintf(w, "  %-7s  %-66s %.2fx (target <= %.2fx; medians %.4g vs %.4g %s of %d and %d runs)\n",
			verdict, t.what, r, t.max, n, d, t.metric, len(nv), len(dv))
	}
	return ok
}

func main() {
	set := flag.String("set", unit, "which targets to report: unit or integration")
	only := flag.String("only", "", "report only the targets of the benchmarks named with this prefix")
	flag.Parse()
	if *set != unit && *set != integration {
		fmt.Fprintf(os.Stderr, "benchreport: -set must be %s or %s\n", unit, integration)
		os.Exit(2)
	}
	if !report(os.Stdout, *set, *only, parse(os.Stdin)) {
		os.Exit(1)
	}
}
