//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// freeReady counts the members a claim can get at once: Ready, unclaimed,
// not under maintenance, within the size (of the current source, or of an
// earlier one that a rollout has not reached yet).
func freeReady(p render.OncePool) int {
	n := 0
	for _, m := range p.Members {
		if m.State == string(engine.StateReady) && m.Holder == "" && !m.Maintenance && !m.AboveSize {
			n++
		}
	}
	return n
}

// podUIDs are the pool's member Pods by name.
func podUIDs(t *testing.T, env *kubetest.Env, pool string) map[string]types.UID {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(env.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: engine.LabelPool + "=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

var replacedRE = regexp.MustCompile(`(?m)^reconcile: (?:[^;\n]*, )?(\d+) replaced`)

// replacedIn is how many members a reconcile's output says it replaced.
func replacedIn(out string) int {
	if m := replacedRE.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// A new image applied to a pool with claimed members rolls in waves of at
// most the budget (25% of 12: 3); the members still on the old image serve
// the claims made meanwhile, so the pool never runs out of free Ready
// desktops and no claim is refused; the claimed members are never touched.
// Before rollouts the apply replaced all 9 free members at once, and a
// claim made before they were Ready was refused ("pool has no free
// members"): drifted members were never handed out.
func TestIntegrationRolloutKeepsDesktopsFree(t *testing.T) {
	env, run := elasticCLI(t)
	const pool, size, budget = "roll", 12, 3
	run(exitOK, append([]string{"apply", pool, "--size", strconv.Itoa(size)}, smallMember...)...)
	waitFree(t, env, run, pool, size)
	claimed := map[string]string{}
	for i := range 3 {
		out, _ := run(exitOK, "claim", pool, fmt.Sprintf("early%d@example.com", i))
		claimed[strings.TrimSpace(out)] = fmt.Sprintf("early%d@example.com", i)
	}
	before := podUIDs(t, env, pool)

	out, _ := run(exitOK, "apply", pool, "--image", "registry.example/desktop:2")
	if n := replacedIn(out); n != budget {
		t.Fatalf("apply replaced %d members, want the first wave of %d:\n%s", n, budget, out)
	}
	lowest, logins := size, 0
	deadline := time.Now().Add(2 * time.Minute)
	var st render.OncePool
	for {
		st = poolStatus(t, run, pool)
		lowest = min(lowest, freeReady(st))
		if st.Rollout != nil && st.Rollout.State == render.RolloutDone {
			break
		}
		if st.Rollout == nil || st.Rollout.State != render.RolloutRolling {
			t.Fatalf("rollout %+v, want it rolling", st.Rollout)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rollout is not done after 2m: %+v", st.Rollout)
		}
		repairLostVolumes(t, env, st)
		if logins < 4 {
			// A login in the middle of the rollout: never refused.
			run(exitOK, "claim", pool, fmt.Sprintf("login%d@example.com", logins))
			logins++
		}
		out, _ := run(exitOK, "reconcile", pool)
		if n := replacedIn(out); n > budget {
			t.Fatalf("a reconcile replaced %d members, more than the budget %d:\n%s", n, budget, out)
		}
	}
	if lowest < 1 {
		t.Errorf("the pool had %d free Ready members at its lowest during the rollout", lowest)
	}
	after := podUIDs(t, env, pool)
	for name, holder := range claimed {
		if after[name] != before[name] {
			t.Errorf("%s, claimed by %s, was replaced by the rollout", name, holder)
		}
	}
	// The early claims stay on the old image; a login may also have taken
	// an old member, when none of the new image was free.
	if st.Rollout.OldClaimed < len(claimed) || st.Rollout.OldClaimed > len(claimed)+logins || st.Rollout.Waves < 2 {
		t.Errorf("rollout %+v: want the %d early claims (and at most the %d logins) still on the old image, and at least 2 waves", st.Rollout, len(claimed), logins)
	}
	t.Logf("rollout of %d members (%d claimed before, %d logins during): %d waves, lowest free Ready %d, took %s",
		size, len(claimed), logins, st.Rollout.Waves, lowest, st.Rollout.Took)
}

// An image that cannot be pulled, on the real node: the rollout halts
// after its first wave (2 members), no other member is replaced however
// often reconcile runs, the failing new members are kept for their logs
// (the backoff), the members still on the old image serve a claim,
// status and rollout status say why with the kubelet's words (exit 3); an
// apply of the old image rolls the failed members back. Before rollouts,
// the apply replaced all 4 members with desktops that could not start.
func TestIntegrationRealNodeRolloutHaltsABadImage(t *testing.T) {
	env := realEnv(t)
	ns := env.Namespace
	const pool = "rbad"
	realPool(t, env, pool, kubetest.ImageBusybox, 4, "--max-unavailable", "2")
	before := podUIDs(t, env, pool)
	apply := func(image string) string {
		t.Helper()
		code, out, errOut := runCmd(t, "-n", ns, "apply", pool, "--image", image)
		if code != exitOK && code != exitAttention {
			t.Fatalf("apply %s: exit %d\n%s%s", image, code, out, errOut)
		}
		return out
	}
	if n := replacedIn(apply(kubetest.ImageMissing)); n != 2 {
		t.Fatalf("the first wave replaced %d members, want 2", n)
	}
	var ro *render.OnceRollout
	env.WaitFor(t, realNodeTimeout, "the rollout halted", func() (bool, error) {
		if code, out, errOut := runCmd(t, "-n", ns, "reconcile", pool); code != exitOK {
			return false, fmt.Errorf("reconcile: exit %d\n%s%s", code, out, errOut)
		}
		_, out, _ := runCmd(t, "-n", ns, "status", pool, "-o", "json")
		ro = rolloutOf(t, out)
		return ro != nil && ro.State == render.RolloutHalted, nil
	})
	if !strings.Contains(ro.Halted, "2 of 2 new members") || !strings.Contains(ro.Halted, "ImagePull") {
		t.Errorf("halted: %q, want the 2 new members and the kubelet's ImagePull reason", ro.Halted)
	}
	halt := podUIDs(t, env, pool)
	for range 3 {
		runCmd(t, "-n", ns, "reconcile", pool)
	}
	now := podUIDs(t, env, pool)
	// The failing new members are kept for their logs (the backoff),
	// not rebuilt by each reconcile; their rows say when they are.
	_, out, _ := runCmd(t, "-n", ns, "status", pool, "-o", "json")
	var rep render.OnceReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Pools) != 1 {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	backedOff := 0
	for _, m := range rep.Pools[0].Members {
		if before[m.Name] != now[m.Name] {
			if now[m.Name] != halt[m.Name] {
				t.Errorf("%s, failing on the new image, was rebuilt by the reconciles right after the halt (its logs lost)", m.Name)
			}
			if m.Backoff != nil && m.Backoff.Failures >= 1 {
				backedOff++
			}
		}
	}
	if backedOff != 2 {
		t.Errorf("%d failing members with a backoff recorded, want 2:\n%s", backedOff, out)
	}
	gone := 0
	for name, uid := range before {
		if now[name] != uid {
			gone++
		}
	}
	if gone != 2 {
		t.Fatalf("%d members destroyed by the halted rollout, want the first wave's 2", gone)
	}
	code, out, _ := runCmd(t, "-n", ns, "rollout", "status", pool)
	if code != exitAttention || !strings.Contains(out, "halted") || !strings.Contains(out, "rollout resume "+pool) {
		t.Errorf("rollout status: exit %d, %q; want 3 and the halt", code, out)
	}
	code, out, _ = runCmd(t, "-n", ns, "--once", "--pool", pool)
	if code != exitAttention || !strings.Contains(out, "rollout halted") {
		t.Errorf("--once: exit %d; want 3 and STATUS rollout halted:\n%s", code, out)
	}
	// The old members serve.
	code, out, errOut := runCmd(t, "-n", ns, "claim", pool, "during-halt@example.com")
	member := strings.TrimSpace(out)
	if code != exitOK || before[member] == "" || now[member] != before[member] {
		t.Fatalf("a claim during the halt: exit %d, %q %s; want an old member", code, out, errOut)
	}
	// Roll back: the failed members are rebuilt on the old image; the
	// claimed one stays as it is.
	apply(kubetest.ImageBusybox)
	env.WaitFor(t, realNodeTimeout, "the roll back done", func() (bool, error) {
		runCmd(t, "-n", ns, "reconcile", pool)
		_, out, _ := runCmd(t, "-n", ns, "status", pool, "-o", "json")
		ro = rolloutOf(t, out)
		return ro != nil && ro.State == render.RolloutDone, nil
	})
	waitReady(t, env, pool, 4)
	if after := podUIDs(t, env, pool); after[member] != before[member] {
		t.Errorf("the claimed member %s was replaced", member)
	}
}

func rolloutOf(t *testing.T, statusJSON string) *render.OnceRollout {
	t.Helper()
	var rep render.OnceReport
	if err := json.Unmarshal([]byte(statusJSON), &rep); err != nil || len(rep.Pools) != 1 {
		t.Fatalf("status -o json: %v\n%s", err, statusJSON)
	}
	return rep.Pools[0].Rollout
}

// repairLostVolumes deletes the Pod and PVC of a member the plane's fake
// provisioner left on a volume it lost (it bound the new PVC to the volume
// of the PVC of the same name just deleted: "bound to non-existent
// persistentvolume"), as the randomized run's repairPlaneArtifacts does; the
// next reconcile builds the member again. A real provisioner binds by UID.
func repairLostVolumes(t *testing.T, env *kubetest.Env, st render.OncePool) {
	t.Helper()
	for _, m := range st.Members {
		if m.State != string(engine.StateUnschedulable) || !strings.Contains(m.Message, "bound to non-existent persistentvolume") || m.Holder != "" {
			continue
		}
		t.Logf("%s: a plane artifact (%s): its Pod and PVC deleted, to be built again", m.Name, m.Message)
		_ = env.Client.CoreV1().Pods(env.Namespace).Delete(t.Context(), m.Name, metav1.DeleteOptions{})
		_ = env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Delete(t.Context(), engine.PVCName(m.Name), metav1.DeleteOptions{})
	}
}
