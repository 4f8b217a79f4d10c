// Package systest holds the whole-system tests: the engine, kube and the
// binary's commands together on the local control plane (testdata/cluster),
// as a user, a broker, an admin and the reconciler would drive them. The
// randomized concurrency run (chaos), the contract on objects others wrote,
// elastic pools, the login storm, scale, the console's exec authorization
// and desktops on the real node live here. kube/ keeps kube's own tests,
// among them the performance runs of its informers and of the in-cluster
// reconciler (build tag perf); internal/pooltest holds what both build a
// pool with.
//
// The tests carry the build tag integration (outage too for the one that
// restarts the API server); `make test` runs them on the plane:
//
//	testdata/cluster/with-cluster go test -race -tags integration ./systest/
//
// Every wait polls the API server with a deadline; none sleeps a fixed time.
package systest
