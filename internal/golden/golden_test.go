package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Assert reports instead of
// failing the test.
type recorder struct {
	testing.TB
	errors, fatals []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any) { r.fatals = append(r.fatals, fmt.Sprint(args...)) }

func TestDiff(t *testing.T) {
	got := Diff("a\nb\nc", "a\nB\nc\nd")
	want := "line 2:\n  want: b\n  got:  B\nline 4:\n  want: \n  got:  d\n"
	if got != want {
		t.Errorf("Diff = %q, want %q", got, want)
	}
	if d := Diff("same\n", "same\n"); d != "" {
		t.Errorf("Diff of equal texts = %q, want empty", d)
	}
}

func TestAssert(t *testing.T) {
	path := filepath.Join(t.TempDir(), "screen.golden")
	if err := os.WriteFile(path, []byte("top\nmiddle\nbottom"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := &recorder{TB: t}
	Assert(r, path, "top\nmiddle\nbottom")
	if len(r.errors)+len(r.fatals) != 0 {
		t.Errorf("equal output reported %v %v", r.errors, r.fatals)
	}

	r = &recorder{TB: t}
	Assert(r, path, "top\nchanged\nbottom")
	if len(r.errors) != 1 || len(r.fatals) != 0 {
		t.Fatalf("different output: errors %q, fatals %q, want one error", r.errors, r.fatals)
	}
	for _, part := range []string{path, "-update", "line 2:\n  want: middle\n  got:  changed\n"} {
		if !strings.Contains(r.errors[0], part) {
			t.Errorf("the mismatch report lacks %q:\n%s", part, r.errors[0])
		}
	}

	r = &recorder{TB: t}
	Assert(r, filepath.Join(t.TempDir(), "missing.golden"), "x")
	if len(r.fatals) != 1 || !strings.Contains(r.fatals[0], "-update") {
		t.Errorf("a missing golden file: fatals %q, want one naming -update", r.fatals)
	}
}

func TestAssertUpdateWrites(t *testing.T) {
	defer func(v bool) { *Update = v }(*Update)
	*Update = true
	path := filepath.Join(t.TempDir(), "new", "dir", "pod.yaml")
	r := &recorder{TB: t}
	Assert(r, path, "kind: Pod\n")
	if len(r.errors)+len(r.fatals) != 0 {
		t.Fatalf("update reported %v %v", r.errors, r.fatals)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "kind: Pod\n" {
		t.Errorf("wrote %q, want %q", b, "kind: Pod\n")
	}
}
