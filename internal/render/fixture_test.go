package render_test

import (
	"path/filepath"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	goldenfile "github.com/ctpool-tui/ctpool-tui/internal/golden"
)

// The fixture's namespace and time (internal/fixture: the pools the
// dashboard's tests draw too).
const ns = fixture.Namespace

var t0 = fixture.T0

// golden compares got with testdata/name.golden (go test
// ./internal/render/ -update, or make golden, rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Assert(t, filepath.Join("testdata", name+".golden"), got)
}
