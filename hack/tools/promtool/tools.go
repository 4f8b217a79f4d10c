//go:build tools

// Package promtool pins the version of Prometheus' promtool that make test uses
// to check and unit-test the rules ctpool-tui alerts prints. It is a module of
// its own so that Prometheus' dependencies stay out of ctpool-tui's go.mod;
// hack/tools/promtool/build builds the binary into the cache.
package promtool

import _ "github.com/prometheus/prometheus/cmd/promtool"
