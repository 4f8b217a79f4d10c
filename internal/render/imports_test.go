package render

import (
	"go/build"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// terminalLibraries are the import paths render must not depend on: the
// dashboard's terminal library, its widgets and its styles.
var terminalLibraries = []string{
	"github.com/charmbracelet/bubbletea",
	"github.com/charmbracelet/bubbles",
	"github.com/charmbracelet/lipgloss",
}

// terminalImports are the paths of imports that are a terminal library or
// inside one.
func terminalImports(paths []string) []string {
	var bad []string
	for _, p := range paths {
		for _, lib := range terminalLibraries {
			if p == lib || strings.HasPrefix(p, lib+"/") {
				bad = append(bad, p)
			}
		}
	}
	return bad
}

// TestImportsNoTerminalLibrary: render is free of the terminal library,
// directly (its own imports, read with go/build) and through any package
// it imports (go list -deps). The dashboard (tui) is read the same way and
// must be found to use bubbletea, so that the check is known to see one.
func TestImportsNoTerminalLibrary(t *testing.T) {
	t.Run("direct", func(t *testing.T) {
		pkg, err := build.ImportDir(".", 0)
		if err != nil {
			t.Fatal(err)
		}
		if bad := terminalImports(pkg.Imports); len(bad) > 0 {
			t.Errorf("render imports %v", bad)
		}
		tui, err := build.ImportDir(filepath.Join("..", "..", "tui"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(terminalImports(tui.Imports)) == 0 {
			t.Errorf("the check finds no terminal library in tui's imports %v", tui.Imports)
		}
	})
	t.Run("every dependency", func(t *testing.T) {
		deps := func(pkg string) []string {
			t.Helper()
			out, err := exec.Command(goTool(t), "list", "-deps", pkg).Output()
			if err != nil {
				msg := ""
				if ee, ok := err.(*exec.ExitError); ok {
					msg = string(ee.Stderr)
				}
				t.Fatalf("go list -deps %s: %v %s", pkg, err, msg)
			}
			return strings.Fields(string(out))
		}
		if bad := terminalImports(deps(".")); len(bad) > 0 {
			t.Errorf("render depends on %v", bad)
		}
		if len(terminalImports(deps("../../tui"))) == 0 {
			t.Error("the check finds no terminal library among tui's dependencies")
		}
	})
}

// goTool is the go command: on the PATH, else the toolchain's own.
func goTool(t *testing.T) string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(p); err != nil {
		t.Fatalf("no go command: %v", err)
	}
	return p
}
