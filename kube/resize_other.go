//go:build !unix

package kube

import "os"

// resizeSignals: no resize signal on this platform (the first size is sent).
var resizeSignals []os.Signal
