//go:build integration

package kube_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/kube/kubetest"
)

// leaseState is a Lease's holder from one resourceVersion on ("" = no Lease).
type leaseState struct {
	rv     int64
	holder string
}

// deletion is the moment a member's Pod or PVC got its deletionTimestamp.
type deletion struct {
	rv     int64
	kind   string
	member string
}

// recorder keeps what the watches saw, ordered by resourceVersion (one etcd:
// resourceVersions of all kinds share one sequence).
type recorder struct {
	mu        sync.Mutex
	leases    map[string][]leaseState // member -> history
	deletions []deletion
	seenDel   map[string]bool
}

func rvOf(m metav1.Object) int64 {
	n, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	return n
}

func (r *recorder) watchAll(ctx context.Context, t *testing.T, env *kubetest.Env, rv string) {
	opts := metav1.ListOptions{LabelSelector: kube.PoolSelector("chaos"), ResourceVersion: rv}
	lw, err := env.Client.CoordinationV1().Leases(env.Namespace).Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := env.Client.CoreV1().Pods(env.Namespace).Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	cw, err := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []watch.Interface{lw, pw, cw} {
		go func(w watch.Interface) {
			defer w.Stop()
			for ev := range w.ResultChan() {
				r.record(ev)
			}
		}(w)
	}
}

func (r *recorder) record(ev watch.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch o := ev.Object.(type) {
	case *coordinationv1.Lease:
		member, _ := engine.MemberFromLeaseName(o.Name)
		h := ""
		if ev.Type != watch.Deleted && o.Spec.HolderIdentity != nil {
			h = *o.Spec.HolderIdentity
		}
		r.leases[member] = append(r.leases[member], leaseState{rvOf(o), h})
	case *corev1.Pod:
		r.noteDeletion(ev, o, "Pod", o.Labels[engine.LabelMember])
	case *corev1.PersistentVolumeClaim:
		r.noteDeletion(ev, o, "PVC", o.Labels[engine.LabelMember])
	}
}

func (r *recorder) noteDeletion(ev watch.Event, o metav1.Object, kind, member string) {
	key := kind + "/" + string(o.GetUID())
	if r.seenDel[key] || (ev.Type != watch.Deleted && o.GetDeletionTimestamp() == nil) {
		return
	}
	r.seenDel[key] = true
	r.deletions = append(r.deletions, deletion{rvOf(o), kind, member})
}

// holderAt is the member's Lease holder just before rv.
func (r *recorder) holderAt(member string, rv int64) string {
	h := ""
	for _, s := range r.leases[member] {
		if s.rv >= rv {
			break
		}
		h = s.holder
	}
	return h
}

// A randomized run of reconcile, claim, release, force-release and resize
// from several goroutines against one pool. Throughout, no claimed member's
// Pod or PVC is deleted unless its Lease had passed to the reconciler (as a
// release does), a claim never passes from one user straight to another, no
// reconciler Lease is left behind, and one more reconcile converges.
func TestIntegrationRandomizedConcurrency(t *testing.T) {
	env := kubetest.Require(t)
	eng := newEngine(env)
	eng.Authorize = nil
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	applyReady(t, env, eng, "chaos", smallSpec(testImage, 4))
	start, err := env.Client.CoordinationV1().Leases(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{leases: map[string][]leaseState{}, seenDel: map[string]bool{}}
	rec.watchAll(ctx, t, env, start.ResourceVersion)

	const workers, opsEach = 4, 20
	ids := []string{"ann@example.com", "ben@example.com", "cat@example.com", "dan@example.com", "eve@example.com"}
	type tally struct{ ok, failed int }
	var mu sync.Mutex
	counts := map[string]*tally{}
	count := func(op string, err error) {
		mu.Lock()
		defer mu.Unlock()
		c := counts[op]
		if c == nil {
			c = &tally{}
			counts[op] = c
		}
		if err != nil {
			c.failed++
		} else {
			c.ok++
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			for i := 0; i < opsEach; i++ {
				octx, ocancel := context.WithTimeout(ctx, 3*time.Minute)
				member := fmt.Sprintf("chaos-%d", 1+rng.IntN(5))
				switch rng.IntN(5) {
				case 0:
					_, err := eng.Reconcile(octx, "chaos")
					count("reconcile", err)
				case 1:
					_, err := eng.Claim(octx, "chaos", ids[rng.IntN(len(ids))])
					count("claim", err)
				case 2:
					holder := ""
					if snap, err := eng.Cluster.Snapshot(octx, "chaos"); err == nil {
						v := engine.Observe(snap, time.Now())
						if m := v.Member(member); m != nil {
							holder = m.Holder()
						}
					}
					if holder == "" {
						holder = ids[rng.IntN(len(ids))]
					}
					_, err := eng.Release(octx, "chaos", member, holder, false)
					count("release", err)
				case 3:
					_, err := eng.Release(octx, "chaos", member, "", true)
					count("force-release", err)
				case 4:
					_, err := eng.Resize(octx, "chaos", 2+rng.IntN(4))
					count("resize", err)
				}
				ocancel()
			}
		}(uint64(w + 1))
	}
	wg.Wait()

	// No reconciler Lease is left behind.
	leases, err := env.Client.CoordinationV1().Leases(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == engine.ReconcilerIdentity {
			t.Errorf("reconciler Lease %s left behind", l.Name)
		}
	}
	// One more reconcile converges to exactly size members.
	if _, err := eng.Reconcile(ctx, "chaos"); err != nil {
		t.Fatalf("final reconcile: %v", err)
	}
	snap, err := eng.Cluster.Snapshot(ctx, "chaos")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := engine.ParseSpec(snap.ConfigMap.Data[engine.KeySpec])
	if err != nil {
		t.Fatal(err)
	}
	v := engine.Observe(snap, time.Now())
	claimedAbove := 0
	for _, m := range v.Members {
		if m.AboveSize && m.Claimed {
			claimedAbove++
		}
	}
	env.WaitFor(t, 90*time.Second, "the pool to converge", func() (bool, error) {
		if _, err := eng.Reconcile(ctx, "chaos"); err != nil && !errors.As(err, new(*engine.StepError)) {
			return false, err
		}
		s, err := eng.Cluster.Snapshot(ctx, "chaos")
		if err != nil {
			return false, nil
		}
		v = engine.Observe(s, time.Now())
		inSize := 0
		for _, m := range v.Members {
			if !m.AboveSize && m.State == engine.StateReady {
				inSize++
			}
		}
		return inSize == spec.Size, nil
	})
	cancel()

	rec.mu.Lock()
	defer rec.mu.Unlock()
	sort.Slice(rec.deletions, func(i, j int) bool { return rec.deletions[i].rv < rec.deletions[j].rv })
	for _, d := range rec.deletions {
		if h := rec.holderAt(d.member, d.rv); h != engine.ReconcilerIdentity {
			t.Errorf("%s of %s deleted at rv %d while its Lease holder was %q (want the reconciler)", d.kind, d.member, d.rv, h)
		}
	}
	transitions := 0
	for member, hist := range rec.leases {
		prev := ""
		for _, s := range hist {
			if prev != "" && s.holder != "" && prev != s.holder && prev != engine.ReconcilerIdentity && s.holder != engine.ReconcilerIdentity {
				t.Errorf("%s passed from %q straight to %q at rv %d", member, prev, s.holder, s.rv)
			}
			if prev != s.holder {
				transitions++
			}
			prev = s.holder
		}
	}
	var names []string
	for op := range counts {
		names = append(names, op)
	}
	sort.Strings(names)
	for _, op := range names {
		t.Logf("%-13s %3d ok %3d failed", op, counts[op].ok, counts[op].failed)
	}
	t.Logf("%d Pod/PVC deletions checked, %d Lease holder changes checked, %d claimed members above the final size %d",
		len(rec.deletions), transitions, claimedAbove, spec.Size)
	if len(rec.deletions) == 0 {
		t.Fatal("no deletion happened: the run exercised nothing")
	}
}
