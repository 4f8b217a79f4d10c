package kube

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
)

// The Kubernetes minors ctpool-tui supports: the integration suite runs
// against the oldest and the newest (make test-versions), on planes built
// from those releases (testdata/cluster, K8S_VERSION).
const (
	MinServerMinor = 34
	MaxServerMinor = 37
)

// SupportedRange names the supported minors, for messages.
var SupportedRange = fmt.Sprintf("v1.%d to v1.%d", MinServerMinor, MaxServerMinor)

// belowRange is why a server older than MinServerMinor is refused.
const belowRange = "it is built with client-go v0.37 and tested on no older server " +
	"(v1.33 turns off by default the streamed lists, WatchList, that its informers ask for); upgrade the cluster"

// ServerVersionError is an API server older than the supported range.
type ServerVersionError struct {
	// GitVersion is the server's version as /version reports it.
	GitVersion string
}

func (e *ServerVersionError) Error() string {
	return fmt.Sprintf("the API server runs Kubernetes %s; ctpool-tui supports %s: %s", e.GitVersion, SupportedRange, belowRange)
}

// CheckServerVersion asks the API server for its version once. A server
// older than the supported range is a *ServerVersionError; a newer one is
// a warning to show (the returned string, "" when none). A server that
// does not answer, or answers with a version it cannot parse, gets no
// verdict: nil and no warning, and the caller's next request reports what
// is wrong.
func CheckServerVersion(ctx context.Context, d discovery.ServerVersionInterfaceWithContext) (warning string, err error) {
	info, err := d.ServerVersionWithContext(ctx)
	if err != nil {
		return "", nil
	}
	return judgeServerVersion(info.GitVersion)
}

// judgeServerVersion is CheckServerVersion's verdict on a /version answer.
func judgeServerVersion(gitVersion string) (string, error) {
	v, err := version.ParseGeneric(gitVersion)
	if err != nil || v.Major() != 1 {
		return "", nil
	}
	switch {
	case v.Minor() < MinServerMinor:
		return "", &ServerVersionError{GitVersion: gitVersion}
	case v.Minor() > MaxServerMinor:
		return fmt.Sprintf("the API server runs Kubernetes %s, newer than ctpool-tui is tested against (%s)", gitVersion, SupportedRange), nil
	}
	return "", nil
}
