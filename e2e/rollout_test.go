//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// A rollout of an image that cannot be pulled, on the real node, halts
// after its first wave; the dashboard shows the halt in the pools table
// (DRIFT ⚠) and the pool's note with the kubelet's words, the failing
// member's backoff on its row, and R resumes the rollout after a
// confirmation: the resume is written and the rollout runs again. Then a
// drain of the node: the member a user claimed holds it, on the screen.
func TestE2ERolloutHaltAndResume(t *testing.T) {
	env := kubetest.Require(t)
	env.RequireNode(t)
	ns := env.Namespace
	ctl(t, env, "apply", "roll", "--image", kubetest.ImageBusybox, "--size", "2", "--max-unavailable", "1",
		"--cpu", "100m", "--mem", "128Mi", "--disk", "1Gi",
		"--runtime-class", kubetest.RealNodeRuntimeClass, "--storage-class", kubetest.RealNodeStorageClass)
	env.WaitFor(t, realNodeTimeout, "both members of roll Ready on the real node", func() (bool, error) {
		return strings.Contains(ctl(t, env, "status", "roll", "-o", "json"), `"ready": 2,`), nil
	})
	ctl(t, env, "apply", "roll", "--image", kubetest.ImageMissing)
	env.WaitFor(t, realNodeTimeout, "the rollout halted", func() (bool, error) {
		ctl(t, env, "reconcile", "roll")
		cmd := exec.Command(binary, "-n", ns, "rollout", "status", "roll")
		cmd.Env = childEnv([]string{"KUBECONFIG=" + kubeconfig(env, "admin")})
		out, err := cmd.Output()
		return exitCode(err) == 3 && strings.Contains(string(out), "halted"), nil
	})

	term := start(t, 140, 30, []string{"KUBECONFIG=" + kubeconfig(env, "admin"), "TERM=xterm-256color"}, "-n", ns)
	term.waitText(startTimeout, "ns: "+ns, "roll")
	term.waitScreen("the halt in the table and the note", keyTimeout, func(rows []string) bool {
		return rowWith(rows, "roll", "1 ⚠") >= 0 && rowWith(rows, "rollout of "+kubetest.ImageMissing+" halted") >= 0 &&
			rowWith(rows, "R resume rollout") >= 0
	})
	term.syncKeys("the start")
	term.send("\r")
	term.waitScreen("the halted pool's members: the failing one backs off", keyTimeout, func(rows []string) bool {
		return rowWith(rows, "ROLLOUT HALTED") >= 0 && rowWith(rows, "roll-1", "Failed", "retry") >= 0
	})
	term.send("R")
	term.waitText(keyTimeout, "Resume the rollout of "+kubetest.ImageMissing+" on roll?", "[ Cancel ]")
	term.send("\t")
	term.waitText(keyTimeout, "[ Resume ]")
	term.send("\r")
	env.WaitFor(t, keyTimeout, "the resume written and the rollout running", func() (bool, error) {
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), engine.ConfigMapName("roll"), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st, err := engine.ParseStatus(cm.Data[engine.KeyStatus])
		return err == nil && cm.Data[engine.KeyRolloutResume] != "" && st.Rollout != nil && st.Rollout.Resumed != nil, nil
	})
	term.waitScreen("the action logged", keyTimeout, func(rows []string) bool {
		return rowWith(rows, "rollout resumed") >= 0
	})

	// A drain of the node: a user's desktop on it holds the drain, and
	// every member on it is marked.
	holder := strings.TrimSpace(ctl(t, env, "claim", "roll", "dana@example.com"))
	nodes := env.Client.CoreV1().Nodes()
	cordon := func(on bool) error {
		n, err := nodes.Get(context.Background(), kubetest.RealNode, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = on
		_, err = nodes.Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	}
	t.Cleanup(func() {
		if err := cordon(false); err != nil {
			t.Errorf("uncordon %s: %v", kubetest.RealNode, err)
		}
	})
	if err := cordon(true); err != nil {
		t.Fatal(err)
	}
	term.waitScreen("the drain held by dana's desktop", keyTimeout, func(rows []string) bool {
		return rowWith(rows, "1 claimed desktop holds the drain of") >= 0 &&
			rowWith(rows, holder, "dana@example.com", "node draining") >= 0
	})
	if err := cordon(false); err != nil {
		t.Fatal(err)
	}
	term.send("q")
	if err := term.wait(exitTimeout); err != nil {
		t.Fatalf("the dashboard ended with %v (exit %d); screen:\n%s", err, exitCode(err), dump(term.screen()))
	}
}
