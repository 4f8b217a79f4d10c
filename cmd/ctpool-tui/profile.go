package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// Profiling for measurements (make bench-peers, a first screen at many
// members): with CTPOOL_TUI_CPUPROFILE=FILE the process's CPU profile is
// written to FILE, with CTPOOL_TUI_MEMPROFILE=FILE a heap profile at exit
// (after a collection: what is live). Both are written when the program
// returns from its command (q in the dashboard, an interrupt); a process
// killed by a signal it does not handle writes neither.
const (
	envCPUProfile = "CTPOOL_TUI_CPUPROFILE"
	envMemProfile = "CTPOOL_TUI_MEMPROFILE"
)

// startProfiles starts what the environment asks for; the returned func
// finishes and writes the profiles. Failures are told on stderr and do not
// stop the program.
func startProfiles(getenv func(string) string, stderr io.Writer) (stop func()) {
	var stops []func()
	if path := getenv(envCPUProfile); path != "" {
		f, err := os.Create(path)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "%s: %v\n", envCPUProfile, err)
		case pprof.StartCPUProfile(f) != nil:
			fmt.Fprintf(stderr, "%s: a CPU profile is already running\n", envCPUProfile)
			_ = f.Close()
		default:
			stops = append(stops, func() { pprof.StopCPUProfile(); _ = f.Close() })
		}
	}
	if path := getenv(envMemProfile); path != "" {
		stops = append(stops, func() {
			f, err := os.Create(path)
			if err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", envMemProfile, err)
				return
			}
			defer f.Close()
			runtime.GC()
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", envMemProfile, err)
			}
		})
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}
