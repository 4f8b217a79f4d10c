// Package golden compares test output with checked-in golden files, and
// rewrites them under the -update flag.
//
// Every test binary that imports it accepts -update, so one command rewrites
// the golden files of every package that has them:
//
//	make golden                  # the packages that import this one
//	go test ./tui/ -update       # one package
//
// Only tests import it: it registers -update on the default flag set.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Update is the -update flag: Assert writes got instead of comparing.
var Update = flag.Bool("update", false, "rewrite the golden files (testdata/...) with the current output")

// Assert compares got with the golden file at path (relative to the
// package directory, as a test runs there). Under -update it writes got to
// path, creating the directory, and compares nothing. A missing file stops
// the test; a different one fails it with the lines that differ.
func Assert(t testing.TB, path, got string) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update in this package, or make golden, writes it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (if the change is intended, go test -update in this package, or make golden, rewrites it):\n%s", path, Diff(string(want), got))
	}
}

// Diff lists the lines, by number, where got differs from want.
func Diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
		}
	}
	return b.String()
}
