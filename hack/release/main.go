// Command release builds ctpool-tui's release artifacts from the checkout,
// publishing nothing (make release-snapshot):
//
//	dist/ctpool-tui_VERSION_OS_ARCH.tar.gz (.zip for windows)   the binaries, the kubectl plugin and its completion helper, LICENSE, README.md, THIRD_PARTY_LICENSES
//	dist/ctpool-tui_VERSION_OS_ARCH.tar.gz.sbom.json            a CycloneDX SBOM of that archive's binary (cyclonedx-gomod app)
//	dist/checksums.txt                                          sha256 of every archive and SBOM
//	dist/plugins/ctpool.yaml                                    the krew manifest, checked by krew's own validator
//	dist/ctpool-tui.rb                                          the Homebrew formula
//
// for linux, darwin and windows on amd64 and arm64. The version is git's
// description of the checkout: a tag vX.Y.Z on a clean HEAD is a release;
// anything else is a snapshot, vX.Y.(Z+1)-SNAPSHOT-<commit> after the last
// tag (v0.0.0-SNAPSHOT-<commit> before any), -dirty added for uncommitted
// changes. The same commit gives the same archives byte for byte: the
// binaries are built with -trimpath and without VCS stamping, stamped with the
// commit's own time, and the archives' entries carry that time, owner root
// and fixed modes, in a fixed order.
//
// This is a plain cross-build rather than goreleaser: the module proxy serves
// goreleaser only from copies it marks as not approved releases, so this
// program writes the same artifacts with the Go toolchain and two pinned
// tools (hack/tools/cyclonedx-gomod, hack/tools/krew). docs/development.md
// says how to use it.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	project     = "ctpool-tui"
	mainPackage = "./cmd/ctpool-tui"
	pluginName  = "ctpool" // kubectl ctpool
	repoURL     = "https://github.com/ctpool-tui/ctpool-tui"
)

// allPlatforms are the GOOS/GOARCH pairs of a release (hack/licenses lists the
// modules linked on the same ones).
var allPlatforms = []string{
	"linux/amd64", "linux/arm64",
	"darwin/amd64", "darwin/arm64",
	"windows/amd64", "windows/arm64",
}

type config struct {
	out       string   // the directory written (emptied first)
	platforms []string // GOOS/GOARCH
	sbom      bool     // write an SBOM per archive (builds cyclonedx-gomod the first time)
	validate  bool     // check the krew manifest with krew's validator (builds it the first time)
	urlBase   string   // where the archives are downloaded from: URL_BASE/VERSION/ARCHIVE
	version   string   // empty: from git
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("release: ")
	c := config{}
	platforms := flag.String("platforms", strings.Join(allPlatforms, ","), "comma-separated GOOS/GOARCH pairs to build")
	flag.StringVar(&c.out, "out", "dist", "the `directory` to write (emptied first)")
	flag.BoolVar(&c.sbom, "sbom", true, "write a CycloneDX SBOM per archive")
	flag.BoolVar(&c.validate, "validate", true, "check the krew manifest with krew's own validator")
	flag.StringVar(&c.urlBase, "url-base", repoURL+"/releases/download", "the archives' download `URL` (the version and the archive's name are appended)")
	flag.StringVar(&c.version, "version", "", "the version (default: from git describe)")
	flag.Parse()
	c.platforms = strings.Split(*platforms, ",")
	start := time.Now()
	r, err := build(c)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("%s %s: %d archive(s) in %s (%.0fs)", project, r.version, len(r.archives), c.out, time.Since(start).Seconds())
}

// result is what build wrote.
type result struct {
	version  string
	archives []archive
}

type archive struct {
	goos, goarch string
	name         string // file name under out
	sha256       string
	files        []string // the entries, in order
}

func build(c config) (*result, error) {
	for _, p := range c.platforms {
		if !validPlatform(p) {
			return nil, fmt.Errorf("unknown platform %q (one of %s)", p, strings.Join(allPlatforms, ", "))
		}
	}
	v, err := describe(c.version)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(c.out); err != nil {
		return nil, err
	}
	defer removeSharedClone()
	work := filepath.Join(c.out, ".work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	notices := filepath.Join(work, "THIRD_PARTY_LICENSES")
	if err := run(nil, "go", "run", "./hack/licenses", "-notices", notices); err != nil {
		return nil, err
	}
	var cdx string
	if c.sbom {
		if cdx, err = tool("hack/tools/cyclonedx-gomod/build"); err != nil {
			return nil, err
		}
	}
	r := &result{version: v.version}
	for _, p := range c.platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		a, err := buildArchive(c.out, work, v, goos, goarch, notices)
		if err != nil {
			return nil, err
		}
		if c.sbom {
			if err := writeSBOM(cdx, filepath.Join(c.out, a.name+".sbom.json"), v.version, goos, goarch); err != nil {
				return nil, err
			}
		}
		r.archives = append(r.archives, *a)
	}
	if err := writeChecksums(c.out); err != nil {
		return nil, err
	}
	manifest := filepath.Join(c.out, "plugins", pluginName+".yaml")
	if err := os.MkdirAll(filepath.Dir(manifest), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(manifest, krewManifest(r, c.urlBase), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.out, project+".rb"), brewFormula(r, c.urlBase), 0o644); err != nil {
		return nil, err
	}
	if c.validate {
		if err := validateManifest(manifest); err != nil {
			return nil, err
		}
	}
	return r, os.RemoveAll(work)
}

func validPlatform(p string) bool {
	for _, q := range allPlatforms {
		if p == q {
			return true
		}
	}
	return false
}

// versionInfo is what the binaries are stamped with.
type versionInfo struct {
	version string    // v1.2.0, or v1.2.1-SNAPSHOT-0123456789ab
	commit  string    // the full commit hash
	date    time.Time // the commit's time: the build date, and every archive entry's
}

var releaseTag = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)$`)

// describe derives the version from git describe: a clean checkout of a
// vX.Y.Z tag is that release, anything else a snapshot after the last tag.
func describe(override string) (versionInfo, error) {
	var v versionInfo
	out, err := output("git", "rev-parse", "HEAD")
	if err != nil {
		return v, err
	}
	v.commit = out
	if out, err = output("git", "log", "-1", "--format=%ct", "HEAD"); err != nil {
		return v, err
	}
	secs, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		return v, fmt.Errorf("the commit time %q: %v", out, err)
	}
	v.date = time.Unix(secs, 0).UTC()
	if override != "" {
		v.version = override
		return v, nil
	}
	desc, err := output("git", "describe", "--tags", "--always", "--dirty", "--match", "v[0-9]*")
	if err != nil {
		return v, err
	}
	if releaseTag.MatchString(desc) {
		v.version = desc
		return v, nil
	}
	next := "v0.0.0"
	if last, err := output("git", "describe", "--tags", "--abbrev=0", "--match", "v[0-9]*"); err == nil {
		if m := releaseTag.FindStringSubmatch(last); m != nil {
			patch, _ := strconv.Atoi(m[3])
			next = fmt.Sprintf("v%s.%s.%d", m[1], m[2], patch+1)
		}
	}
	v.version = next + "-SNAPSHOT-" + v.commit[:12]
	if strings.HasSuffix(desc, "-dirty") {
		v.version += "-dirty"
	}
	return v, nil
}

// buildArchive builds the binary for one platform and packs it with the
// plugin, the completion helper and the texts.
func buildArchive(out, work string, v versionInfo, goos, goarch, notices string) (*archive, error) {
	exe := ""
	if goos == "windows" {
		exe = ".exe"
	}
	bin := filepath.Join(work, goos+"_"+goarch, project+exe)
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s -X main.date=%s", v.version, v.commit, v.date.Format(time.RFC3339))
	env := []string{"GOOS=" + goos, "GOARCH=" + goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly"}
	if err := run(env, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", bin, mainPackage); err != nil {
		return nil, err
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	license, err := os.ReadFile("LICENSE")
	if err != nil {
		return nil, err
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		return nil, err
	}
	third, err := os.ReadFile(notices)
	if err != nil {
		return nil, err
	}
	entries := []entry{
		{name: project + exe, mode: 0o755, data: binary},
		{name: "kubectl-" + pluginName + exe, mode: 0o755, data: binary},
		completionHelper(goos),
		{name: "LICENSE", mode: 0o644, data: license},
		{name: "README.md", mode: 0o644, data: readme},
		{name: "THIRD_PARTY_LICENSES", mode: 0o644, data: third},
	}
	a := &archive{goos: goos, goarch: goarch}
	var packed []byte
	if goos == "windows" {
		a.name = fmt.Sprintf("%s_%s_%s_%s.zip", project, strings.TrimPrefix(v.version, "v"), goos, goarch)
		packed, err = packZip(entries, v.date)
	} else {
		a.name = fmt.Sprintf("%s_%s_%s_%s.tar.gz", project, strings.TrimPrefix(v.version, "v"), goos, goarch)
		packed, err = packTarGz(entries, v.date)
	}
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(out, a.name), packed, 0o644); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(packed)
	a.sha256 = hex.EncodeToString(sum[:])
	for _, e := range entries {
		a.files = append(a.files, e.name)
	}
	log.Printf("%s (%d MB)", a.name, len(packed)>>20)
	return a, nil
}

// writeSBOM writes the CycloneDX SBOM of the main package as built for one
// platform: cyclonedx-gomod's app mode lists exactly the modules linked with
// that GOOS/GOARCH (mod mode would list the whole module graph, test-only
// modules too). The main component's version is the release's, not the one
// cyclonedx-gomod reads from git; no serial number and no timestamp, so that
// the same commit gives the same SBOM.
func writeSBOM(cdx, path, version, goos, goarch string) error {
	dir, err := gitReadableCheckout()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	cmd := exec.Command(cdx, "app", "-json", "-noserial", "-notimestamp", "-main", strings.TrimPrefix(mainPackage, "./"), "-output", abs, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "CI=true")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cyclonedx-gomod app for %s/%s: %v", goos, goarch, err)
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return err
	}
	var bom struct {
		Metadata struct {
			Component struct {
				Version string `json:"version"`
			} `json:"component"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &bom); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if old := bom.Metadata.Component.Version; old != "" && old != version {
		b = bytes.ReplaceAll(b, []byte(old), []byte(version))
	}
	log.Printf("%s", filepath.Base(path))
	return os.WriteFile(abs, b, 0o644)
}

// gitReadableCheckout is a directory with this checkout's files that
// cyclonedx-gomod can read the git history of. Its git library cannot open a
// linked worktree (git worktree add), whose .git is a file, nor follow a
// shared clone's alternates: there it is a local clone (hard links)
// of HEAD with the working tree's uncommitted changes applied.
func gitReadableCheckout() (string, error) {
	if fi, err := os.Stat(".git"); err == nil && fi.IsDir() {
		return ".", nil
	}
	if sharedClone != "" {
		return sharedClone, nil
	}
	tmp, err := os.MkdirTemp("", "ctpool-release-src-")
	if err != nil {
		return "", err
	}
	sharedClone = tmp
	src, _ := os.Getwd()
	if err := run(nil, "git", "clone", "--quiet", "--no-checkout", src, tmp); err != nil {
		return "", err
	}
	head, err := output("git", "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	if err := run(nil, "git", "-C", tmp, "checkout", "--quiet", "--detach", head); err != nil {
		return "", err
	}
	diff, err := exec.Command("git", "diff", "--binary", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git diff: %v", err)
	}
	if len(diff) > 0 {
		apply := exec.Command("git", "-C", tmp, "apply", "-")
		apply.Stdin = bytes.NewReader(diff)
		if out, err := apply.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git apply: %v\n%s", err, out)
		}
	}
	return tmp, nil
}

// sharedClone is gitReadableCheckout's clone, made once per run.
var sharedClone string

func removeSharedClone() {
	if sharedClone != "" {
		os.RemoveAll(sharedClone)
		sharedClone = ""
	}
}

// writeChecksums writes checksums.txt: the sha256 of every file at the top
// of out, in the format sha256sum -c reads.
func writeChecksums(out string) error {
	ents, err := os.ReadDir(out)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && e.Name() != "checksums.txt" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		f, err := os.ReadFile(filepath.Join(out, n))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(f)
		fmt.Fprintf(&b, "%x  %s\n", sum, n)
	}
	return os.WriteFile(filepath.Join(out, "checksums.txt"), []byte(b.String()), 0o644)
}

// validateManifest runs krew's own manifest validator, the one krew-index
// runs on every pull request, without its install step (that downloads the
// archive from the manifest's uri; the release test installs from the local
// archive instead).
func validateManifest(manifest string) error {
	dir, err := tool("hack/tools/krew/build")
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(dir, "validate-krew-manifest"), "-manifest", manifest, "-skip-install")
	cmd.Env = append(os.Environ(), "KREW_NO_UPGRADE_CHECK=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("krew's validator refused %s: %v\n%s", manifest, err, out)
	}
	log.Printf("%s: valid (krew's validate-krew-manifest)", manifest)
	return nil
}

// tool runs a build script of hack/tools and returns the path it prints.
func tool(script string) (string, error) {
	cmd := exec.Command(script)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %v", script, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func run(env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return nil
}

func output(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
