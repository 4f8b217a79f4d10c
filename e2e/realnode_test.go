//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// realNodeTimeout bounds a member's start or rebuild on the plane's real node.
const realNodeTimeout = 90 * time.Second

// The dashboard on a real desktop (the plane's real node: a kubelet and
// containerd): claim the member with a, open a console with c and run a
// command in the image's real shell, exit, force-release with f, and see the
// member come back fresh: a new Pod and PVC, and the file written in the
// console gone.
func TestE2ERealNodeDesktop(t *testing.T) {
	env := kubetest.Require(t)
	env.RequireNode(t)
	ns := env.Namespace
	ctl(t, env, "apply", "desk", "--image", kubetest.ImageDebian, "--size", "1", "--cpu", "200m", "--mem", "256Mi", "--disk", "1Gi",
		"--runtime-class", kubetest.RealNodeRuntimeClass, "--storage-class", kubetest.RealNodeStorageClass)
	env.WaitFor(t, realNodeTimeout, "desk-1 Ready on the real node", func() (bool, error) {
		return strings.Contains(ctl(t, env, "status", "desk", "-o", "json"), `"ready": 1,`), nil
	})
	pods, pvcs := env.Client.CoreV1().Pods(ns), env.Client.CoreV1().PersistentVolumeClaims(ns)
	pod, err := pods.Get(t.Context(), "desk-1", metav1.GetOptions{})
	if err != nil || pod.Spec.NodeName != kubetest.RealNode {
		t.Fatalf("desk-1: %v, on node %q; want it on %s", err, pod.Spec.NodeName, kubetest.RealNode)
	}
	pvc, err := pvcs.Get(t.Context(), engine.PVCName("desk-1"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	term := start(t, 120, 30, []string{"KUBECONFIG=" + kubeconfig(env, "admin"), "TERM=xterm-256color"}, "-n", ns)
	term.waitText(startTimeout, "ns: "+ns, "desk", "enter members")

	// a: claim desk's free member for bob (once the program takes keys).
	term.syncKeys("the start")
	term.send("a")
	term.waitText(keyTimeout, "Claim a desktop of desk")
	term.send("bob@example.com")
	term.waitText(keyTimeout, "> bob@example.com")
	term.send("\r")
	lease := engine.LeaseName("desk-1")
	env.WaitFor(t, keyTimeout, "bob's claim Lease on desk-1", func() (bool, error) {
		l, err := env.Client.CoordinationV1().Leases(ns).Get(t.Context(), lease, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "bob@example.com", err
	})
	term.send("\r")
	term.waitScreen("desk-1 claimed by bob", keyTimeout, func(rows []string) bool {
		return rowWith(rows, "▸ desk-1", "bob@example.com") >= 0
	})

	// c: a console in the real desktop; a command, and exit.
	term.send("c")
	term.waitScreen("the console session of desk-1", keyTimeout, func(rows []string) bool {
		return rowWith(rows, "shell in "+ns+"/desk-1") >= 0 && !term.altScreen()
	})
	term.send("echo real-$((6*7)) | tee /data/bob; cat /etc/debian_version >/dev/null && echo debian-shell\r")
	term.waitText(keyTimeout, "real-42", "debian-shell")
	term.send("exit\r")
	term.waitScreen("the dashboard back with desk-1 selected", keyTimeout, func(rows []string) bool {
		return term.altScreen() && rowWith(rows, "▸ desk-1") >= 0 && rowWith(rows, "console desk-1: session ended") >= 0
	})

	// f: force-release bob's claim; the member is rebuilt, fresh.
	term.send("f")
	term.waitText(keyTimeout, "Force-release desk-1?", "Holder: bob@example.com", "[ Cancel ]")
	term.send("\t")
	term.waitText(keyTimeout, "[ Force release ]")
	term.send("\r")
	env.WaitFor(t, realNodeTimeout, "desk-1 rebuilt: a new Pod and PVC", func() (bool, error) {
		p, err := pods.Get(t.Context(), "desk-1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		c, cerr := pvcs.Get(t.Context(), engine.PVCName("desk-1"), metav1.GetOptions{})
		if apierrors.IsNotFound(cerr) {
			return false, nil
		}
		return err == nil && cerr == nil && p.UID != pod.UID && c.UID != pvc.UID, nil
	})
	// The new Pod Ready (its container running) before the console below,
	// then the screen: a row may still show the old Pod's state for a moment.
	env.WaitFor(t, realNodeTimeout, "the rebuilt desk-1 Running and Ready", func() (bool, error) {
		p, err := pods.Get(t.Context(), "desk-1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil || p.UID == pod.UID || p.Status.Phase != corev1.PodRunning {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	term.waitScreen("desk-1 free and Ready on the screen", realNodeTimeout, func(rows []string) bool {
		i := rowWith(rows, "▸ desk-1", "Ready")
		return i >= 0 && !strings.Contains(rows[i], "bob@example.com")
	})
	if _, err := env.Client.CoordinationV1().Leases(ns).Get(t.Context(), lease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("bob's claim Lease after the force-release: %v, want it gone", err)
	}
	if out := strings.TrimSpace(ctl(t, env, "console", "desk", "desk-1", "--", "sh", "-c", "test -e /data/bob && echo kept || echo gone")); out != "gone" {
		t.Errorf("bob's /data/bob on the rebuilt member: %q, want gone", out)
	}

	term.send("q")
	if err := term.wait(exitTimeout); err != nil {
		t.Fatalf("the dashboard ended with %v (exit %d); screen:\n%s", err, exitCode(err), dump(term.screen()))
	}
	checkRestored(t, term)
}
