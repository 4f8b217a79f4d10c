//go:build !nodemo

package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/internal/demo"
	"github.com/ctpool-tui/ctpool-tui/tui"
)

// noClusterHint follows "no cluster configured": this build has --demo.
const noClusterHint = "try --demo for a simulated cluster"

// startDemo starts the simulated cluster of --demo and returns its client
// and the namespace to show ("" for the fleet).
func startDemo(ctx context.Context, ns string, fleet bool) (kubernetes.Interface, string, error) {
	sim, err := demo.New(demo.Options{Namespace: ns, Fleet: fleet, Seed: time.Now().UnixNano(), Now: time.Now})
	if err != nil {
		return nil, "", fmt.Errorf("start the demo cluster: %w", err)
	}
	go func() { _ = sim.Run(ctx) }()
	if ns == "" {
		ns = demo.DefaultNamespace
	}
	if fleet {
		ns = ""
	}
	return sim.Client(), ns, nil
}

// demoLogs is the demo's log source: a canned stream (it runs no containers).
func demoLogs(client kubernetes.Interface) tui.LogSource { return &demo.Logs{Client: client} }
