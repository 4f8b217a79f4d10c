package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRoot is the user and group the image runs as: distroless' nonroot,
// the user the manifests' Deployment runs as (runAsUser 65532).
const NonRoot = 65532

// Entrypoint is where the binary lives in the image, as in the Dockerfile.
const Entrypoint = "/ctpool-tui"

// Options are the inputs of one image; the same Options and the same files
// give the same image, byte for byte.
type Options struct {
	Binary string // the static ctpool-tui binary (CGO_ENABLED=0, -tags nodemo)
	Name   string // the image reference the archive carries (registry/repo:tag)
	// The OCI image-spec labels: org.opencontainers.image.*.
	Version, Revision, Source, Licenses string
	// Created is the image's and every file's time: the commit's time, not
	// the build's, so that a rebuild of one commit gives the same digest.
	Created time.Time
	// Host files the base is made from.
	CACerts  string // a PEM bundle; /etc/ssl/certs/ca-certificates.crt in the image
	ZoneInfo string // a zoneinfo tree; /usr/share/zoneinfo in the image ("" leaves it out)
}

// Build assembles the image: a base layer (passwd and group with nonroot
// 65532, nsswitch.conf, the CA bundle, tzdata, /tmp, the nonroot home) and
// a layer with the binary, no shell and no package manager, the way
// gcr.io/distroless/static:nonroot is laid out.
func Build(o Options) (v1.Image, error) {
	if o.Created.IsZero() {
		return nil, fmt.Errorf("no creation time: pass the commit's time (-created)")
	}
	created := o.Created.UTC().Truncate(time.Second)
	base, err := baseLayer(o, created)
	if err != nil {
		return nil, err
	}
	app, err := appLayer(o, created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: created}, CreatedBy: "ctpool-tui base: passwd, group, nsswitch.conf, CA certificates, tzdata, /tmp", Comment: "hack/tools/image"}},
		mutate.Addendum{Layer: app, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: created}, CreatedBy: "COPY ctpool-tui " + Entrypoint, Comment: "hack/tools/image"}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", NonRoot, NonRoot),
		Entrypoint: []string{Entrypoint},
		WorkingDir: "/",
		Env: []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		},
		Labels: Labels(o, created),
	}
	return mutate.ConfigFile(img, cf)
}

// Labels are the image's OCI annotations (image-spec annotations.md),
// set as config labels.
func Labels(o Options, created time.Time) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "ctpool-tui",
		"org.opencontainers.image.description": "ctpool-tui's in-cluster reconciler (ctpool-tui manifests)",
		"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":      o.Source,
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Revision,
		"org.opencontainers.image.licenses":    o.Licenses,
	}
	for k, v := range l {
		if v == "" {
			delete(l, k)
		}
	}
	return l
}

// entry is one file of a layer.
type entry struct {
	hdr  tar.Header
	body []byte
}

func dir(path string, mode int64, uid int) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: path + "/", Mode: mode, Uid: uid, Gid: uid}}
}

func file(path string, mode int64, body []byte) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: mode, Size: int64(len(body))}, body: body}
}

const passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
	"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
	"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"

const group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"

func baseLayer(o Options, created time.Time) (v1.Layer, error) {
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	es := []entry{
		dir("etc", 0o755, 0),
		file("etc/passwd", 0o644, []byte(passwd)),
		file("etc/group", 0o644, []byte(group)),
		file("etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")),
		dir("etc/ssl", 0o755, 0),
		dir("etc/ssl/certs", 0o755, 0),
		file("etc/ssl/certs/ca-certificates.crt", 0o644, certs),
		dir("home", 0o755, 0),
		dir("home/nonroot", 0o700, NonRoot),
		dir("root", 0o700, 0),
		dir("tmp", 0o1777, 0),
		dir("usr", 0o755, 0),
		dir("usr/share", 0o755, 0),
	}
	if o.ZoneInfo != "" {
		zi, err := tree(o.ZoneInfo, "usr/share/zoneinfo")
		if err != nil {
			return nil, fmt.Errorf("zoneinfo: %w", err)
		}
		es = append(es, zi...)
	}
	return layer(es, created)
}

func appLayer(o Options, created time.Time) (v1.Layer, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("binary: %w", err)
	}
	if !bytes.HasPrefix(bin, []byte("\x7fELF")) {
		return nil, fmt.Errorf("binary %s is not an ELF file", o.Binary)
	}
	return layer([]entry{file(strings.TrimPrefix(Entrypoint, "/"), 0o755, bin)}, created)
}

// tree is every directory, regular file and symbolic link under root, as
// entries under prefix, with the modes they have but owned by root.
func tree(root, prefix string) ([]entry, error) {
	var es []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := prefix
		if rel != "." {
			name = prefix + "/" + filepath.ToSlash(rel)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		perm := int64(info.Mode().Perm())
		switch {
		case d.IsDir():
			es = append(es, dir(name, perm, 0))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			es = append(es, entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}})
		case info.Mode().IsRegular():
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			es = append(es, file(name, perm, body))
		}
		return nil
	})
	return es, err
}

// layer writes the entries as a tar stream sorted by name, every time set
// to created and no user or group names, and makes it a gzip'd OCI layer.
func layer(es []entry, created time.Time) (v1.Layer, error) {
	sort.Slice(es, func(i, j int) bool { return es[i].hdr.Name < es[j].hdr.Name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := e.hdr
		h.ModTime = created
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// ContainerdName is ref as containerd and the kubelet name it
// (docker.io/library/ctpool-tui:dev for ctpool-tui:dev).
func ContainerdName(ref string) (string, error) {
	r, err := name.ParseReference(ref, name.WithDefaultRegistry("docker.io"), name.WithDefaultTag("latest"))
	if err != nil {
		return "", err
	}
	// go-containerregistry names Docker Hub index.docker.io; containerd and
	// the kubelet (its CRI) docker.io.
	n := r.Name()
	if rest, ok := strings.CutPrefix(n, name.DefaultRegistry+"/"); ok {
		n = "docker.io/" + rest
	}
	return n, nil
}

// WriteArchive writes img as an OCI image layout in a tar archive (what
// `ctr images import`, `podman load`, `skopeo copy oci-archive:` and
// `crane push` read), its index naming it ref. The archive is the same,
// byte for byte, for the same image and ref.
func WriteArchive(w io.Writer, img v1.Image, ref string) (v1.Hash, error) {
	full, err := ContainerdName(ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image name %q: %w", ref, err)
	}
	tag := full[strings.LastIndex(full, ":")+1:]
	if strings.Contains(full, "@") {
		return v1.Hash{}, fmt.Errorf("image name %q: a tag, not a digest", ref)
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	size, err := img.Size()
	if err != nil {
		return v1.Hash{}, err
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: types.OCIManifestSchema1, Size: size, Digest: digest,
			Annotations: map[string]string{
				"io.containerd.image.name":          full,
				"org.opencontainers.image.ref.name": tag,
			},
		}},
	})
	if err != nil {
		return v1.Hash{}, err
	}
	blobs := map[string][]byte{}
	add := func(h v1.Hash, b []byte) { blobs["blobs/"+h.Algorithm+"/"+h.Hex] = b }
	man, err := img.RawManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	add(digest, man)
	cfgName, err := img.ConfigName()
	if err != nil {
		return v1.Hash{}, err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	add(cfgName, cfg)
	layers, err := img.Layers()
	if err != nil {
		return v1.Hash{}, err
	}
	for _, l := range layers {
		h, err := l.Digest()
		if err != nil {
			return v1.Hash{}, err
		}
		rc, err := l.Compressed()
		if err != nil {
			return v1.Hash{}, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return v1.Hash{}, err
		}
		add(h, b)
	}
	layout, _ := json.Marshal(map[string]string{"imageLayoutVersion": "1.0.0"})
	tw := tar.NewWriter(w)
	put := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)),
			ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := put("oci-layout", layout); err != nil {
		return v1.Hash{}, err
	}
	if err := put("index.json", index); err != nil {
		return v1.Hash{}, err
	}
	names := make([]string, 0, len(blobs))
	for n := range blobs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := put(n, blobs[n]); err != nil {
			return v1.Hash{}, err
		}
	}
	return digest, tw.Close()
}
