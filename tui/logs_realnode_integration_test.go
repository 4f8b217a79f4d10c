//go:build integration

package tui

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// 2.5 on the real node: a followed log goes on across a restart of the
// desktop container (the kubelet ends the stream when the container exits),
// with a line that says so between the two, and p then shows the previous
// container's log alone.
func TestIntegrationRealNodeLogFollowsARestart(t *testing.T) {
	env := kubetest.Require(t)
	env.RequireNode(t)
	const pool = "rlog"
	member := engine.MemberName(pool, 1)
	eng := &engine.Engine{Cluster: kube.NewCluster(env.Client, env.Namespace), Namespace: env.Namespace, Now: time.Now}
	// --init: the image's entrypoint is PID 1 and leaves at once on SIGTERM,
	// so a kill -TERM 1 from a console is a restart of the container.
	spec := engine.Spec{Image: kubetest.ImageDebian, Size: 1, CPU: "200m", Memory: "256Mi", Disk: "1Gi",
		StorageClass: kubetest.RealNodeStorageClass, Init: true,
		Runtime: &engine.Runtime{Backend: engine.BackendStandard, RuntimeClassName: kubetest.RealNodeRuntimeClass}}
	spec.Default()
	if _, err := eng.Apply(t.Context(), pool, spec); err != nil {
		t.Fatalf("apply %s: %v", pool, err)
	}
	env.WaitFor(t, 90*time.Second, member+" Running on the real node", func() (bool, error) {
		p, err := kube.CheckPod(t.Context(), env.Client, env.Namespace, member)
		if err != nil {
			return false, nil
		}
		if p.Spec.NodeName != kubetest.RealNode {
			t.Fatalf("%s runs on %q, not on the real node %s: this test would prove nothing", member, p.Spec.NodeName, kubetest.RealNode)
		}
		return true, nil
	})
	exec := &kube.Exec{Config: env.Config, Client: env.Client}
	sh := func(script string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		var out, errOut bytes.Buffer
		if err := exec.Run(ctx, kube.ExecRequest{Namespace: env.Namespace, Pod: member,
			Command: []string{"sh", "-c", script}, Stdout: &out, Stderr: &errOut}); err != nil {
			t.Fatalf("exec %q in %s: %v (stdout %q, stderr %q)", script, member, err, out.String(), errOut.String())
		}
	}
	// The desktop container's log is PID 1's stdout.
	sh("echo first boot line >/proc/1/fd/1")

	d := newLogDriver(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.run(d.view.open(ctx, &kube.Logs{Client: logClient(t, env)}, *d.vc.st, engine.PoolRef{Namespace: env.Namespace, Name: pool}, member, env.Namespace, screenPools))
	d.until(30*time.Second, "the first boot's line", func() bool { return d.has("first boot line") })

	// Killing PID 1 ends the container, and the runtime may kill this exec
	// with it before it returns (exit 137): that is the kill working, not a
	// failure. Whether the container restarted is checked below.
	{
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		err := exec.Run(ctx, kube.ExecRequest{Namespace: env.Namespace, Pod: member,
			Command: []string{"sh", "-c", "kill -TERM 1"}, Stdout: io.Discard, Stderr: io.Discard})
		cancel()
		if err != nil && !strings.Contains(err.Error(), "exit code 137") {
			t.Fatalf("exec kill -TERM 1 in %s: %v", member, err)
		}
	}
	restarted := func() bool {
		for seq := d.view.buf.first; seq < d.view.buf.end(); seq++ {
			if strings.Contains(d.view.buf.at(seq), "the desktop container restarted: restart 1") {
				return true
			}
		}
		return false
	}
	d.until(90*time.Second, "the restart's line in the followed log", func() bool { return restarted() || d.view.ended })
	if d.view.ended || !restarted() {
		t.Fatalf("the followed log ended at the restart (err %v); the view:\n%s", d.view.err, d.view.view(d.vc))
	}
	// The new container may not run yet when the line shows: write until
	// the exec lands in it.
	env.WaitFor(t, 60*time.Second, member+" Running again", func() (bool, error) {
		_, err := kube.CheckPod(t.Context(), env.Client, env.Namespace, member)
		return err == nil, nil
	})
	sh("echo second boot line >/proc/1/fd/1")
	d.until(30*time.Second, "the second boot's line in the same view", func() bool { return d.has("second boot line") || d.view.ended })
	if !d.has("second boot line") || !d.has("first boot line") || !d.view.streaming {
		t.Fatalf("after the restart: streaming %v, first %v, second %v; the view:\n%s",
			d.view.streaming, d.has("first boot line"), d.has("second boot line"), d.view.view(d.vc))
	}

	d.press("p")
	d.until(30*time.Second, "the previous container's log", func() bool { return d.view.previous && d.view.ended })
	if d.view.err != nil || !d.has("first boot line") || d.has("second boot line") {
		t.Fatalf("p after a restart: err %v, first %v, second %v; want the first boot alone; the view:\n%s",
			d.view.err, d.has("first boot line"), d.has("second boot line"), d.view.view(d.vc))
	}
}
