package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestReleaseSnapshot is CI's share of make release-snapshot (make
// release-check): the linux/amd64 archive of a snapshot, its checksum, the
// krew manifest validated by krew's own validator and installed by krew from
// the archive, the snapshot's binary run (version, --demo --once) with no
// request leaving it, and the same archive built twice, byte for byte. The
// other platforms and the SBOMs are make release-snapshot's alone.
func TestReleaseSnapshot(t *testing.T) {
	if os.Getenv("CTPOOL_RELEASE_TEST") == "" {
		t.Skip("builds a release archive and krew (about a minute the first time): make release-check runs it")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("runs the linux/amd64 binary; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	t.Chdir("../..")
	out := t.TempDir()
	c := config{out: out, platforms: []string{"linux/amd64"}, validate: true, urlBase: repoURL + "/releases/download"}
	r, err := build(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.archives) != 1 {
		t.Fatalf("archives %+v", r.archives)
	}
	a := r.archives[0]
	head, err := output("git", "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.version, head[:12]) && !releaseTag.MatchString(r.version) {
		t.Errorf("version %q is neither a release tag nor a snapshot of HEAD %s", r.version, head)
	}
	archivePath := filepath.Join(out, a.name)

	t.Run("checksums", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(out, "checksums.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if want := a.sha256 + "  " + a.name + "\n"; string(b) != want {
			t.Errorf("checksums.txt:\n%s\nwant:\n%s", b, want)
		}
		if got := fileSHA256(t, archivePath); got != a.sha256 {
			t.Errorf("archive sha256 %s, recorded %s", got, a.sha256)
		}
	})

	files := readTarGz(t, archivePath)
	t.Run("contents", func(t *testing.T) {
		var names []string
		for _, f := range files {
			names = append(names, f.name+" "+os.FileMode(f.mode).String())
		}
		want := []string{
			"ctpool-tui -rwxr-xr-x", "kubectl-ctpool -rwxr-xr-x", "kubectl_complete-ctpool -rwxr-xr-x",
			"LICENSE -rw-r--r--", "README.md -rw-r--r--", "THIRD_PARTY_LICENSES -rw-r--r--",
		}
		if !reflect.DeepEqual(names, want) {
			t.Errorf("entries %v, want %v", names, want)
		}
		license, err := os.ReadFile("LICENSE")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(files[3].data, license) || !bytes.Contains(license, []byte("Apache License")) {
			t.Error("the archive's LICENSE is not the repository's Apache License")
		}
		if !bytes.Equal(files[0].data, files[1].data) {
			t.Error("kubectl-ctpool is not the same program as ctpool-tui")
		}
		for _, m := range []string{"k8s.io/client-go", "github.com/charmbracelet/bubbletea", "the Go standard library"} {
			if !bytes.Contains(files[5].data, []byte(m)) {
				t.Errorf("THIRD_PARTY_LICENSES does not name %s", m)
			}
		}
		if !bytes.Contains(files[2].data, []byte("exec kubectl-ctpool __complete")) {
			t.Errorf("completion helper:\n%s", files[2].data)
		}
	})

	bin := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(bin, f.name), f.data, os.FileMode(f.mode)); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("binary", func(t *testing.T) {
		proxy := refuseProxy(t)
		code, stdout, stderr := runBinary(t, proxy, filepath.Join(bin, "ctpool-tui"), "version", "-o", "json")
		var v struct{ Version, Commit, Date, Platform string }
		if err := json.Unmarshal([]byte(stdout), &v); code != 0 || err != nil {
			t.Fatalf("version: exit %d, %v\n%s%s", code, err, stdout, stderr)
		}
		if v.Version != r.version || v.Commit != head || v.Platform != "linux/amd64" {
			t.Errorf("version says %+v; the release is %s of %s", v, r.version, head)
		}
		if code, stdout, stderr := runBinary(t, proxy, filepath.Join(bin, "kubectl-ctpool"), "version"); code != 0 || !strings.Contains(stdout, r.version) {
			t.Errorf("kubectl-ctpool version: exit %d\n%s%s", code, stdout, stderr)
		}
		// --once exits 0 when every pool is ok and 3 when one needs
		// attention; the demo's trouble may come within its first seconds.
		code, stdout, stderr = runBinary(t, proxy, filepath.Join(bin, "ctpool-tui"), "--demo", "--once", "-o", "json")
		var once struct {
			Pools []struct{ Name string } `json:"pools"`
		}
		if err := json.Unmarshal([]byte(stdout), &once); (code != 0 && code != 3) || err != nil || len(once.Pools) == 0 {
			t.Errorf("--demo --once: exit %d, %v\n%.2000s\n%s", code, err, stdout, stderr)
		}
		proxy.check(t)
	})

	t.Run("krew", func(t *testing.T) {
		// build validated the manifest with validate-krew-manifest; here krew
		// installs it from the local archive, as a user's krew would from uri.
		dir, err := tool("hack/tools/krew/build")
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		cmd := exec.Command(filepath.Join(dir, "krew"), "install",
			"--manifest="+filepath.Join(out, "plugins", "ctpool.yaml"), "--archive="+archivePath)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "KREW_ROOT=" + root,
			"KREW_OS=linux", "KREW_ARCH=amd64", "KREW_NO_UPGRADE_CHECK=1"}
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("krew install: %v\n%s", err, b)
		}
		code, stdout, stderr := runBinary(t, nil, filepath.Join(root, "bin", "kubectl-ctpool"), "version")
		if code != 0 || !strings.Contains(stdout, r.version) {
			t.Errorf("kubectl-ctpool installed by krew: exit %d\n%s%s", code, stdout, stderr)
		}
		for _, f := range []string{"LICENSE", "kubectl_complete-ctpool"} {
			if _, err := os.Stat(filepath.Join(root, "store", "ctpool", r.version, f)); err != nil {
				t.Errorf("krew did not install %s: %v", f, err)
			}
		}
	})

	t.Run("formula", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(out, "ctpool-tui.rb"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`url "` + a.url(c.urlBase, r.version) + `"`, `sha256 "` + a.sha256 + `"`, "on_linux do", "on_intel do"} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("formula lacks %s:\n%s", want, b)
			}
		}
	})

	t.Run("reproducible", func(t *testing.T) {
		again := c
		again.out = t.TempDir()
		again.validate = false
		r2, err := build(again)
		if err != nil {
			t.Fatal(err)
		}
		if r2.archives[0].sha256 != a.sha256 {
			t.Errorf("the same commit built twice gave %s, then %s", a.sha256, r2.archives[0].sha256)
		}
	})
}

// TestZipIsReproducible: the windows archives, which the CI-sized test does
// not build, are as stable as the tar.gz ones.
func TestZipIsReproducible(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	entries := []entry{{name: "ctpool-tui.exe", mode: 0o755, data: []byte("MZ")}, completionHelper("windows"), {name: "LICENSE", mode: 0o644, data: []byte("text")}}
	one, err := packZip(entries, when)
	if err != nil {
		t.Fatal(err)
	}
	two, err := packZip(entries, when)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one, two) {
		t.Fatal("the same entries zipped twice differ")
	}
	zr, err := zip.NewReader(bytes.NewReader(one), int64(len(one)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if !f.Modified.Equal(when) {
			t.Errorf("%s: modified %v", f.Name, f.Modified)
		}
	}
	if want := []string{"ctpool-tui.exe", "kubectl_complete-ctpool.cmd", "LICENSE"}; !reflect.DeepEqual(names, want) {
		t.Errorf("entries %v, want %v", names, want)
	}
}

// TestManifests: the krew manifest and the formula of a six-platform release.
func TestManifests(t *testing.T) {
	r := &result{version: "v1.2.0"}
	for _, p := range allPlatforms {
		goos, goarch, _ := strings.Cut(p, "/")
		ext := ".tar.gz"
		if goos == "windows" {
			ext = ".zip"
		}
		r.archives = append(r.archives, archive{goos: goos, goarch: goarch, name: "ctpool-tui_1.2.0_" + goos + "_" + goarch + ext, sha256: strings.Repeat("a", 64)})
	}
	m := string(krewManifest(r, "https://example.com/dl/"))
	for _, want := range []string{
		"  version: v1.2.0\n",
		"    uri: https://example.com/dl/v1.2.0/ctpool-tui_1.2.0_windows_arm64.zip\n",
		"    bin: kubectl-ctpool.exe\n",
		"    - from: kubectl_complete-ctpool.cmd\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("manifest lacks %q:\n%s", want, m)
		}
	}
	if n := strings.Count(m, "- selector:"); n != 6 {
		t.Errorf("%d platforms in the manifest", n)
	}
	f := string(brewFormula(r, "https://example.com/dl"))
	if strings.Contains(f, "windows") || strings.Count(f, "url \"") != 4 || !strings.Contains(f, "on_macos do\n    on_intel do\n      url \"https://example.com/dl/v1.2.0/ctpool-tui_1.2.0_darwin_amd64.tar.gz\"") {
		t.Errorf("formula:\n%s", f)
	}
}

type tarFile struct {
	name string
	mode int64
	data []byte
}

func readTarGz(t *testing.T, path string) []tarFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var files []tarFile
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: type %c, owner %d:%d", h.Name, h.Typeflag, h.Uid, h.Gid)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, tarFile{name: h.Name, mode: h.Mode, data: data})
	}
	return files
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// proxyTrap is an HTTP(S) proxy that answers nobody and counts who came: set
// as the binary's proxy, a request it makes on its own (an update check)
// would arrive here first.
type proxyTrap struct {
	ln    net.Listener
	conns chan struct{}
}

func refuseProxy(t *testing.T) *proxyTrap {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxyTrap{ln: ln, conns: make(chan struct{}, 100)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.conns <- struct{}{}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *proxyTrap) env() []string {
	u := "http://" + p.ln.Addr().String()
	return []string{"HTTPS_PROXY=" + u, "HTTP_PROXY=" + u, "https_proxy=" + u, "http_proxy=" + u, "NO_PROXY=", "no_proxy="}
}

func (p *proxyTrap) check(t *testing.T) {
	if n := len(p.conns); n > 0 {
		t.Errorf("the binary made %d connection(s) through the proxy; it makes no request it was not asked to", n)
	}
}

// runBinary runs a program with an empty HOME and no kubeconfig, at most a
// minute.
func runBinary(t *testing.T, proxy *proxyTrap, path string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "KUBECONFIG=" + filepath.Join(home, "none"), "TERM=dumb"}
	if proxy != nil {
		cmd.Env = append(cmd.Env, proxy.env()...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("%s %v: %v", path, args, err)
	return 0, "", ""
}

// TestDescribe: the version of a checkout, from git describe.
func TestDescribe(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	commit := func() string {
		t.Helper()
		if err := os.WriteFile("f", []byte(time.Now().String()), 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "f")
		git("commit", "-q", "-m", "c")
		return git("rev-parse", "HEAD")
	}
	version := func() string {
		t.Helper()
		v, err := describe("")
		if err != nil {
			t.Fatal(err)
		}
		return v.version
	}
	git("init", "-q")
	first := commit()
	if got, want := version(), "v0.0.0-SNAPSHOT-"+first[:12]; got != want {
		t.Errorf("before any tag: %s, want %s", got, want)
	}
	git("tag", "-a", "-m", "v1.2.0", "v1.2.0")
	if got := version(); got != "v1.2.0" {
		t.Errorf("on the tag: %s, want v1.2.0", got)
	}
	if err := os.WriteFile("f", []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := version(), "v1.2.1-SNAPSHOT-"+first[:12]+"-dirty"; got != want {
		t.Errorf("on the tag, changed: %s, want %s", got, want)
	}
	second := commit()
	if got, want := version(), "v1.2.1-SNAPSHOT-"+second[:12]; got != want {
		t.Errorf("after the tag: %s, want %s", got, want)
	}
}
