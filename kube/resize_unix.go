//go:build unix

package kube

import (
	"os"
	"syscall"
)

// resizeSignals announce a change of the terminal size.
var resizeSignals = []os.Signal{syscall.SIGWINCH}
