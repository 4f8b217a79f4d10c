// Command vulndb runs govulncheck for make lint, from the best database
// this machine has, and says which one it used:
//
//  1. the live database (vuln.go.dev), when it answers within 5 s;
//  2. else a full offline copy in govulncheck's v1 layout ($VULNDB, default
//     ../shared/vulndb), its source and date read from its README;
//  3. else the project's own cut copy, hack/vulndb/db: the entries of a full
//     copy that concern a module of this build (go list -m all), the
//     standard library or the toolchain, with a SNAPSHOT.json naming its
//     source, date and the modules it was cut for. It is refused when the
//     build has since gained a module it was not cut for (make vulndb cuts
//     it again).
//
// A called vulnerability fails the check (govulncheck's exit code 3).
//
//	go run ./hack/vulndb check ./...
//	go run ./hack/vulndb cut -from ../shared/vulndb -source "golang/vulndb a752ea5" -date 2026-08-21
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Snapshot describes a cut copy: where it came from and what it covers.
type Snapshot struct {
	Source  string   `json:"source"`
	Date    string   `json:"date"`
	Modules []string `json:"modules"` // module paths of the build it was cut for
}

type moduleEntry struct {
	Path  string            `json:"path"`
	Vulns []json.RawMessage `json:"vulns"`
}

type vulnEntry struct {
	ID string `json:"id"`
}

// govulncheck is the pinned version, built through the module proxy.
const govulncheck = "golang.org/x/vuln/cmd/govulncheck@v1.1.4"

// cutCopy is where the project's own copy lives, from the repository root.
const cutCopy = "hack/vulndb/db"

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "check" && os.Args[1] != "cut") {
		fmt.Fprintln(os.Stderr, "usage: vulndb check [packages] | vulndb cut -from DIR -source TEXT -date YYYY-MM-DD")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	var err error
	switch os.Args[1] {
	case "check":
		fs.Parse(os.Args[2:])
		pkgs := fs.Args()
		if len(pkgs) == 0 {
			pkgs = []string{"./..."}
		}
		var code int
		code, err = check(pkgs)
		if err == nil {
			os.Exit(code)
		}
	case "cut":
		from := fs.String("from", "../shared/vulndb", "a full copy of the database in govulncheck's v1 layout")
		to := fs.String("to", cutCopy, "where to write the cut copy (replaced)")
		source := fs.String("source", "", "what the full copy is, e.g. golang/vulndb and its commit (required)")
		date := fs.String("date", "", "the date of the full copy, YYYY-MM-DD (required)")
		fs.Parse(os.Args[2:])
		if *source == "" || *date == "" {
			fmt.Fprintln(os.Stderr, "vulndb cut: -source and -date are required")
			os.Exit(2)
		}
		err = cut(*from, *to, *source, *date)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulndb:", err)
		os.Exit(1)
	}
}

// check picks the database, says which, and runs govulncheck on pkgs; it
// returns govulncheck's exit code (3: a called vulnerability).
func check(pkgs []string) (int, error) {
	db, what, err := pickDB()
	if err != nil {
		return 0, err
	}
	fmt.Println("vulncheck: " + what)
	return govulncheckIn(".", db, pkgs, os.Stdout, os.Stderr)
}

// govulncheckIn runs govulncheck on pkgs of the module in dir against the
// database directory db ("" for the live one) and returns its exit code.
func govulncheckIn(dir, db string, pkgs []string, stdout, stderr io.Writer) (int, error) {
	bin, err := installGovulncheck()
	if err != nil {
		return 0, err
	}
	var args []string
	if db != "" {
		abs, err := filepath.Abs(db)
		if err != nil {
			return 0, err
		}
		args = append(args, "-db", "file://"+abs)
	}
	cmd := exec.Command(bin, append(args, pkgs...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// installGovulncheck builds the pinned govulncheck once into the user's
// cache and returns its path (go run would turn its exit code 3 into 1).
func installGovulncheck() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, "ctpool-tui", "govulncheck-"+govulncheck[strings.LastIndex(govulncheck, "@")+1:])
	if _, err := os.Stat(filepath.Join(bin, "govulncheck")); err == nil {
		return filepath.Join(bin, "govulncheck"), nil
	}
	cmd := exec.Command("go", "install", govulncheck)
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s: %v\n%s", govulncheck, err, out)
	}
	return filepath.Join(bin, "govulncheck"), nil
}

// pickDB returns the database directory ("" for the live one) and a line
// that says which it is and of what date.
func pickDB() (dir, what string, err error) {
	c := http.Client{Timeout: 5 * time.Second}
	if resp, err := c.Get("https://vuln.go.dev/index/db.json"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return "", "the live database, vuln.go.dev", nil
		}
	}
	full := os.Getenv("VULNDB")
	if full == "" {
		full = "../shared/vulndb"
	}
	if _, err := os.Stat(filepath.Join(full, "index", "modules.json")); err == nil {
		return full, "vuln.go.dev not reachable; the offline copy " + full + ", " + readmeDate(full), nil
	}
	var snap Snapshot
	if err := readJSON(filepath.Join(cutCopy, "SNAPSHOT.json"), &snap); err != nil {
		return "", "", fmt.Errorf("no database: vuln.go.dev not reachable, no copy at %s ($VULNDB), and %w", full, err)
	}
	mods, err := buildModules()
	if err != nil {
		return "", "", err
	}
	if missing := uncovered(snap, mods); len(missing) > 0 {
		return "", "", fmt.Errorf("the copy in %s was cut before the build gained %s: cut it again (make vulndb, with a full copy at $VULNDB)",
			cutCopy, strings.Join(missing, ", "))
	}
	return cutCopy, fmt.Sprintf("vuln.go.dev not reachable and no copy at %s; the project's cut copy %s: %s of %s", full, cutCopy, snap.Source, snap.Date), nil
}

// uncovered is the modules of the build the snapshot was not cut for.
func uncovered(snap Snapshot, mods []string) []string {
	var missing []string
	for _, m := range mods {
		if !slices.Contains(snap.Modules, m) {
			missing = append(missing, m)
		}
	}
	return missing
}

// readmeDate is "golang/vulndb commit X of DATE" from a copy's README, or
// "date unknown".
func readmeDate(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		return "date unknown (no README)"
	}
	m := regexp.MustCompile(`commit\s+([0-9a-f]{7,40})\s*\((\d{4}-\d{2}-\d{2})\)`).FindSubmatch(b)
	if m == nil {
		return "date unknown (its README does not say)"
	}
	return fmt.Sprintf("golang/vulndb commit %.12s of %s", m[1], m[2])
}

func cut(from, to, source, date string) error {
	mods, err := buildModules()
	if err != nil {
		return err
	}
	keep := map[string]bool{"stdlib": true, "toolchain": true}
	for _, m := range mods {
		keep[m] = true
	}

	var index []moduleEntry
	if err := readJSON(filepath.Join(from, "index", "modules.json"), &index); err != nil {
		return err
	}
	ids := map[string]bool{}
	var kept []moduleEntry
	for _, e := range index {
		if !keep[e.Path] {
			continue
		}
		kept = append(kept, e)
		for _, raw := range e.Vulns {
			var v vulnEntry
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("modules.json, %s: %w", e.Path, err)
			}
			ids[v.ID] = true
		}
	}
	var vulns []json.RawMessage
	if err := readJSON(filepath.Join(from, "index", "vulns.json"), &vulns); err != nil {
		return err
	}
	var keptVulns []json.RawMessage
	for _, raw := range vulns {
		var v vulnEntry
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("vulns.json: %w", err)
		}
		if ids[v.ID] {
			keptVulns = append(keptVulns, raw)
		}
	}

	if err := os.RemoveAll(to); err != nil {
		return err
	}
	for _, d := range []string{"index", "ID"} {
		if err := os.MkdirAll(filepath.Join(to, d), 0o755); err != nil {
			return err
		}
	}
	for id := range ids {
		b, err := os.ReadFile(filepath.Join(from, "ID", id+".json"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, "ID", id+".json"), b, 0o644); err != nil {
			return err
		}
	}
	if b, err := os.ReadFile(filepath.Join(from, "LICENSE")); err == nil { // the data's own licence travels with it
		if err := os.WriteFile(filepath.Join(to, "LICENSE"), b, 0o644); err != nil {
			return err
		}
	}
	for name, v := range map[string]any{
		"index/db.json":      json.RawMessage(`{"modified":"0001-01-01T00:00:00Z"}`),
		"index/modules.json": kept,
		"index/vulns.json":   keptVulns,
		"SNAPSHOT.json":      Snapshot{Source: source, Date: date, Modules: mods},
	} {
		if err := writeJSON(filepath.Join(to, name), v); err != nil {
			return err
		}
	}
	fmt.Printf("vulndb: %d modules, %d entries of %s (%s) in %s\n", len(kept), len(ids), source, date, to)
	return nil
}

// buildModules is the module paths of `go list -m all`, the main module
// left out, sorted.
func buildModules() ([]string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{if not .Main}}{{.Path}}{{end}}", "all").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list -m all: %v: %s", err, ee.Stderr)
		}
		return nil, err
	}
	var mods []string
	for _, l := range strings.Fields(string(out)) {
		mods = append(mods, l)
	}
	slices.Sort(mods)
	return slices.Compact(mods), nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
