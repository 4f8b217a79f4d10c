package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// Logs is the demo's log source: the simulated cluster runs no containers,
// so a member's log is a canned desktop boot followed by a heartbeat every
// Interval, until the stream is cancelled. The Pod is checked as for a real
// stream (missing, sandboxd).
type Logs struct {
	Client kubernetes.Interface
	// Interval between heartbeats (default 2s).
	Interval time.Duration
}

// Stream implements tui.LogSource.
func (l *Logs) Stream(ctx context.Context, namespace, pod string, previous bool) (io.ReadCloser, error) {
	p, err := kube.CheckPod(ctx, l.Client, namespace, pod)
	if err != nil && p == nil {
		return nil, err
	}
	if err != nil && engine.StreamingUnavailable(engine.PodBackend(p)) != "" {
		return nil, err
	}
	if previous {
		restarts := int32(0)
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
		if restarts == 0 {
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", engine.ContainerName, pod)
		}
	}
	interval := l.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	pr, pw := io.Pipe()
	go func() {
		start := time.Now().UTC()
		stamp := func(t time.Time) string { return t.Format(time.RFC3339) }
		boot := []string{
			"INFO  [demo] canned log: the simulated cluster runs no containers",
			"INFO  entrypoint: starting desktop session for " + pod,
			"INFO  dbus-daemon: successfully activated service 'org.freedesktop.systemd1'",
			"INFO  xrdp: listening on port 3389",
			"WARN  pulseaudio: no sound card found, using null sink",
			"INFO  session: desktop ready",
		}
		if previous {
			boot = append(boot, "ERROR session: X server terminated (signal 11)", "INFO  entrypoint: exiting with code 139")
		}
		for i, b := range boot {
			if _, err := fmt.Fprintf(pw, "%s %s\n", stamp(start.Add(time.Duration(i-len(boot))*time.Second)), b); err != nil {
				return
			}
		}
		if previous {
			_ = pw.Close()
			return
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				_ = pw.CloseWithError(io.EOF)
				return
			case now := <-t.C:
				line := fmt.Sprintf("%s INFO  heartbeat %d: session alive", stamp(now.UTC()), n)
				if n%5 == 0 {
					line = fmt.Sprintf("%s WARN  xrdp: client connection idle for %ds", stamp(now.UTC()), n*int(interval/time.Second))
				}
				if _, err := fmt.Fprintln(pw, line); err != nil {
					return
				}
			}
		}
	}()
	return pr, nil
}
