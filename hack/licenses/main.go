// Command licenses lists the third-party modules the ctpool-tui binary links
// on every platform a release builds, finds each module's license files in
// the module cache, classifies them against the license texts under
// templates/, and checks them against the allow list.
//
//	go run ./hack/licenses -check docs/licenses.md   # make lint: fail on a module without an allowed license, or a stale list
//	go run ./hack/licenses -w docs/licenses.md       # make licenses: write the list again (after a dependency change)
//	go run ./hack/licenses -notices FILE             # the release: every license and NOTICE text, for THIRD_PARTY_LICENSES
//
// It reads only what `go list` and the module cache hold: offline once the
// modules are downloaded, a few seconds on 2 cores. No classifier library is
// used: the one the module proxy serves (github.com/google/licensecheck) is
// marked there as not an approved release, so the few license texts the
// dependencies use are matched word for word here instead (docs/licenses.md).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// mainPackage is the package every release archive's binaries are built from.
const mainPackage = "./cmd/ctpool-tui"

// platforms are the GOOS/GOARCH pairs of the release archives (hack/release);
// the modules linked differ between them (a console library on windows only).
var platforms = []string{
	"linux/amd64", "linux/arm64",
	"darwin/amd64", "darwin/arm64",
	"windows/amd64", "windows/arm64",
}

// allowed are the licenses a linked module may have: permissive ones whose
// conditions a binary distribution meets by shipping the notices.
var allowed = map[string]bool{
	"Apache-2.0":   true,
	"MIT":          true,
	"BSD-2-Clause": true,
	"BSD-3-Clause": true,
	"ISC":          true,
	"MPL-2.0":      true, // file-level copyleft: met as long as its files are not modified
}

// reviewed are modules whose license is not in a license file of their own,
// read by a person and pinned to the version read: another version is
// classified again from its files. Phrase must still be in File.
var reviewed = map[string]struct {
	ID, File, Phrase string
}{
	// No LICENSE file in this version; its README says "## License\n\nMIT".
	"github.com/mattn/go-localereader@v0.0.1": {ID: "MIT", File: "README.md", Phrase: "## License\n\nMIT\n"},
}

// prose are license files, pinned to the version read, whose words beyond the
// license texts found in them a person has read: they say which files which
// of those licenses covers, and add no term.
var prose = map[string]string{
	"go.yaml.in/yaml/v3@v3.0.5": "LICENSE: which files are MIT (ported from libyaml) and which Apache-2.0",
	"sigs.k8s.io/yaml@v1.6.0":   "LICENSE: MIT for the project, and the forked go-yaml's MIT and Apache-2.0 (with its NOTICE) and BSD-3-Clause, each naming its files",
}

type module struct {
	Path, Version, Dir string
	Platforms          []string // where it is linked; all of them when empty
	License            string   // SPDX expression
	Files              []string // license and NOTICE files, relative to Dir
	Problem            string
}

func main() {
	check := flag.String("check", "", "fail when a module has no allowed license or `FILE` (the list) is not what -w would write")
	write := flag.String("w", "", "write the list of modules and licenses to `FILE`")
	notices := flag.String("notices", "", "write every linked module's license and NOTICE texts to `FILE`")
	flag.Parse()
	if flag.NArg() > 0 || *check == "" && *write == "" && *notices == "" {
		fmt.Fprintln(os.Stderr, "usage: licenses [-check FILE] [-w FILE] [-notices FILE]")
		os.Exit(2)
	}
	if err := run(*check, *write, *notices); err != nil {
		fmt.Fprintln(os.Stderr, "licenses:", err)
		os.Exit(1)
	}
}

func run(check, write, notices string) error {
	mods, err := linkedModules()
	if err != nil {
		return err
	}
	var problems []string
	for i := range mods {
		m := &mods[i]
		if err := m.classify(); err != nil {
			return err
		}
		if m.Problem != "" {
			problems = append(problems, fmt.Sprintf("%s %s: %s", m.Path, m.Version, m.Problem))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d linked module(s) without an allowed license (allowed: %s; a license found elsewhere goes into reviewed in hack/licenses/main.go):\n  %s",
			len(problems), strings.Join(allowedList(), ", "), strings.Join(problems, "\n  "))
	}
	list := renderList(mods)
	if write != "" {
		if err := os.WriteFile(write, list, 0o644); err != nil {
			return err
		}
	}
	if check != "" {
		have, err := os.ReadFile(check)
		if err != nil {
			return err
		}
		if !bytes.Equal(have, list) {
			return fmt.Errorf("%s is not the list of the modules linked now: run make licenses and commit it", check)
		}
	}
	if notices != "" {
		b, err := renderNotices(mods)
		if err != nil {
			return err
		}
		if err := os.WriteFile(notices, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func allowedList() []string {
	var ids []string
	for id := range allowed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// linkedModules lists the modules of the packages the main package links, on
// every release platform, built as a release builds it (CGO_ENABLED=0, no tags).
func linkedModules() ([]module, error) {
	type found struct {
		m     module
		where []string
	}
	var (
		mu    sync.Mutex
		byKey = map[string]*found{}
		errs  []error
		wg    sync.WaitGroup
	)
	for _, p := range platforms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			goos, goarch, _ := strings.Cut(p, "/")
			cmd := exec.Command("go", "list", "-deps", "-json=Module", mainPackage)
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("go list on %s: %v\n%s", p, err, stderr.Bytes()))
				return
			}
			dec := json.NewDecoder(bytes.NewReader(out))
			for dec.More() {
				var pkg struct {
					Module *struct {
						Path, Version, Dir string
						Main               bool
						Replace            *struct{ Path, Version, Dir string }
					}
				}
				if err := dec.Decode(&pkg); err != nil {
					errs = append(errs, err)
					return
				}
				mod := pkg.Module
				if mod == nil || mod.Main {
					continue // the standard library, ctpool-tui itself
				}
				m := module{Path: mod.Path, Version: mod.Version, Dir: mod.Dir}
				if r := mod.Replace; r != nil {
					m.Version, m.Dir = r.Version, r.Dir
					if r.Path != mod.Path {
						m.Version = r.Path + " " + r.Version
					}
				}
				key := m.Path + "@" + m.Version
				f := byKey[key]
				if f == nil {
					f = &found{m: m}
					byKey[key] = f
				}
				if n := len(f.where); n == 0 || f.where[n-1] != p {
					f.where = append(f.where, p)
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var mods []module
	for _, f := range byKey {
		if len(f.where) < len(platforms) {
			sort.Strings(f.where)
			f.m.Platforms = f.where
		}
		mods = append(mods, f.m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods, nil
}

// isLicenseFile says whether a file at a module's root holds its license
// (LICENSE, LICENSE.txt, LICENSE.libyaml, COPYING, ...) or a NOTICE that
// the Apache License asks to be passed on.
func isLicenseFile(name string) (license, notice bool) {
	n := strings.ToLower(name)
	for _, p := range []string{"license", "licence", "copying", "unlicense"} {
		if strings.HasPrefix(n, p) {
			return true, false
		}
	}
	return false, strings.HasPrefix(n, "notice")
}

func (m *module) classify() error {
	if m.Dir == "" {
		m.Problem = "not in the module cache (go mod download)"
		return nil
	}
	entries, err := os.ReadDir(m.Dir)
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	var unclassified []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		license, notice := isLicenseFile(e.Name())
		if !license && !notice {
			continue
		}
		m.Files = append(m.Files, e.Name())
		if !license {
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.Dir, e.Name()))
		if err != nil {
			return err
		}
		c := classify(string(b))
		for _, id := range c.IDs {
			ids[id] = true
		}
		if _, ok := prose[m.Path+"@"+m.Version]; c.Residue != "" && !(ok && len(c.IDs) > 0) {
			unclassified = append(unclassified, fmt.Sprintf("%s holds text no known license accounts for: %.200q", e.Name(), c.Residue))
		}
	}
	if r, ok := reviewed[m.Path+"@"+m.Version]; ok && len(ids) == 0 && len(unclassified) == 0 {
		b, err := os.ReadFile(filepath.Join(m.Dir, r.File))
		if err != nil {
			return err
		}
		if !strings.Contains(strings.ReplaceAll(string(b), "\r\n", "\n"), r.Phrase) {
			m.Problem = fmt.Sprintf("reviewed as %s from %s, which no longer says %q", r.ID, r.File, r.Phrase)
			return nil
		}
		ids[r.ID] = true
		m.Files = append(m.Files, r.File)
	}
	var list []string
	for id := range ids {
		list = append(list, id)
	}
	sort.Strings(list)
	m.License = strings.Join(list, " AND ")
	switch {
	case len(unclassified) > 0:
		m.Problem = strings.Join(unclassified, "; ")
	case len(list) == 0 && len(m.Files) == 0:
		m.Problem = "no license file"
	case len(list) == 0:
		m.Problem = "no known license in " + strings.Join(m.Files, ", ")
	default:
		var bad []string
		for _, id := range list {
			if !allowed[id] {
				bad = append(bad, id)
			}
		}
		if len(bad) > 0 {
			m.Problem = "license not on the allow list: " + strings.Join(bad, ", ")
		}
	}
	return nil
}

func renderList(mods []module) []byte {
	var b bytes.Buffer
	b.WriteString(`# Third-party licenses

The modules the ctpool-tui binary links, on every platform a release is built for, and the licenses their
files hold. Generated by ` + "`make licenses`" + ` (hack/licenses) from the module graph of ` + "`" + mainPackage + "`" + `;
` + "`make lint`" + ` fails when this list is stale or a linked module has no license on the allow list
(` + strings.Join(allowedList(), ", ") + `).
Each release archive carries their full texts in THIRD_PARTY_LICENSES, with the Go standard library's.

How a license is found: the files named LICENSE*, LICENCE*, COPYING* at the module's root are matched word for
word (case, punctuation and line breaks aside) against the license texts under hack/licenses/templates, where
only names and bullets may vary; a file with more than a few words that no license accounts for is reported,
not guessed. A module without a license file is listed only after a person has read where its license is
stated, and a file with more words only after a person has read them (the lines that say which files which
license covers), each pinned to the version read (` + "`reviewed`" + ` and ` + "`prose`" + ` in hack/licenses/main.go).
No classifier library is used: the one the module proxy serves, github.com/google/licensecheck, is marked
there as not an approved release.

| module | version | license | linked on |
|---|---|---|---|
`)
	for _, m := range mods {
		where := "all"
		if len(m.Platforms) > 0 {
			where = strings.Join(m.Platforms, ", ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", m.Path, m.Version, m.License, where)
	}
	return b.Bytes()
}

// renderNotices writes the Go standard library's license, then each linked
// module's license and NOTICE files; a text several modules ship alike (the
// Apache License) is written once, under the names of all of them.
func renderNotices(mods []module) ([]byte, error) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOROOT: %v", err)
	}
	goLicense, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "LICENSE"))
	if err != nil {
		return nil, err
	}
	type block struct {
		names []string
		text  []byte
	}
	blocks := []*block{{names: []string{"the Go standard library (BSD-3-Clause): LICENSE"}, text: goLicense}}
	byText := map[string]*block{}
	for _, m := range mods {
		for _, f := range m.Files {
			text, err := os.ReadFile(filepath.Join(m.Dir, f))
			if err != nil {
				return nil, err
			}
			if r, ok := reviewed[m.Path+"@"+m.Version]; ok && f == r.File {
				t, err := templateFS.ReadFile("templates/" + r.ID + ".txt")
				if err != nil {
					return nil, err
				}
				text = fmt.Appendf(nil, "(This version has no license file; its %s states its license as %s, whose terms are:)\n\n%s", f, r.ID, t)
			}
			text = bytes.TrimLeft(text, "\n")
			name := fmt.Sprintf("%s %s (%s): %s", m.Path, m.Version, m.License, f)
			if b := byText[string(text)]; b != nil {
				b.names = append(b.names, name)
				continue
			}
			b := &block{names: []string{name}, text: text}
			byText[string(text)] = b
			blocks = append(blocks, b)
		}
	}
	var out bytes.Buffer
	out.WriteString("ctpool-tui links the Go standard library and the modules below. Their licenses and notices follow,\neach as its module ships it (docs/licenses.md lists the modules).\n")
	rule := strings.Repeat("=", 78)
	for _, b := range blocks {
		fmt.Fprintf(&out, "\n%s\n%s\n%s\n\n%s", rule, strings.Join(b.names, "\n"), rule, b.text)
		if !bytes.HasSuffix(b.text, []byte("\n")) {
			out.WriteString("\n")
		}
	}
	return out.Bytes(), nil
}
