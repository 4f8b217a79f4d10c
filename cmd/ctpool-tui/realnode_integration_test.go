//go:build integration

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// The member contract inside running containers, on the plane's real node
// (a kubelet, containerd and runc; testdata/cluster/node.sh): everything here
// runs through the CLI, as an admin or a user would.

// realNodeTimeout bounds a member's start on the real node: a Pod Running in
// about a second, a privileged member's first start copies its image's root.
const realNodeTimeout = 120 * time.Second

// realPool applies a pool of size members of image on the real node and waits
// until they are Ready; it fails unless every member's Pod runs there.
func realPool(t *testing.T, env *kubetest.Env, pool, image string, size int, extra ...string) {
	t.Helper()
	args := append([]string{"-n", env.Namespace, "apply", pool, "--image", image, "--size", strconv.Itoa(size),
		"--cpu", "200m", "--mem", "256Mi", "--disk", "1Gi",
		"--runtime-class", kubetest.RealNodeRuntimeClass, "--storage-class", kubetest.RealNodeStorageClass}, extra...)
	if code, out, errOut := runCmd(t, args...); code != exitOK {
		t.Fatalf("apply %s: exit %d\n%s%s", pool, code, out, errOut)
	}
	waitReady(t, env, pool, size)
}

func waitReady(t *testing.T, env *kubetest.Env, pool string, size int) {
	t.Helper()
	want := `"ready": ` + strconv.Itoa(size) + `,`
	env.WaitFor(t, realNodeTimeout, pool+" Ready on the real node", func() (bool, error) {
		_, out, _ := runCmd(t, "-n", env.Namespace, "status", pool, "-o", "json")
		return strings.Contains(out, want), nil
	})
	pods, err := env.Client.CoreV1().Pods(env.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: engine.LabelPool + "=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != kubetest.RealNode {
			t.Fatalf("%s runs on %q, not on the real node %s: this test would prove nothing", p.Name, p.Spec.NodeName, kubetest.RealNode)
		}
	}
}

// sh runs a shell command in a member through `ctpool-tui console` and
// returns its exit code, stdout and stderr.
func sh(t *testing.T, env *kubetest.Env, pool, member, script string) (int, string, string) {
	t.Helper()
	return runConsole(t, "", "-n", env.Namespace, "--request-timeout", "20s", "console", pool, member, "--", "sh", "-c", script)
}

func mustSh(t *testing.T, env *kubetest.Env, pool, member, script string) string {
	t.Helper()
	code, out, errOut := sh(t, env, pool, member, script)
	if code != exitOK {
		t.Fatalf("console %s %s -- sh -c %q: exit %d, stdout %q, stderr %q", pool, member, script, code, out, errOut)
	}
	return out
}

// restart deletes the member's Pod (a stop), waits until it is gone, and
// reconciles until the member is Ready again on a new Pod (a start).
func restart(t *testing.T, env *kubetest.Env, pool, member string) {
	t.Helper()
	pods := env.Client.CoreV1().Pods(env.Namespace)
	old, err := pods.Get(t.Context(), member, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(t.Context(), member, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, realNodeTimeout, member+"'s Pod gone", func() (bool, error) {
		p, err := pods.Get(t.Context(), member, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && p.UID != old.UID, err
	})
	if code, out, errOut := runCmd(t, "-n", env.Namespace, "reconcile", pool); code != exitOK && code != exitAttention {
		t.Fatalf("reconcile %s: exit %d\n%s%s", pool, code, out, errOut)
	}
	waitReady(t, env, pool, 1)
	p, err := pods.Get(t.Context(), member, metav1.GetOptions{})
	if err != nil || p.UID == old.UID {
		t.Fatalf("%s after the restart: %v, UID %s (old %s); want a new Pod", member, err, p.UID, old.UID)
	}
}

func realEnv(t *testing.T) *kubetest.Env {
	env := kubetest.Require(t)
	env.RequireNode(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	return env
}

// 2.1: an unprivileged member keeps /data and nothing else across a stop and start.
func TestIntegrationRealNodeUnprivilegedKeepsData(t *testing.T) {
	env := realEnv(t)
	realPool(t, env, "keep", kubetest.ImageDebian, 1)
	mustSh(t, env, "keep", "keep-1", "echo kept >/data/keep && echo lost >/etc/lose && test -s /etc/lose")
	restart(t, env, "keep", "keep-1")
	if out := mustSh(t, env, "keep", "keep-1", "cat /data/keep"); out != "kept\n" {
		t.Errorf("/data/keep after the restart = %q, want %q", out, "kept\n")
	}
	if code, out, errOut := sh(t, env, "keep", "keep-1", "test -e /etc/lose"); code != 1 {
		t.Errorf("test -e /etc/lose after the restart: exit %d (%q %q); want 1: /etc is the container's own", code, out, errOut)
	}
}

// 2.2: a privileged member keeps its whole root but the runtime's own
// directories and files directly in /, on a merged-/usr image and on one with
// real /bin, /sbin and /lib, from a console session and from the entrypoint.
func TestIntegrationRealNodePrivilegedKeepsRoot(t *testing.T) {
	env := realEnv(t)
	kept := []string{"/etc", "/usr/local", "/root", "/opt", "/var", "/home", "/srv", "/data", "/mnt", "/bin", "/sbin", "/lib", "/usr/bin", "/boot", "/media"}
	lost := []string{"/tmp", "/run"}
	for _, tc := range []struct{ name, image string }{
		{"debian", kubetest.ImageDebian},
		{"busybox", kubetest.ImageBusybox},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := "root-" + tc.name
			member := pool + "-1"
			realPool(t, env, pool, tc.image, 1, "--privileged", "--init")
			var write strings.Builder
			write.WriteString("set -e; ")
			for _, d := range append(append([]string{}, kept...), lost...) {
				write.WriteString("echo " + d + " >" + keptFile(d) + "; ")
			}
			write.WriteString("echo / >/ctpool-top")
			mustSh(t, env, pool, member, write.String())
			// What the image's /usr/bin held stays visible: /bin's mount did
			// not hide it (merged-/usr: /bin is a link into it).
			ls := strings.TrimSpace(mustSh(t, env, pool, member, "ls /usr/bin | wc -l"))
			restart(t, env, pool, member)

			for _, d := range kept {
				if code, out, _ := sh(t, env, pool, member, "cat "+keptFile(d)); code != exitOK || out != d+"\n" {
					t.Errorf("%s after a stop and start: exit %d, %q; want %q", keptFile(d), code, out, d+"\n")
				}
			}
			for _, d := range append(append([]string{}, lost...), "") {
				f := keptFile(d)
				if d == "" {
					f = "/ctpool-top" // a file directly in /: the documented limit
				}
				if code, _, _ := sh(t, env, pool, member, "test -e "+f); code != 1 {
					t.Errorf("%s after a stop and start: test -e exit %d; want 1 (not kept, as docs/guarantees.md says)", f, code)
				}
			}
			if got := strings.TrimSpace(mustSh(t, env, pool, member, "ls /usr/bin | wc -l")); got != ls {
				t.Errorf("/usr/bin holds %s entries after the restart, %s before", got, ls)
			}
			// The entrypoint's own writes are kept too: one line per start.
			if out := mustSh(t, env, pool, member, "cat /var/log/desktop-boots"); strings.Count(out, "boot ") != 2 {
				t.Errorf("/var/log/desktop-boots = %q, want two boots (the first start's line kept)", out)
			}
			// The runtime's own: a fresh /proc, /sys, /dev.
			mustSh(t, env, pool, member, "test -r /proc/1/status && test -d /sys/kernel && test -c /dev/null")
			if out := mustSh(t, env, pool, member, "tr '\\0' ' ' </proc/1/cmdline"); !strings.Contains(out, kubetest.ImageEntrypoint) {
				t.Errorf("PID 1 is %q, want the image's entrypoint %s", out, kubetest.ImageEntrypoint)
			}
		})
	}
}

// keptFile names one file per directory: on a merged-/usr image /bin and
// /usr/bin are one directory.
func keptFile(dir string) string { return dir + "/ctpool-kept" + strings.ReplaceAll(dir, "/", "-") }

// 3: --init runs the image's own entrypoint as PID 1. Without it the desktop
// container runs sleep infinity, in the Pod's shared PID namespace: PID 1 is
// the sandbox's pause, so that SIGTERM ends sleep (2.9).
func TestIntegrationRealNodeInit(t *testing.T) {
	env := realEnv(t)
	realPool(t, env, "plain", kubetest.ImageBusybox, 1)
	realPool(t, env, "booted", kubetest.ImageBusybox, 1, "--init")
	procs := `for p in /proc/[0-9]*; do [ "$p" = /proc/$$ ] && continue; c=$(tr '\0' ' ' <$p/cmdline 2>/dev/null) || continue; [ -n "$c" ] && echo "${p#/proc/}:$c"; done`
	for _, tc := range []struct {
		pool, pid1, main string
	}{
		{"plain", "/pause ", "sleep infinity "},
		{"booted", "/bin/sh " + kubetest.ImageEntrypoint + " ", "/bin/sh " + kubetest.ImageEntrypoint + " "},
	} {
		out := mustSh(t, env, tc.pool, tc.pool+"-1", procs)
		var pid1 string
		mains := 0
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			pid, cmd, _ := strings.Cut(line, ":")
			if pid == "1" {
				pid1 = cmd
			}
			if cmd == tc.main {
				mains++
			}
		}
		if pid1 != tc.pid1 || mains != 1 {
			t.Errorf("%s: PID 1 is %q, %d processes run %q; want PID 1 %q and one %q\n%s", tc.pool, pid1, mains, tc.main, tc.pid1, tc.main, out)
		}
	}
}

// 2.9: a member stops at once when the kubelet sends SIGTERM: its desktop
// container ends with 143 (SIGTERM) without --init and 0 with it (the test
// image's entrypoint exits on SIGTERM), not 137 (SIGKILL at the end of the
// grace period, which sleep as its namespace's PID 1 would get).
func TestIntegrationRealNodeStopsOnSIGTERM(t *testing.T) {
	env := realEnv(t)
	realPool(t, env, "plain", kubetest.ImageDebian, 1)
	realPool(t, env, "booted", kubetest.ImageDebian, 1, "--init")
	pods := env.Client.CoreV1().Pods(env.Namespace)
	for _, tc := range []struct {
		pool string
		want int32
	}{{"plain", 143}, {"booted", 0}} {
		name := tc.pool + "-1"
		p, err := pods.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := pods.Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: p.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		exit := int32(-1)
		deadline := time.After(realNodeTimeout)
	watch:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("%s: the watch ended before the Pod was deleted", name)
				}
				if ev.Type == watch.Deleted {
					break watch
				}
				if pod, ok := ev.Object.(*corev1.Pod); ok {
					for _, cs := range pod.Status.ContainerStatuses {
						if cs.Name == engine.ContainerName && cs.State.Terminated != nil {
							exit = cs.State.Terminated.ExitCode
						}
					}
				}
			case <-deadline:
				t.Fatalf("%s: not deleted within %v", name, realNodeTimeout)
			}
		}
		w.Stop()
		if exit != tc.want {
			t.Errorf("%s: the desktop container ended with %d, want %d", name, exit, tc.want)
		}
	}
}

// 2.4: a release hands the next user a clean desktop: the file is gone, the PVC
// is new, and the first user's volume was deleted before the member was
// handed out again.
func TestIntegrationRealNodeReleaseIsClean(t *testing.T) {
	env := realEnv(t)
	realPool(t, env, "rel", kubetest.ImageDebian, 1)
	ns := env.Namespace
	claim := func(who string) string {
		t.Helper()
		code, out, errOut := runCmd(t, "-n", ns, "claim", "rel", who)
		if code != exitOK {
			t.Fatalf("claim rel %s: exit %d\n%s%s", who, code, out, errOut)
		}
		return strings.TrimSpace(out)
	}
	member := claim("alice")
	mustSh(t, env, "rel", member, "echo alice >/data/secret")
	pvc, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), engine.PVCName(member), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := env.Client.CoreV1().PersistentVolumes().Get(t.Context(), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil || pv.Spec.HostPath == nil {
		t.Fatalf("alice's volume %s: %v %+v; want a hostPath volume of the node-local class", pvc.Spec.VolumeName, err, pv)
	}
	dir := pv.Spec.HostPath.Path
	if b, err := os.ReadFile(filepath.Join(dir, "secret")); err != nil || string(b) != "alice\n" {
		t.Fatalf("alice's file on the node, %s/secret: %q %v", dir, b, err)
	}
	if code, out, errOut := runCmd(t, "-n", ns, "release", "rel", member, "alice"); code != exitOK {
		t.Fatalf("release: exit %d\n%s%s", code, out, errOut)
	}
	// The release waits for the PVC to be gone; the volume's directory goes
	// with its PV (reclaim policy Delete), which must happen before anyone
	// can have the member again.
	env.WaitFor(t, realNodeTimeout, "alice's volume deleted on the node", func() (bool, error) {
		_, err := os.Stat(dir)
		return os.IsNotExist(err), nil
	})
	waitReady(t, env, "rel", 1)
	again := claim("bob")
	if again != member {
		t.Fatalf("bob got %s, want %s (the pool has one member)", again, member)
	}
	if code, _, _ := sh(t, env, "rel", again, "test -e /data/secret"); code != 1 {
		t.Errorf("bob's /data/secret: test -e exit %d, want 1 (alice's file gone)", code)
	}
	fresh, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), engine.PVCName(member), metav1.GetOptions{})
	if err != nil || fresh.UID == pvc.UID {
		t.Errorf("bob's PVC: %v, UID %s; want a new PVC (alice's was %s)", err, fresh.UID, pvc.UID)
	}
}

// 2.5: a console through a real kubelet: stdin, stdout and stderr apart, and a
// non-zero exit code passed through as the command's own.
func TestIntegrationRealNodeConsoleStreams(t *testing.T) {
	env := realEnv(t)
	realPool(t, env, "con", kubetest.ImageDebian, 1)
	args := []string{"-n", env.Namespace, "--request-timeout", "20s", "console", "con", "con-1", "--"}
	code, out, errOut := runConsole(t, "line one\n", append(args, "sh", "-c", `read l; echo "out:$l"; echo "err:$l" >&2; exit 3`)...)
	if code != 3 || out != "out:line one\n" || errOut != "err:line one\n" {
		t.Errorf("console -- sh -c 'read; echo; echo >&2; exit 3': exit %d, stdout %q, stderr %q; want 3, out:line one, err:line one", code, out, errOut)
	}
	for _, want := range []int{0, 1, 42} {
		if code, _, _ := runConsole(t, "", append(args, "sh", "-c", "exit "+strconv.Itoa(want))...); code != want {
			t.Errorf("console -- exit %d: ctpool-tui exited %d", want, code)
		}
	}
	// The shell is the image's own (bash in the Debian image), in the desktop container.
	if out := mustSh(t, env, "con", "con-1", "cat /etc/debian_version >/dev/null && hostname"); out != "con-1\n" {
		t.Errorf("hostname in the console = %q, want the member's name", out)
	}
}

// 2.9: a release end to end on the real node, as a user's broker sees it:
// `ctpool-tui release` (which returns once the member's Pod and PVC are gone
// and its successor is created) and until the member is Ready again for the
// next user. Reports the p50 and p95 of both over b.N releases
// (make bench-node).
func BenchmarkIntegrationRealNodeRelease(b *testing.B) {
	env := kubetest.Require(b)
	env.RequireNode(b)
	b.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	ns := env.Namespace
	mustCmd := func(args ...string) string {
		b.Helper()
		var out, errb strings.Builder
		code := run(b.Context(), append([]string{"-n", ns}, args...), strings.NewReader(""), &out, &errb)
		if code != exitOK {
			b.Fatalf("%v: exit %d\n%s%s", args, code, out.String(), errb.String())
		}
		return out.String()
	}
	mustCmd("apply", "bench", "--image", kubetest.ImageDebian, "--size", "1", "--cpu", "200m", "--mem", "256Mi", "--disk", "1Gi",
		"--runtime-class", kubetest.RealNodeRuntimeClass, "--storage-class", kubetest.RealNodeStorageClass)
	ready := func() {
		b.Helper()
		env.WaitFor(b, realNodeTimeout, "bench-1 Ready", func() (bool, error) {
			var out, errb strings.Builder
			run(b.Context(), []string{"-n", ns, "status", "bench", "-o", "json"}, strings.NewReader(""), &out, &errb)
			return strings.Contains(out.String(), `"ready": 1,`), nil
		})
	}
	ready()
	var release, again []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		member := strings.TrimSpace(mustCmd("claim", "bench", "user-"+strconv.Itoa(i)))
		b.StartTimer()
		start := time.Now()
		mustCmd("release", "bench", member, "user-"+strconv.Itoa(i))
		release = append(release, time.Since(start))
		ready()
		again = append(again, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(percentile(release, 50).Seconds(), "release-p50-s")
	b.ReportMetric(percentile(release, 95).Seconds(), "release-p95-s")
	b.ReportMetric(percentile(again, 50).Seconds(), "ready-again-p50-s")
	b.ReportMetric(percentile(again, 95).Seconds(), "ready-again-p95-s")
}

// percentile is the nearest-rank percentile p of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

// memberReport reads one member of pool from `status -o json`.
func memberReport(t *testing.T, env *kubetest.Env, pool, member string) (render.OnceMember, bool) {
	t.Helper()
	_, out, _ := runCmd(t, "-n", env.Namespace, "status", pool, "-o", "json")
	var rep render.OnceReport
	if json.Unmarshal([]byte(out), &rep) != nil {
		return render.OnceMember{}, false
	}
	for _, p := range rep.Pools {
		for _, m := range p.Members {
			if m.Name == member {
				return m, true
			}
		}
	}
	return render.OnceMember{}, false
}

// 2.6: on a real node, an image no one can pull and a desktop that exits at
// once are Failed, with the kubelet's own reason in the status message and a
// diagnosis that names the cause; a drifted unclaimed member is replaced and
// runs the new image.
func TestIntegrationRealNodeFailuresAndDrift(t *testing.T) {
	env := realEnv(t)
	ns := env.Namespace
	apply := func(pool, image string, extra ...string) {
		t.Helper()
		args := append([]string{"-n", ns, "apply", pool, "--image", image, "--size", "1", "--cpu", "200m", "--mem", "256Mi", "--disk", "1Gi",
			"--runtime-class", kubetest.RealNodeRuntimeClass, "--storage-class", kubetest.RealNodeStorageClass}, extra...)
		if code, out, errOut := runCmd(t, args...); code != exitOK && code != exitAttention {
			t.Fatalf("apply %s: exit %d\n%s%s", pool, code, out, errOut)
		}
	}
	apply("gone", kubetest.ImageMissing)
	apply("crash", kubetest.ImageCrash, "--init")
	for _, tc := range []struct{ pool, message, reason string }{
		{"gone", "ImagePull", "image cannot be pulled"}, // ErrImagePull, then ImagePullBackOff
		{"crash", "CrashLoopBackOff", "keeps crashing"},
	} {
		var m render.OnceMember
		env.WaitFor(t, realNodeTimeout, tc.pool+"-1 Failed with "+tc.message, func() (bool, error) {
			var ok bool
			m, ok = memberReport(t, env, tc.pool, tc.pool+"-1")
			return ok && m.State == string(engine.StateFailed) && strings.Contains(m.Message, tc.message), nil
		})
		if m.Node != kubetest.RealNode || m.Diagnosis == nil || !strings.Contains(m.Diagnosis.Reason, tc.reason) {
			t.Errorf("%s-1: node %q, diagnosis %+v; want the real node and a reason with %q (message %q)", tc.pool, m.Node, m.Diagnosis, tc.reason, m.Message)
		}
	}

	realPool(t, env, "drift", kubetest.ImageDebian, 1)
	mustSh(t, env, "drift", "drift-1", "test -s /etc/debian_version")
	old, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), "drift-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apply("drift", kubetest.ImageBusybox)
	env.WaitFor(t, realNodeTimeout, "drift-1 replaced", func() (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), "drift-1", metav1.GetOptions{})
		return err == nil && p.UID != old.UID && p.Spec.Containers[0].Image == kubetest.ImageBusybox, nil
	})
	waitReady(t, env, "drift", 1)
	if out := mustSh(t, env, "drift", "drift-1", "test -e /etc/debian_version || readlink /bin/sh"); out != "/bin/busybox\n" {
		t.Errorf("the replaced member runs %q as /bin/sh, want the new image's /bin/busybox", out)
	}
}

// 2.8: a member's CPU and memory limits are in its own cgroup, and two members
// on the node cannot see each other's processes.
func TestIntegrationRealNodeResourcesAndIsolation(t *testing.T) {
	env := realEnv(t)
	realPool(t, env, "iso", kubetest.ImageBusybox, 2) // --cpu 200m --mem 256Mi
	limits := mustSh(t, env, "iso", "iso-1",
		"cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us")
	if got, want := strings.Fields(limits), []string{"268435456", "20000", "100000"}; !slices.Equal(got, want) {
		t.Errorf("iso-1's memory limit, CPU quota and period = %v, want %v (256Mi, 200m)", got, want)
	}
	// A process of iso-2's, by a command line no one else runs.
	mustSh(t, env, "iso", "iso-2", "sleep 4242 >/dev/null 2>&1 </dev/null &")
	list := `for p in /proc/[0-9]*; do tr '\0' ' ' <$p/cmdline 2>/dev/null; echo; done`
	if out := mustSh(t, env, "iso", "iso-2", list); !strings.Contains(out, "sleep 4242") {
		t.Fatalf("iso-2 does not see its own sleep 4242 (the check would prove nothing):\n%s", out)
	}
	if out := mustSh(t, env, "iso", "iso-1", list); strings.Contains(out, "sleep 4242") {
		t.Errorf("iso-1 sees iso-2's process:\n%s", out)
	}
}
