//go:build integration

package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// logDriver runs a log view as the program would: each Cmd in its own
// goroutine, each message back through update on the test's goroutine.
type logDriver struct {
	t    *testing.T
	view logsView
	vc   viewContext
	msgs chan tea.Msg
}

func newLogDriver(t *testing.T) *logDriver {
	st := themes.NewStyles(themes.Dark(), themes.NoColorRenderer(io.Discard))
	keys := newKeyMap(false, nil)
	return &logDriver{t: t, vc: viewContext{st: &st, keys: &keys, width: 120, height: 30}, msgs: make(chan tea.Msg, 1024)}
}

func (d *logDriver) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		if msg := cmd(); msg != nil {
			d.msgs <- msg
		}
	}()
}

// press sends one key to the view.
func (d *logDriver) press(k string) {
	_, cmd := d.view.update(d.vc, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
	d.run(cmd)
}

// until feeds messages to the view until cond holds, failing after timeout.
func (d *logDriver) until(timeout time.Duration, what string, cond func() bool) {
	d.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for !cond() {
		select {
		case msg := <-d.msgs:
			if b, ok := msg.(tea.BatchMsg); ok {
				for _, c := range b {
					d.run(c)
				}
				continue
			}
			_, cmd := d.view.update(d.vc, msg)
			d.run(cmd)
		case <-timer.C:
			d.t.Fatalf("timed out after %v waiting for %s; the view:\n%s", timeout, what, d.view.view(d.vc))
		}
	}
}

// has reports whether the view's buffer holds line.
func (d *logDriver) has(line string) bool {
	for seq := d.view.buf.first; seq < d.view.buf.end(); seq++ {
		if d.view.buf.at(seq) == line {
			return true
		}
	}
	return false
}

// last is the newest line of the buffer ("" when empty).
func (d *logDriver) last() string {
	if d.view.buf.n == 0 {
		return ""
	}
	return d.view.buf.at(d.view.buf.end() - 1)
}

// logClient is a client whose request timeout is far shorter than the
// streams it opens, as --request-timeout 2s makes it.
func logClient(t *testing.T, env *kubetest.Env) kubernetes.Interface {
	t.Helper()
	o := kube.NewOptions()
	*o.Flags.KubeConfig = filepath.Join(env.Dir, "admin.kubeconfig")
	*o.Flags.Timeout = "2s"
	cfg, err := o.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// servedMember applies a one-member pool and serves its log from a file.
func servedMember(t *testing.T, env *kubetest.Env, pool string) *kubetest.Member {
	t.Helper()
	eng := &engine.Engine{Cluster: kube.NewCluster(env.Client, env.Namespace), Namespace: env.Namespace, Now: time.Now}
	spec := engine.Spec{Image: "registry.example/desktop:1", Size: 1, CPU: "100m", Memory: "128Mi", Disk: "1Gi"}
	spec.Default()
	if _, err := eng.Apply(t.Context(), pool, spec); err != nil {
		t.Fatalf("apply %s: %v", pool, err)
	}
	member := engine.MemberName(pool, 1)
	env.WaitFor(t, 60*time.Second, member+" Running", func() (bool, error) {
		_, err := kube.CheckPod(t.Context(), env.Client, env.Namespace, member)
		return err == nil, nil
	})
	return env.ServeMember(t, member)
}

// streamWindow is how long the follow test watches one stream: 30 s by
// default (CI), CTPOOL_STREAM_WINDOW for longer (make soak, make log-stream).
func streamWindow(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("CTPOOL_STREAM_WINDOW")
	if v == "" {
		return 30 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("CTPOOL_STREAM_WINDOW: %v", err)
	}
	return d
}

// The log view follows a member's log that kwok serves from a file while
// lines are appended to it, for a window many times the client's request
// timeout (2 s): the stream is never cut, every new line shows.
func TestIntegrationLogViewFollowsForMinutes(t *testing.T) {
	env := kubetest.Require(t)
	m := servedMember(t, env, "follow")
	window := streamWindow(t)
	kubetest.AppendLog(t, m.Log, "stdout", "boot 1", "boot 2")

	d := newLogDriver(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.run(d.view.open(ctx, &kube.Logs{Client: logClient(t, env)}, *d.vc.st, engine.PoolRef{Namespace: env.Namespace, Name: "follow"}, m.Pod, env.Namespace, screenPools))
	d.until(30*time.Second, "the first lines", func() bool { return d.has("boot 2") })

	start := time.Now()
	tick := time.NewTicker(3 * time.Second) // the pace of the writer, not a wait
	defer tick.Stop()
	n := 0
	for time.Since(start) < window {
		<-tick.C
		n++
		line := fmt.Sprintf("tick %d at %s", n, time.Since(start).Round(time.Second))
		kubetest.AppendLog(t, m.Log, "stdout", line)
		d.until(20*time.Second, "line "+line, func() bool { return d.has(line) || d.view.ended })
		if d.view.ended || d.view.err != nil {
			t.Fatalf("the stream ended after %s (err %v); the view:\n%s", time.Since(start).Round(time.Second), d.view.err, d.view.view(d.vc))
		}
	}
	if !d.view.streaming || d.view.buf.n != n+2 {
		t.Fatalf("after %s: streaming %v, %d lines; want still streaming with %d", window, d.view.streaming, d.view.buf.n, n+2)
	}
	if v := d.view.view(d.vc); !strings.Contains(v, "following") || !strings.Contains(v, fmt.Sprintf("tick %d ", n)) {
		t.Fatalf("the view after %s:\n%s", window, v)
	}
	t.Logf("%d lines appended and shown over %s with a 2s request timeout", n, window)
}

// The log view on kwok's log files: hostile bytes are inert, the buffer's
// bounds hold on a fast-growing file, and p shows the previous container's
// log, or says there is none.
func TestIntegrationLogViewOnTheKubeletAPI(t *testing.T) {
	env := kubetest.Require(t)
	m := servedMember(t, env, "logs")
	d := newLogDriver(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.run(d.view.open(ctx, &kube.Logs{Client: env.Client}, *d.vc.st, engine.PoolRef{Namespace: env.Namespace, Name: "logs"}, m.Pod, env.Namespace, screenPools))

	// Escape sequences, OSC 52 (clipboard), a title and C1 controls.
	kubetest.AppendLog(t, m.Log, "stdout",
		"hostile: \x1b]52;c;cHduZWQ=\x07 clip \x1b]0;title\x1b\\ \x1b[2J\x1b[H\x1b[31mred\x1b[0m \u009d52;c;cHduZWQ=\u009c end")
	kubetest.AppendLog(t, m.Log, "stderr", "after the hostile line")
	d.until(20*time.Second, "the hostile line", func() bool { return d.has("after the hostile line") })
	screen := d.view.view(d.vc)
	for _, bad := range []string{"\x1b", "\x07", "\u009d", "\u009c", "cHduZWQ="} {
		if strings.Contains(screen, bad) {
			t.Errorf("the view holds %q from the log:\n%q", bad, screen)
		}
	}
	if !strings.Contains(screen, "hostile:") || !strings.Contains(screen, "clip") || !strings.Contains(screen, "red") || !strings.Contains(screen, "end") {
		t.Errorf("the printable text of the hostile line is missing:\n%s", screen)
	}

	// A fast-growing file: 8,000 short lines (the line bound), then 4,000
	// lines of 1 KiB (the byte bound), each written in bursts of 500.
	burst := func(from, to int, pad string) {
		for i := from; i < to; i += 500 {
			lines := make([]string, 0, 500)
			for j := i; j < min(i+500, to); j++ {
				lines = append(lines, fmt.Sprintf("line %06d %s", j, pad))
			}
			kubetest.AppendLog(t, m.Log, "stdout", lines...)
		}
	}
	burst(0, 8000, "")
	lastShort := fmt.Sprintf("line %06d ", 7999)
	d.until(60*time.Second, "the 8,000th line", func() bool { return d.last() == lastShort })
	if d.view.buf.n != logMaxLines || d.view.buf.dropped == 0 || d.view.buf.at(d.view.buf.first) != fmt.Sprintf("line %06d ", 8000-logMaxLines) {
		t.Errorf("after 8,000 short lines: %d lines, %d dropped, oldest %q; want the newest %d", d.view.buf.n, d.view.buf.dropped, d.view.buf.at(d.view.buf.first), logMaxLines)
	}
	pad := strings.Repeat("x", 1024)
	burst(8000, 12000, pad)
	lastLong := fmt.Sprintf("line %06d %s", 11999, pad)
	d.until(60*time.Second, "the 12,000th line", func() bool { return d.last() == lastLong })
	if d.view.buf.bytes > logMaxBytes || d.view.buf.n >= logMaxLines || d.view.buf.n < logMaxBytes/(len(lastLong)+1) {
		t.Errorf("after 4,000 lines of 1 KiB: %d lines, %d bytes; want at most %d bytes, fewer than %d lines", d.view.buf.n, d.view.buf.bytes, logMaxBytes, logMaxLines)
	}
	if !strings.Contains(d.view.view(d.vc), "oldest dropped") {
		t.Errorf("the title does not say lines were dropped:\n%s", d.view.view(d.vc))
	}

	// p before any restart: there is no previous container, said without
	// asking the kubelet API.
	d.press("p")
	d.until(20*time.Second, "the previous log's answer", func() bool { return d.view.ended })
	if !d.view.previous || !errors.Is(d.view.err, kube.ErrNoPreviousLog) || d.view.buf.n != 0 {
		t.Errorf("p without a previous container: previous %v, err %v, %d lines; want ErrNoPreviousLog and no lines", d.view.previous, d.view.err, d.view.buf.n)
	}
	if v := d.view.view(d.vc); !strings.Contains(v, "previous container") || !strings.Contains(v, "no previous container") {
		t.Errorf("the view of a missing previous log:\n%s", v)
	}

	// After a restart (the Pod's status says so, as a kubelet would write
	// it): the previous container's lines from kwok, and the stream ends (a
	// previous log is not followed).
	kubetest.AppendLog(t, m.PreviousLog, "stdout", "previous boot", "previous crash")
	pod, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, m.Pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pod.Status.ContainerStatuses {
		pod.Status.ContainerStatuses[i].RestartCount = 1
		pod.Status.ContainerStatuses[i].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}
	}
	if _, err := env.Client.CoreV1().Pods(env.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	d.press("p") // back to the current log
	d.until(20*time.Second, "the current log again", func() bool { return !d.view.previous && d.last() == lastLong })
	d.press("p")
	d.until(20*time.Second, "the previous log", func() bool { return d.view.previous && d.view.ended })
	if d.view.err != nil || d.view.buf.n != 2 || d.last() != "previous crash" {
		t.Errorf("p with a previous container: err %v, %d lines, last %q", d.view.err, d.view.buf.n, d.last())
	}
}
