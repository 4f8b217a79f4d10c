//go:build integration

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// The commands end to end on the real control plane, as a script uses them.
func TestIntegrationCommands(t *testing.T) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	ns := env.Namespace
	mustRun := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"-n", ns}, args...)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errOut)
		}
		return out
	}
	out := mustRun(exitOK, "apply", "desk", "--image", "registry.example/desktop:1", "--size", "2", "--cpu", "100m", "--mem", "128Mi", "--disk", "1Gi")
	if !strings.Contains(out, "pool desk created") || !strings.Contains(out, "2 created") {
		t.Fatalf("apply output:\n%s", out)
	}
	env.WaitFor(t, 60*time.Second, "a free member", func() (bool, error) {
		code, _, _ := runCmd(t, "-n", ns, "--once", "--pool", "desk")
		return code == exitOK, nil
	})
	m1 := strings.TrimSpace(mustRun(exitOK, "claim", "desk", "alice@example.com"))
	m2 := strings.TrimSpace(mustRun(exitOK, "claim", "desk", "alice@example.com"))
	if m1 == "" || m1 != m2 {
		t.Fatalf("same identity got %q then %q", m1, m2)
	}
	var rep render.OnceReport
	if err := json.Unmarshal([]byte(mustRun(exitOK, "status", "desk", "-o", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Pools) != 1 || rep.Pools[0].Claimed != 1 || rep.Pools[0].Size != 2 {
		t.Fatalf("status: %+v", rep.Pools)
	}
	if y := mustRun(exitOK, "status", "desk", "-o", "yaml"); !strings.Contains(y, "schemaVersion: 1") {
		t.Fatalf("status -o yaml:\n%s", y)
	}

	// Bad input changes nothing and says why on one line.
	code, _, errOut := runCmd(t, "-n", ns, "release", "desk", m1, "bob@example.com")
	if code != exitError || !strings.Contains(errOut, "does not hold the claim") {
		t.Fatalf("release by a non-holder: exit %d %q", code, errOut)
	}

	// The viewer reads but cannot write.
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "viewer.kubeconfig"))
	code, _, errOut = runCmd(t, "-n", ns, "claim", "desk", "carol@example.com")
	if code != exitError || !strings.Contains(strings.ToLower(errOut), "forbidden") {
		t.Fatalf("viewer claim: exit %d %q", code, errOut)
	}
	code, out, errOut = runCmd(t, "-n", ns, "--once", "-o", "json")
	if code != exitOK && code != exitAttention {
		t.Fatalf("viewer --once: exit %d %q", code, errOut)
	}
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))

	mustRun(exitOK, "release", "desk", m1, "alice@example.com")
	// Resize to 1 and exhaust it: --once says 3.
	mustRun(exitOK, "apply", "desk", "--size", "1")
	env.WaitFor(t, 60*time.Second, "desk-1 free", func() (bool, error) {
		code, _, _ := runCmd(t, "-n", ns, "--once", "--pool", "desk")
		return code == exitOK, nil
	})
	mustRun(exitOK, "claim", "desk", "dave@example.com")
	code, _, errOut = runCmd(t, "-n", ns, "claim", "desk", "erin@example.com")
	if code != exitError || !strings.Contains(errOut, "pool has no free members (desired 1, claimed 1, unschedulable 0)") {
		t.Fatalf("claim on a full pool: exit %d %q", code, errOut)
	}
	if code, _, _ := runCmd(t, "-n", ns, "--once"); code != exitAttention {
		t.Fatalf("--once on an exhausted pool: exit %d, want 3", code)
	}
	code, _, errOut = runCmd(t, "-n", ns, "delete", "desk")
	if code != exitError || !strings.Contains(errOut, "claimed") {
		t.Fatalf("delete with a claim: exit %d %q", code, errOut)
	}
	mustRun(exitOK, "release", "desk", "desk-1", "--force")
	mustRun(exitOK, "delete", "desk")
	if out := mustRun(exitOK, "--once"); !strings.Contains(out, "no pools") {
		t.Fatalf("after delete:\n%s", out)
	}

	// Every write of the commands is in the audit trail, as the caller.
	who, err := kube.WhoAmI(t.Context(), env.Client)
	if err != nil || who == "" {
		t.Fatalf("whoami: %q %v", who, err)
	}
	evs, err := env.Client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, ev := range evs.Items {
		action := ev.Annotations[kube.AuditAnnotation]
		if action == "" {
			continue
		}
		count[action]++
		if !strings.Contains(ev.Message, " by "+who) {
			t.Errorf("audit Event %q does not name %s", ev.Message, who)
		}
	}
	// Refused attempts are recorded too (as Warnings): apply twice; claim:
	// alice twice, dave, erin (refused); release by bob (refused) and by
	// alice; force-release; delete twice (refused, then done). The viewer's
	// refused claim has no Event: the viewer may not create one.
	for action, want := range map[string]int{"apply": 2, "claim": 4, "release": 2, "force-release": 1, "delete": 2} {
		if count[action] != want {
			t.Errorf("%d audit Events for %s, want %d (all: %v)", count[action], action, want, count)
		}
	}
}
