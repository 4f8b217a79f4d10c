package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The check fails on a called vulnerability: the fixture module calls
// golang.org/x/text v0.3.7's language.ParseAcceptLanguage (GO-2022-1059),
// checked against the project's cut copy; and it passes once the fixture
// is moved to the fixed release.
func TestCalledVulnerabilityFailsTheCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("runs govulncheck through the module proxy")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	db, err := filepath.Abs("db")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	code, err := govulncheckIn("testdata/called", db, []string{"./..."}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 || !strings.Contains(out.String(), "GO-2022-1059") {
		t.Fatalf("govulncheck on the vulnerable fixture: exit %d (want 3, a called vulnerability), output:\n%s\n%s", code, out.String(), errOut.String())
	}

	// The same code on the fixed release passes.
	fixed := t.TempDir()
	for _, f := range []string{"main.go", "go.mod"} {
		b, err := os.ReadFile(filepath.Join("testdata/called", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "go.mod" {
			b = []byte(strings.Replace(string(b), "golang.org/x/text v0.3.7", "golang.org/x/text v0.3.8", 1))
		}
		if err := os.WriteFile(filepath.Join(fixed, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = fixed
	if b, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy in the fixed fixture: %v\n%s", err, b)
	}
	out.Reset()
	errOut.Reset()
	if code, err := govulncheckIn(fixed, db, []string{"./..."}, &out, &errOut); err != nil || code != 0 {
		t.Fatalf("govulncheck on the fixed fixture: exit %d, %v, output:\n%s\n%s", code, err, out.String(), errOut.String())
	}
}

func TestUncovered(t *testing.T) {
	snap := Snapshot{Modules: []string{"a", "b"}}
	for _, tc := range []struct {
		mods, want []string
	}{
		{[]string{"a"}, nil},
		{[]string{"a", "b"}, nil},
		{[]string{"a", "c", "b", "d"}, []string{"c", "d"}},
	} {
		if got := uncovered(snap, tc.mods); !slices.Equal(got, tc.want) {
			t.Errorf("uncovered(%v) = %v, want %v", tc.mods, got, tc.want)
		}
	}
}

// The cut copy covers every module of the build as it is now (else lint's
// fallback would refuse it: cut it again with make vulndb).
func TestCutCopyCoversTheBuild(t *testing.T) {
	var snap Snapshot
	if err := readJSON(filepath.Join("db", "SNAPSHOT.json"), &snap); err != nil {
		t.Fatal(err)
	}
	if snap.Source == "" || snap.Date == "" {
		t.Errorf("SNAPSHOT.json names no source or date: %+v", snap)
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{if not .Main}}{{.Path}}{{end}}", "all")
	cmd.Dir = "../.."
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if missing := uncovered(snap, strings.Fields(string(b))); len(missing) > 0 {
		t.Errorf("the cut copy was not cut for %v: make vulndb", missing)
	}
}
