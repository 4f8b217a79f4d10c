package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Set at link time by the Makefile and the Dockerfile:
//
//	-ldflags "-X main.version=v1.2.0 -X main.commit=<sha> -X main.date=<RFC 3339>"
//
// Each one left empty falls back to the Go build information (the module
// version of go install, the VCS stamp of a build in a checkout).
var (
	version string
	commit  string
	date    string
)

const clientGoModule = "k8s.io/client-go"

// versionInfo is what `version` prints; its JSON is `version -o json`.
type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Modified bool   `json:"modified,omitempty"`
	Date     string `json:"date"`
	Go       string `json:"goVersion"`
	Platform string `json:"platform"`
	ClientGo string `json:"clientGoVersion"`
}

// buildVersion combines the link-time values with the build information;
// info may be nil (no build information available).
func buildVersion(info *debug.BuildInfo, ldVersion, ldCommit, ldDate string) versionInfo {
	v := versionInfo{
		Version:  "(devel)",
		Commit:   "unknown",
		Date:     "unknown",
		Go:       runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
		ClientGo: "unknown",
	}
	if info != nil {
		if info.Main.Version != "" {
			v.Version = info.Main.Version
		}
		if info.GoVersion != "" {
			v.Go = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.Date = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
		for _, d := range info.Deps {
			if d.Path != clientGoModule {
				continue
			}
			v.ClientGo = d.Version
			if d.Replace != nil && d.Replace.Version != "" {
				v.ClientGo = d.Replace.Version
			}
		}
	}
	if ldVersion != "" {
		v.Version = ldVersion
	}
	if ldCommit != "" {
		v.Commit = ldCommit
	}
	if ldDate != "" {
		v.Date = ldDate
	}
	if strings.HasSuffix(v.Version, "+dirty") || strings.HasSuffix(v.Version, "-dirty") {
		v.Modified = true
	}
	return v
}

// currentVersion is this binary's version.
func currentVersion() versionInfo {
	info, _ := debug.ReadBuildInfo()
	return buildVersion(info, version, commit, date)
}

// text is the short block `version` and `--version` print.
func (v versionInfo) text() string {
	commit := v.Commit
	if v.Modified && commit != "unknown" {
		commit += " (modified)"
	}
	return fmt.Sprintf("ctpool-tui %s\n  commit     %s\n  built      %s\n  go         %s %s\n  client-go  %s\n",
		v.Version, commit, v.Date, v.Go, v.Platform, v.ClientGo)
}

// userAgent is the User-Agent of every API request, in the form kubectl
// uses: ctpool-tui/v1.2.0 (linux/amd64) kubernetes/v0.37.2.
func (v versionInfo) userAgent() string {
	return fmt.Sprintf("ctpool-tui/%s (%s) kubernetes/%s", uaToken(v.Version), v.Platform, uaToken(v.ClientGo))
}

// uaToken keeps only the characters an HTTP product token allows, so that
// "(devel)" becomes "devel".
func uaToken(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "unknown"
	}
	return b.String()
}

func printVersion(w io.Writer, output string) error {
	v := currentVersion()
	switch output {
	case "", "text":
		_, err := io.WriteString(w, v.text())
		return err
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	return usageErr("-o must be text or json (got %q)", output)
}

func newVersionCmd(e *env) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date and Kubernetes client version",
		Long: `Print the version of this binary, the commit and date it was built from, the
Go version and platform, and the version of the Kubernetes client library
(client-go) it speaks to the API server with. --version prints the same.
It reads nothing from the cluster.`,
		Example: "  ctpool-tui version\n  ctpool-tui version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return printVersion(e.stdout, output)
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return c
}
