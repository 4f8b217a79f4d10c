// Command image builds ctpool-tui's container image without a container
// engine: the static binary (CGO_ENABLED=0, -tags nodemo) on a
// distroless-like base made from this machine's files, as an OCI image
// archive. `make image` runs it; see docs/operations.md.
//
// This directory is a module of its own, so that go-containerregistry and
// its dependencies stay out of ctpool-tui's go.mod.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func main() {
	var o Options
	var out, created string
	flag.StringVar(&o.Binary, "binary", "", "the static ctpool-tui binary (CGO_ENABLED=0 go build -tags nodemo)")
	flag.StringVar(&out, "out", "", "the OCI image archive to write")
	flag.StringVar(&o.Name, "name", "ctpool-tui:dev", "the image's name (registry/repository:tag), as `ctr images import` names it")
	flag.StringVar(&o.Version, "version", "", "org.opencontainers.image.version")
	flag.StringVar(&o.Revision, "revision", "", "org.opencontainers.image.revision (the commit)")
	flag.StringVar(&o.Source, "source", "https://github.com/ctpool-tui/ctpool-tui", "org.opencontainers.image.source")
	flag.StringVar(&o.Licenses, "licenses", "Apache-2.0", "org.opencontainers.image.licenses (an SPDX expression)")
	flag.StringVar(&created, "created", os.Getenv("SOURCE_DATE_EPOCH"), "the image's time, RFC 3339 or Unix seconds: the commit's (default $SOURCE_DATE_EPOCH)")
	flag.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to copy in")
	flag.StringVar(&o.ZoneInfo, "zoneinfo", "/usr/share/zoneinfo", `the tzdata tree to copy in ("" for none)`)
	flag.Parse()
	zoneInfoSet := false
	flag.Visit(func(f *flag.Flag) { zoneInfoSet = zoneInfoSet || f.Name == "zoneinfo" })
	if _, err := os.Stat(o.ZoneInfo); o.ZoneInfo != "" && !zoneInfoSet && os.IsNotExist(err) {
		fmt.Fprintf(os.Stderr, "image: no %s on this machine (Debian: tzdata): the image has no time zones but UTC\n", o.ZoneInfo)
		o.ZoneInfo = ""
	}
	if o.Binary == "" || out == "" || created == "" {
		fmt.Fprintln(os.Stderr, "image: -binary, -out and -created (or SOURCE_DATE_EPOCH) are required")
		flag.Usage()
		os.Exit(2)
	}
	t, err := parseTime(created)
	if err != nil {
		fail(err)
	}
	o.Created = t
	img, err := Build(o)
	if err != nil {
		fail(err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		fail(err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".image-*.tar")
	if err != nil {
		fail(err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	digest, err := WriteArchive(w, img, o.Name)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Close()
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), out)
	}
	if err != nil {
		fail(err)
	}
	full, _ := ContainerdName(o.Name)
	fmt.Printf("%s %s@%s\n", out, full, digest)
}

func parseTime(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("-created %q: neither RFC 3339 nor Unix seconds", s)
	}
	return t, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}
