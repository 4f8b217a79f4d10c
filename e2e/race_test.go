//go:build e2e && race

package e2e

// raceBuild: the test binary runs with the race detector, so the dashboard
// binary is built with it too (and reuses the race-built packages of the
// build cache).
const raceBuild = true
