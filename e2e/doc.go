// Package e2e runs the real ctpool-tui binary in a pseudo-terminal on the
// local control plane (testdata/cluster), with a terminal emulator
// (github.com/charmbracelet/x/vt) reading its output: the tests send keys
// and assert on the emulated screen, the API server's objects and the
// terminal's modes after exit.
//
// The tests carry the build tag e2e; `make test` runs them on the plane:
//
//	testdata/cluster/with-cluster go test -race -tags e2e ./e2e/
//
// Every wait polls the emulated screen (or the API server) with a deadline;
// none sleeps a fixed time.
package e2e
