//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// Claimed desktops and voluntary disruptions, through the CLI on the real
// control plane (its disruption controller gives the pool's
// PodDisruptionBudget the status the eviction API reads).

// evict asks the eviction API (policy/v1) to evict a Pod, as a drain or the
// cluster autoscaler does.
func evict(ctx context.Context, env *kubetest.Env, pod string) error {
	return env.Client.PolicyV1().Evictions(env.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: env.Namespace}})
}

// waitBudgetCovers waits until the disruption controller has seen the
// pool's budget as it is and counts claimed healthy members under it.
func waitBudgetCovers(t *testing.T, env *kubetest.Env, pool string, claimed int32) {
	t.Helper()
	env.WaitFor(t, 60*time.Second, "the budget of "+pool+" to cover its claimed members", func() (bool, error) {
		b, err := env.Client.PolicyV1().PodDisruptionBudgets(env.Namespace).Get(t.Context(), engine.DisruptionBudgetName(pool), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return b.Status.ObservedGeneration >= b.Generation && b.Status.CurrentHealthy == claimed && b.Status.DisruptionsAllowed == 0, nil
	})
}

// podOf reads a member's Pod (nil when there is none).
func podOf(t *testing.T, env *kubetest.Env, name string) *corev1.Pod {
	t.Helper()
	p, err := env.Client.CoreV1().Pods(env.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The eviction API refuses (429) a claimed member's Pod and evicts a free
// one; once the claim is released, the rebuilt member is evictable again.
func TestIntegrationEvictionSparesClaimedDesktops(t *testing.T) {
	env := kubetest.Require(t)
	run := cliRunner(t, env)
	const pool = "evict"
	out, _ := run(exitOK, append([]string{"apply", pool, "--size", "2"}, smallPool...)...)
	if strings.Contains(out, engine.NotProtected) {
		t.Fatalf("apply as the admin says the desktops are not protected:\n%s", out)
	}
	env.WaitFor(t, convergeTimeout, "both members Ready", func() (bool, error) {
		return poolReport(t, env, pool).Ready == 2, nil
	})
	member, _ := run(exitOK, "claim", pool, "alice@example.com")
	member = strings.TrimSpace(member)
	free := engine.MemberName(pool, 1)
	if member == free {
		free = engine.MemberName(pool, 2)
	}
	claimedPod := podOf(t, env, member)
	if claimedPod == nil || !engine.ClaimMarked(claimedPod) {
		t.Fatalf("claimed member %s's Pod is not marked: %+v", member, claimedPod)
	}
	if p := podOf(t, env, free); p == nil || p.Labels[engine.LabelClaimed] != "" || p.Annotations[engine.AnnotationSafeToEvict] != "" {
		t.Fatalf("free member %s's Pod carries claim marks: %+v", free, p)
	}
	waitBudgetCovers(t, env, pool, 1)

	err := evict(t.Context(), env, member)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("eviction of claimed %s: %v; want 429 Too Many Requests", member, err)
	}
	if p := podOf(t, env, member); p == nil || p.UID != claimedPod.UID || p.DeletionTimestamp != nil {
		t.Fatalf("claimed %s after a refused eviction: %+v", member, p)
	}
	freePod := podOf(t, env, free)
	if err := evict(t.Context(), env, free); err != nil {
		t.Fatalf("eviction of free %s: %v; want it evicted", free, err)
	}
	env.WaitFor(t, 60*time.Second, "free "+free+" evicted", func() (bool, error) {
		p := podOf(t, env, free)
		return p == nil || p.UID != freePod.UID, nil
	})
	if _, err := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Get(t.Context(), engine.PVCName(member), metav1.GetOptions{}); err != nil {
		t.Fatalf("claimed %s's data: %v", member, err)
	}

	// alice is done: the member is rebuilt free, unmarked, and evictable.
	run(exitOK, "release", pool, member, "alice@example.com")
	rebuilt := podOf(t, env, member)
	if rebuilt == nil || rebuilt.UID == claimedPod.UID || rebuilt.Labels[engine.LabelClaimed] != "" || rebuilt.Annotations[engine.AnnotationSafeToEvict] != "" {
		t.Fatalf("released %s rebuilt as %+v; want a new Pod without claim marks", member, rebuilt)
	}
	waitBudgetCovers(t, env, pool, 0)
	if err := evict(t.Context(), env, member); err != nil {
		t.Fatalf("eviction of released (free) %s: %v", member, err)
	}
}

// A claim by a broker that writes only the contract's Lease leaves the Pod
// unmarked: the next reconcile marks it, and the eviction API then refuses
// it. The budget changed by hand is put back by the same reconcile, and
// delete removes it.
func TestIntegrationReconcileProtectsABrokersClaim(t *testing.T) {
	env := kubetest.Require(t)
	run := cliRunner(t, env)
	const pool = "broker"
	run(exitOK, append([]string{"apply", pool, "--size", "1"}, smallPool...)...)
	env.WaitFor(t, convergeTimeout, "the member Ready", func() (bool, error) {
		return poolReport(t, env, pool).Ready == 1, nil
	})
	member := engine.MemberName(pool, 1)
	lease := engine.ClaimLease(env.Namespace, pool, member, "bob@example.com", time.Now())
	lease.Labels = nil // a broker's: by name alone
	if _, err := env.Client.CoordinationV1().Leases(env.Namespace).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Someone opens the budget by hand meanwhile.
	pdbs := env.Client.PolicyV1().PodDisruptionBudgets(env.Namespace)
	if _, err := pdbs.Patch(t.Context(), engine.DisruptionBudgetName(pool), types.MergePatchType, []byte(`{"spec":{"maxUnavailable":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	out, _ := run(exitOK, "reconcile", pool)
	if !strings.Contains(out, "protection: PodDisruptionBudget "+engine.DisruptionBudgetName(pool)+" put back") || !strings.Contains(out, "1 re-marked") {
		t.Fatalf("reconcile said:\n%s", out)
	}
	if p := podOf(t, env, member); !engine.ClaimMarked(p) {
		t.Fatalf("bob's member after the reconcile: %+v", p)
	}
	waitBudgetCovers(t, env, pool, 1)
	if err := evict(t.Context(), env, member); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("eviction of bob's member: %v; want 429", err)
	}
	run(exitOK, "release", pool, member, "--force")
	run(exitOK, "delete", pool)
	if _, err := pdbs.Get(t.Context(), engine.DisruptionBudgetName(pool), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the budget after delete: %v; want it gone", err)
	}
}

// planeKubectl is the plane's own kubectl (the one testdata/cluster/up
// fetched), or the test is skipped without it.
func planeKubectl(t *testing.T, env *kubetest.Env) func(ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	kubectl := filepath.Join(kubetest.BinDir(env.Dir), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Skipf("no plane kubectl at %s", kubectl)
	}
	return func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", filepath.Join(env.Dir, "admin.kubeconfig")}, args...)...)
	}
}

// lockedBuffer is a bytes.Buffer a command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// `kubectl drain` of the real node evicts the free members, waits on the
// claimed one (its eviction refused), and completes once its user releases
// it; the claimed member's Pod and PVC stay until that release. Meanwhile
// --once -o json marks the members draining and counts the claimed desktop
// holding the drain. The node is uncordoned however the test ends. (Run it
// under `flock /tmp/ctpool-realnode.lock`: it drains the shared real node.)
func TestIntegrationRealNodeDrainWaitsForClaimedDesktop(t *testing.T) {
	env := realEnv(t)
	kubectl := planeKubectl(t, env)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := kubectl(ctx, "uncordon", kubetest.RealNode).CombinedOutput(); err != nil {
			t.Errorf("uncordon %s: %v\n%s", kubetest.RealNode, err, out)
		}
	})
	const pool = "drain"
	realPool(t, env, pool, kubetest.ImageBusybox, 3)
	code, out, errOut := runCmd(t, "-n", env.Namespace, "claim", pool, "alice@example.com")
	if code != exitOK {
		t.Fatalf("claim: exit %d\n%s%s", code, out, errOut)
	}
	member := strings.TrimSpace(out)
	claimedPod := podOf(t, env, member)
	pvc, err := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Get(t.Context(), engine.PVCName(member), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitBudgetCovers(t, env, pool, 1)
	frees := map[string]types.UID{}
	for n := 1; n <= 3; n++ {
		if name := engine.MemberName(pool, n); name != member {
			frees[name] = podOf(t, env, name).UID
		}
	}

	// Every delete of the claimed member's Pod or PVC is seen, and none may
	// come before its user's release.
	var released atomic.Bool
	var lost []string
	var lostMu sync.Mutex
	watchCtx, stopWatch := context.WithCancel(t.Context())
	defer stopWatch()
	for _, w := range []func() (watch.Interface, error){
		func() (watch.Interface, error) {
			return env.Client.CoreV1().Pods(env.Namespace).Watch(watchCtx, metav1.ListOptions{FieldSelector: "metadata.name=" + member, ResourceVersion: claimedPod.ResourceVersion})
		},
		func() (watch.Interface, error) {
			return env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Watch(watchCtx, metav1.ListOptions{FieldSelector: "metadata.name=" + pvc.Name, ResourceVersion: pvc.ResourceVersion})
		},
	} {
		wi, err := w()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for ev := range wi.ResultChan() {
				m, ok := ev.Object.(metav1.Object)
				if !ok || (m.GetUID() != claimedPod.UID && m.GetUID() != pvc.UID) {
					continue
				}
				if (ev.Type == watch.Deleted || m.GetDeletionTimestamp() != nil) && !released.Load() {
					lostMu.Lock()
					lost = append(lost, string(ev.Type)+" "+m.GetName())
					lostMu.Unlock()
				}
			}
		}()
		defer wi.Stop()
	}

	drainCtx, cancelDrain := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancelDrain()
	var drainOut lockedBuffer
	drain := kubectl(drainCtx, "drain", kubetest.RealNode, "--force", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=200s")
	drain.Stdout, drain.Stderr = &drainOut, &drainOut
	drainStart := time.Now()
	if err := drain.Start(); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- drain.Wait() }()

	for name, uid := range frees {
		env.WaitFor(t, 2*time.Minute, "free "+name+" evicted by the drain", func() (bool, error) {
			p := podOf(t, env, name)
			return p == nil || p.UID != uid, nil
		})
	}
	env.WaitFor(t, time.Minute, "the drain to be refused "+member, func() (bool, error) {
		return strings.Contains(drainOut.String(), "disruption budget"), nil
	})
	select {
	case err := <-drained:
		t.Fatalf("the drain ended while %s is claimed: %v\n%s", member, err, drainOut.String())
	default:
	}
	if p := podOf(t, env, member); p == nil || p.UID != claimedPod.UID || p.DeletionTimestamp != nil {
		t.Fatalf("claimed %s during the drain: %+v", member, p)
	}

	// The dashboard's --once sees the drain and who holds it.
	code, out, errOut = runCmd(t, "-n", env.Namespace, "--once", "-o", "json", "--pool", pool)
	if code != exitOK && code != exitAttention {
		t.Fatalf("--once: exit %d\n%s%s", code, out, errOut)
	}
	var rep render.OnceReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Pools) != 1 {
		t.Fatalf("--once -o json: %v\n%s", err, out)
	}
	p := rep.Pools[0]
	if len(p.DrainHolds) != 1 || p.DrainHolds[0].Node != kubetest.RealNode || p.DrainHolds[0].Claimed != 1 || p.DrainHolds[0].Members[0] != member {
		t.Fatalf("--once drainHolds = %+v; want %s held by %s", p.DrainHolds, kubetest.RealNode, member)
	}
	for _, m := range p.Members {
		if m.Name == member && !m.NodeDraining {
			t.Fatalf("%s is not marked draining: %+v", member, m)
		}
	}
	if code, out, _ := runCmd(t, "-n", env.Namespace, "--once", "--pool", pool); !strings.Contains(out, "1 claimed desktop holds the drain of "+kubetest.RealNode) {
		t.Fatalf("--once (exit %d) does not say who holds the drain:\n%s", code, out)
	}

	// alice is done: her release ends the drain.
	released.Store(true)
	releaseStart := time.Now()
	if code, out, errOut := runCmd(t, "-n", env.Namespace, "release", pool, member, "alice@example.com"); code != exitOK {
		t.Fatalf("release: exit %d\n%s%s", code, out, errOut)
	}
	var drainEnd time.Time
	select {
	case err := <-drained:
		drainEnd = time.Now()
		if err != nil {
			t.Fatalf("kubectl drain: %v\n%s", err, drainOut.String())
		}
	case <-drainCtx.Done():
		t.Fatalf("the drain did not end after the release:\n%s", drainOut.String())
	}
	stopWatch()
	lostMu.Lock()
	defer lostMu.Unlock()
	if len(lost) > 0 {
		t.Fatalf("the claimed member lost objects before its release: %v", lost)
	}
	t.Logf("the drain waited %s on the claimed desktop and ended %s after its release began:\n%s",
		releaseStart.Sub(drainStart).Round(time.Millisecond), drainEnd.Sub(releaseStart).Round(time.Millisecond), drainOut.String())
}
