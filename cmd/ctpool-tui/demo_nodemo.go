//go:build nodemo

package main

import (
	"context"
	"errors"

	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/tui"
)

// errNoDemo answers --demo in a build without the simulated cluster (the
// controller image is built with -tags nodemo).
var errNoDemo = errors.New("this build of ctpool-tui has no demo (built with -tags nodemo, as the container image is): " +
	"give it a cluster (--kubeconfig, KUBECONFIG or in-cluster), or run a release binary for --demo")

// noClusterHint follows "no cluster configured": this build has no --demo.
const noClusterHint = "this build has no --demo: give it a cluster"

func startDemo(context.Context, string, bool) (kubernetes.Interface, string, error) {
	return nil, "", errNoDemo
}

func demoLogs(kubernetes.Interface) tui.LogSource { return nil }
