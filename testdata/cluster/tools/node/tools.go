//go:build tools

// Package node pins the container runtime the plane's real node runs:
// containerd, its runc shim and ctr, built from their Go module by build.
package node

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
