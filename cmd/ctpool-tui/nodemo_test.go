package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// The container image is built with the Dockerfile's build tags, which leave
// out the simulated cluster of --demo and, with it, client-go's fake
// clientset; the binary people install keeps them. The test reads the tags
// from the Dockerfile's go build, so a Dockerfile that drops them fails it.
func TestImageBuildLinksNoSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	df, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`go build[^\n]*-tags[ =](\S+)`).FindSubmatch(df)
	if m == nil {
		t.Fatal("the Dockerfile's go build passes no -tags: the image would carry the simulator")
	}
	// make image (no container engine) builds with the same tags.
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if mm := regexp.MustCompile(`(?m)^image:[^\n]*\n\t[^\n]*\$\(GO\) build[^\n]*-tags[ =](\S+)`).FindSubmatch(mk); mm == nil || string(mm[1]) != string(m[1]) {
		t.Fatalf("make image's go build does not pass the Dockerfile's -tags %s: the image would differ", m[1])
	}
	deps := func(tags string) []string {
		t.Helper()
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", "-tags", tags, ".")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps -tags %q: %v", tags, err)
		}
		return strings.Fields(string(out))
	}
	banned := func(p string) bool {
		return strings.HasPrefix(p, "k8s.io/client-go/kubernetes/fake") || strings.HasSuffix(p, "/internal/demo") ||
			strings.Contains(p, "/internal/demo/")
	}
	var found []string
	for _, p := range deps(string(m[1])) {
		if banned(p) {
			found = append(found, p)
		}
	}
	if len(found) > 0 {
		t.Errorf("the image's build (-tags %s) links %v", m[1], found)
	}
	// The check can see them: the default build has both.
	n := 0
	for _, p := range deps("") {
		if banned(p) {
			n++
		}
	}
	if n < 2 {
		t.Errorf("the default build links %d of the simulator's packages; the check above would prove nothing", n)
	}
}
