package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

var commitTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fixture writes a stand-in binary, CA bundle and zoneinfo tree (with a
// link, as Debian's has) and returns Options naming them.
func fixture(t *testing.T) Options {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bin := write("ctpool-tui", "\x7fELF stand-in")
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write("zoneinfo/Europe/Berlin", "TZif berlin")
	if err := os.Symlink("Europe/Berlin", filepath.Join(dir, "zoneinfo/CET-link")); err != nil {
		t.Fatal(err)
	}
	return Options{
		Binary: bin, Name: "ctpool-tui:v1.2.0",
		Version: "v1.2.0", Revision: "0123456789abcdef0123456789abcdef01234567",
		Source: "https://github.com/ctpool-tui/ctpool-tui", Licenses: "Apache-2.0",
		Created:  commitTime,
		CACerts:  write("ca.pem", "-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n"),
		ZoneInfo: filepath.Join(dir, "zoneinfo"),
	}
}

func build(t *testing.T, o Options) v1.Image {
	t.Helper()
	img, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestConfig(t *testing.T) {
	o := fixture(t)
	cf, err := build(t, o).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cf.OS, cf.Architecture)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (nonroot, the manifests' runAsUser)", cf.Config.User)
	}
	// Exec form, no shell: the image has none to run a shell form with.
	if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/ctpool-tui"}) || len(cf.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/ctpool-tui] and no cmd", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if !cf.Created.Time.Equal(commitTime) {
		t.Errorf("created %v, want the commit's time %v", cf.Created.Time, commitTime)
	}
	want := map[string]string{
		"org.opencontainers.image.title":       "ctpool-tui",
		"org.opencontainers.image.description": "ctpool-tui's in-cluster reconciler (ctpool-tui manifests)",
		"org.opencontainers.image.source":      "https://github.com/ctpool-tui/ctpool-tui",
		"org.opencontainers.image.version":     "v1.2.0",
		"org.opencontainers.image.revision":    "0123456789abcdef0123456789abcdef01234567",
		"org.opencontainers.image.created":     "2026-11-30T12:00:00Z",
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
	if !reflect.DeepEqual(cf.Config.Labels, want) {
		t.Errorf("labels:\n got %v\nwant %v", cf.Config.Labels, want)
	}
	for _, h := range cf.History {
		if !h.Created.Time.Equal(commitTime) {
			t.Errorf("history %q created %v, want %v", h.CreatedBy, h.Created.Time, commitTime)
		}
	}
	m, err := build(t, o).Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.Config.MediaType != "application/vnd.oci.image.config.v1+json" {
		t.Errorf("media types %s, %s; want OCI's", m.MediaType, m.Config.MediaType)
	}
	for _, l := range m.Layers {
		if l.MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
			t.Errorf("layer media type %s", l.MediaType)
		}
	}
}

// files flattens the image's layers: name -> header and body.
func files(t *testing.T, img v1.Image) map[string]struct {
	hdr  *tar.Header
	body string
} {
	t.Helper()
	out := map[string]struct {
		hdr  *tar.Header
		body string
	}{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out["/"+strings.TrimSuffix(path.Clean(h.Name), "/")] = struct {
			hdr  *tar.Header
			body string
		}{h, string(b)}
	}
}

func TestFiles(t *testing.T) {
	fs := files(t, build(t, fixture(t)))
	for _, tc := range []struct {
		name     string
		typ      byte
		mode     int64
		uid      int
		contains string
	}{
		{"/ctpool-tui", tar.TypeReg, 0o755, 0, "\x7fELF"},
		{"/etc/passwd", tar.TypeReg, 0o644, 0, "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		{"/etc/group", tar.TypeReg, 0o644, 0, "nonroot:x:65532:\n"},
		{"/etc/nsswitch.conf", tar.TypeReg, 0o644, 0, "hosts: files dns"},
		{"/etc/ssl/certs/ca-certificates.crt", tar.TypeReg, 0o644, 0, "BEGIN CERTIFICATE"},
		{"/usr/share/zoneinfo/Europe/Berlin", tar.TypeReg, 0o644, 0, "TZif"},
		{"/usr/share/zoneinfo/CET-link", tar.TypeSymlink, 0o777, 0, ""},
		{"/tmp", tar.TypeDir, 0o1777, 0, ""},
		{"/home/nonroot", tar.TypeDir, 0o700, 65532, ""},
	} {
		f, ok := fs[tc.name]
		if !ok {
			t.Errorf("%s missing", tc.name)
			continue
		}
		if f.hdr.Typeflag != tc.typ || f.hdr.Mode != tc.mode || f.hdr.Uid != tc.uid || f.hdr.Gid != tc.uid {
			t.Errorf("%s: type %c mode %o owner %d:%d; want %c %o %d:%d", tc.name, f.hdr.Typeflag, f.hdr.Mode, f.hdr.Uid, f.hdr.Gid, tc.typ, tc.mode, tc.uid, tc.uid)
		}
		if !strings.Contains(f.body, tc.contains) {
			t.Errorf("%s = %q, want it to hold %q", tc.name, f.body, tc.contains)
		}
		if !f.hdr.ModTime.Equal(commitTime) || f.hdr.Uname != "" || f.hdr.Gname != "" {
			t.Errorf("%s: time %v, owner names %q:%q; want the commit's time and none", tc.name, f.hdr.ModTime, f.hdr.Uname, f.hdr.Gname)
		}
	}
	// No shell, no package manager: the binary alone runs.
	for name := range fs {
		switch path.Base(name) {
		case "sh", "bash", "dash", "ash", "busybox", "apt", "apk", "dpkg":
			t.Errorf("the image holds %s", name)
		}
		if strings.HasPrefix(name, "/bin") || strings.HasPrefix(name, "/usr/bin") || strings.HasPrefix(name, "/sbin") {
			t.Errorf("the image holds %s", name)
		}
	}
}

func archive(t *testing.T, o Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := WriteArchive(&buf, build(t, o), o.Name); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The same inputs give the same image and archive, byte for byte; another
// time or binary gives another.
func TestReproducible(t *testing.T) {
	o := fixture(t)
	d1, _ := build(t, o).Digest()
	d2, _ := build(t, o).Digest()
	if d1 != d2 {
		t.Errorf("two builds: %s and %s", d1, d2)
	}
	if !bytes.Equal(archive(t, o), archive(t, o)) {
		t.Error("two archives of one image differ")
	}
	later := o
	later.Created = commitTime.Add(time.Second)
	if d, _ := build(t, later).Digest(); d == d1 {
		t.Error("another creation time gave the same digest")
	}
	if err := os.WriteFile(o.Binary, []byte("\x7fELF another"), 0o755); err != nil {
		t.Fatal(err)
	}
	if d, _ := build(t, o).Digest(); d == d1 {
		t.Error("another binary gave the same digest")
	}
}

// The archive is an OCI image layout whose index names the image as
// containerd does, and each blob is what its name says.
func TestArchive(t *testing.T) {
	o := fixture(t)
	img := build(t, o)
	digest, _ := img.Digest()
	tr := tar.NewReader(bytes.NewReader(archive(t, o)))
	blobs := map[string]bool{}
	var index v1.IndexManifest
	var layout bool
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		switch {
		case h.Name == "oci-layout":
			layout = string(b) == `{"imageLayoutVersion":"1.0.0"}`
		case h.Name == "index.json":
			if err := json.Unmarshal(b, &index); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(h.Name, "blobs/sha256/"):
			sum := sha256.Sum256(b)
			if hex.EncodeToString(sum[:]) != path.Base(h.Name) {
				t.Errorf("%s holds a blob of another digest", h.Name)
			}
			blobs[path.Base(h.Name)] = true
		default:
			t.Errorf("unexpected %s", h.Name)
		}
	}
	if !layout {
		t.Error("no oci-layout")
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Digest != digest {
		t.Fatalf("index %+v, want the one image %s", index, digest)
	}
	if d := index.Manifests[0]; d.MediaType != "application/vnd.oci.image.manifest.v1+json" || d.ArtifactType != "" {
		t.Errorf("index entry: media type %s, artifact type %q; want an OCI image manifest, no artifact type", d.MediaType, d.ArtifactType)
	}
	if got := index.Manifests[0].Annotations["io.containerd.image.name"]; got != "docker.io/library/ctpool-tui:v1.2.0" {
		t.Errorf("io.containerd.image.name %q", got)
	}
	if got := index.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != "v1.2.0" {
		t.Errorf("org.opencontainers.image.ref.name %q", got)
	}
	m, _ := img.Manifest()
	for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
		if !blobs[d.Digest.Hex] {
			t.Errorf("blob %s missing", d.Digest)
		}
	}
	if !blobs[digest.Hex] {
		t.Error("the manifest's blob is missing")
	}
}

func TestContainerdName(t *testing.T) {
	for in, want := range map[string]string{
		"ctpool-tui:dev":                      "docker.io/library/ctpool-tui:dev",
		"ctpool-tui":                          "docker.io/library/ctpool-tui:latest",
		"example/ctpool-tui:1":                "docker.io/example/ctpool-tui:1",
		"registry.example/ctpool-tui:1.0":     "registry.example/ctpool-tui:1.0",
		"localhost:5000/ctpool-tui:1.0":       "localhost:5000/ctpool-tui:1.0",
		"ctpool.test/ctpool-tui:v1.2.0-dirty": "ctpool.test/ctpool-tui:v1.2.0-dirty",
	} {
		if got, err := ContainerdName(in); err != nil || got != want {
			t.Errorf("ContainerdName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
