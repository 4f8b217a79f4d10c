//go:build integration

package systest_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// holders reads the pool's Leases fresh and returns the members each user
// identity holds.
func holders(t *testing.T, env *kubetest.Env, pool string) map[string][]string {
	t.Helper()
	list, err := env.Client.CoordinationV1().Leases(env.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: kube.PoolSelector(pool)})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, l := range list.Items {
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == engine.ReconcilerIdentity {
			continue
		}
		m, _ := engine.MemberFromLeaseName(l.Name)
		out[*l.Spec.HolderIdentity] = append(out[*l.Spec.HolderIdentity], m)
	}
	return out
}

// Ten identities claim three times each, all at once, from separate engines
// (separate processes or brokers): each identity ends with one member, and
// every one of its claims answered that member. Both claim paths: the
// commands' fresh reads and the dashboard's informer cache.
func TestIntegrationConcurrentClaimsBySameIdentityConverge(t *testing.T) {
	env := kubetest.Require(t)
	ctx := context.Background()
	const identities, per, size = 10, 3, 40
	setup := pooltest.Engine(env)
	spec := pooltest.SmallSpec(pooltest.Image, size)
	spec.CPU, spec.Memory = "10m", "16Mi"

	watcher := kube.NewWatcher(env.Client, env.Namespace)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := watcher.Start(wctx); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"fresh", "cache"} {
		t.Run(path, func(t *testing.T) {
			pool := "conv" + path
			if _, err := setup.Apply(ctx, pool, spec); err != nil {
				t.Fatal(err)
			}
			env.WaitFor(t, 3*time.Minute, "every member free", func() (bool, error) {
				free := observe(t, setup, pool).Status.Free
				if path == "cache" {
					snap, err := watcher.Snapshot(ctx, pool)
					if err != nil {
						return false, nil
					}
					free = min(free, engine.Observe(snap, time.Now()).Status.Free)
				}
				return free == size, nil
			})
			type answer struct{ id, member string }
			answers := make(chan answer, identities*per)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range identities {
				id := fmt.Sprintf("user%d@example.com", i)
				for range per {
					c := kube.NewCluster(env.Client, env.Namespace)
					if path == "cache" {
						c.Reader = watcher
					}
					eng := &engine.Engine{Cluster: c, Namespace: env.Namespace, Now: time.Now}
					wg.Go(func() {
						<-start
						res, err := eng.Claim(ctx, pool, id)
						if err != nil {
							t.Errorf("claim by %s: %v", id, err)
							return
						}
						answers <- answer{id, res.Member}
					})
				}
			}
			close(start)
			wg.Wait()
			close(answers)
			answered := map[string]map[string]bool{}
			for a := range answers {
				if answered[a.id] == nil {
					answered[a.id] = map[string]bool{}
				}
				answered[a.id][a.member] = true
			}
			held := holders(t, env, pool)
			doubles := 0
			for i := range identities {
				id := fmt.Sprintf("user%d@example.com", i)
				h := held[id]
				if len(h) != 1 || len(answered[id]) != 1 || !answered[id][h[0]] {
					doubles++
					t.Errorf("%s holds %v and was answered %v", id, h, answered[id])
				}
			}
			t.Logf("%s: %d identities x %d concurrent claims: %d identities with more than one member or answer", path, identities, per, doubles)
		})
	}
}

// A claimed member whose Pod is deleted is started again by the next
// reconcile, on the same data PVC, with the claim kept: within the size, and
// above it (the pool made smaller while the member was claimed: the claim
// holds whatever the size).
func TestIntegrationClaimedMemberLosesItsPod(t *testing.T) {
	for _, tt := range []struct {
		name, pool string
		size       int // the pool's size once claimed
	}{
		{"within the size", "lost", 2},
		{"above the size", "lostabove", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := kubetest.Require(t)
			ctx := context.Background()
			eng := pooltest.Engine(env)
			applyReady(t, env, eng, tt.pool, pooltest.SmallSpec(pooltest.Image, 2))
			// Each identity starts its pick at a point of its own: the member
			// tested is the higher of the two claimed, which a resize to 1
			// leaves above the size.
			var res engine.ClaimResult
			var holder string
			for _, who := range []string{"alice@example.com", "bob@example.com"} {
				r, err := eng.Claim(ctx, tt.pool, who)
				if err != nil {
					t.Fatal(err)
				}
				if r.Member > res.Member {
					res, holder = r, who
				}
			}
			if tt.size != 2 {
				if _, err := eng.Resize(ctx, tt.pool, tt.size); err != nil {
					t.Fatal(err)
				}
				v := observe(t, eng, tt.pool)
				if m := v.Member(res.Member); m == nil || !m.AboveSize {
					t.Fatalf("%s is not above the size after the resize: %+v", res.Member, m)
				}
			}
			pvc, err := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Get(ctx, engine.PVCName(res.Member), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := env.Client.CoreV1().Pods(env.Namespace).Delete(ctx, res.Member, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			env.WaitFor(t, time.Minute, res.Member+" Stopped", func() (bool, error) {
				v := observe(t, eng, tt.pool)
				return v.Member(res.Member).State == engine.StateStopped, nil
			})
			rr, err := eng.Reconcile(ctx, tt.pool)
			if err != nil {
				t.Fatal(err)
			}
			started := false
			for _, a := range rr.Actions {
				started = started || (a.Member == res.Member && a.Step == engine.StepStart && a.Skipped == "" && a.Err == nil)
			}
			if !started {
				t.Fatalf("reconcile did not start %s: %+v", res.Member, rr.Actions)
			}
			env.WaitFor(t, 90*time.Second, res.Member+" Ready again", func() (bool, error) {
				v := observe(t, eng, tt.pool)
				return v.Member(res.Member).State == engine.StateReady, nil
			})
			v := observe(t, eng, tt.pool)
			m := v.Member(res.Member)
			if m.Holder() != holder {
				t.Fatalf("claim after the restart: %q", m.Holder())
			}
			if m.PVC.UID != pvc.UID {
				t.Fatal("the user's data PVC was replaced")
			}
		})
	}
}

// A release whose PVC delete cannot finish (a finalizer holds it
// Terminating) is never undone: the Lease stays with the reconciler, nobody
// else is handed the member, and a reconcile after the Lease is stale
// finishes the release.
func TestIntegrationReleaseFailsMidDestroy(t *testing.T) {
	env := kubetest.Require(t)
	ctx := context.Background()
	eng := pooltest.Engine(env)
	applyReady(t, env, eng, "half", pooltest.SmallSpec(pooltest.Image, 1))
	res, err := eng.Claim(ctx, "half", "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	const hold = "ctpool.test/hold"
	pvcs := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace)
	pvcName := engine.PVCName(res.Member)
	patch := func(finalizers string) {
		t.Helper()
		p := fmt.Sprintf(`{"metadata":{"finalizers":%s}}`, finalizers)
		if _, err := pvcs.Patch(ctx, pvcName, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	old, err := pvcs.Get(ctx, pvcName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch(`["kubernetes.io/pvc-protection","` + hold + `"]`)
	released := false
	t.Cleanup(func() {
		if !released {
			_, _ = pvcs.Patch(context.Background(), pvcName, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})

	short := *eng
	short.WaitTimeout = 3 * time.Second
	_, err = short.Release(ctx, "half", res.Member, "alice@example.com")
	if err == nil || !strings.Contains(err.Error(), "the release is not undone") {
		t.Fatalf("Release = %v", err)
	}
	v := observe(t, eng, "half")
	m := v.Member(res.Member)
	if !m.InMaintenance() || m.Claimed || m.Hold.Holder != engine.ReconcilerIdentity {
		t.Fatalf("after the failed release: maintenance %v claimed %v hold %+v", m.InMaintenance(), m.Claimed, m.Hold)
	}
	if _, err := eng.Claim(ctx, "half", "bob@example.com"); err == nil {
		t.Fatal("bob was handed the half-released member")
	}

	// The finalizer goes; a reconcile before the Lease is stale leaves the
	// member alone, one after it finishes the release.
	patch(`null`)
	released = true
	env.WaitFor(t, time.Minute, "the old PVC gone", func() (bool, error) {
		c, err := pvcs.Get(ctx, pvcName, metav1.GetOptions{})
		return err != nil || c.UID != old.UID, nil
	})
	if _, err := eng.Reconcile(ctx, "half"); err != nil {
		t.Fatal(err)
	}
	if v := observe(t, eng, "half"); !v.Member(res.Member).InMaintenance() {
		t.Fatal("the maintenance Lease was taken over before it was stale")
	}
	later := *eng
	later.Now = func() time.Time { return time.Now().Add(engine.ReconcilerLeaseTTL + time.Minute) }
	if _, err := later.Reconcile(ctx, "half"); err != nil {
		t.Fatal(err)
	}
	waitReady(t, env, eng, "half", 1)
	v = observe(t, eng, "half")
	m = v.Member(res.Member)
	if m.Lease != nil || !m.Free || m.PVC.UID == old.UID {
		t.Fatalf("not rebuilt: lease %v free %v same PVC %v", m.Lease != nil, m.Free, m.PVC.UID == old.UID)
	}
}

// The pool ConfigMap is written with a compare-and-swap patch: a write based
// on an old read is refused by the API server.
func TestIntegrationDefinitionCompareAndSwap(t *testing.T) {
	env := kubetest.Require(t)
	ctx := context.Background()
	eng := pooltest.Engine(env)
	if _, err := eng.Apply(ctx, "cas", pooltest.SmallSpec(pooltest.Image, 0)); err != nil {
		t.Fatal(err)
	}
	c := kube.NewCluster(env.Client, env.Namespace)
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(ctx, engine.ConfigMapName("cas"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PatchConfigMap(ctx, cm.Name, cm.ResourceVersion, nil, map[string]string{"note": "a"}); err != nil {
		t.Fatal(err)
	}
	err = c.PatchConfigMap(ctx, cm.Name, cm.ResourceVersion, nil, map[string]string{"note": "b"})
	if !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("a patch on an old resourceVersion = %v, want a conflict", err)
	}
	now, _ := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
	if now.Data["note"] != "a" {
		t.Fatalf("note = %q", now.Data["note"])
	}
	keys := make([]string, 0, len(now.Data))
	for k := range now.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "note,spec,status" && strings.Join(keys, ",") != "note,spec" {
		t.Fatalf("data keys %v: the patch must keep the others", keys)
	}
}
