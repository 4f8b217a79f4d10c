package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A pool's days at random, on the in-memory cluster: claims, releases,
// resizes, new images (one of which never starts: rolled back before the
// pool settles, and its claimed desktops released), Pods lost (an eviction,
// a deleted Pod, a node gone), data PVCs deleted by hand, reconcilers that
// stop mid-step, time passing (claims expire) and reconciles in any order,
// with a kubelet that makes every Pod Ready (or, on the bad image, failing)
// between them. Once the traffic ends, reconciles settle the pool (until one
// writes nothing), and then:
//   - every member 1..size exists and is Ready;
//   - every claim never released still holds its member, on the data PVC it
//     was claimed with, and that member runs, above the size too;
//   - nothing else is claimed or held, and no unclaimed member is drifted or
//     above the size;
//   - NeedsWork says it needs none, and another reconcile writes nothing.
//
// Each seed is one pool's history; a failure names the seed (run it alone
// with -run 'TestDaysOfAPool/fixed/seed_17') and the operations.
func TestDaysOfAPool(t *testing.T) {
	const (
		ops    = 40
		settle = 30 // reconciles at most
	)
	seeds := daysSeeds(t)
	for _, kind := range []struct {
		name  string
		power string // "" for a fixed pool
	}{{"fixed", ""}, {"elastic", PowerRunning}, {"elastic stopped", PowerStopped}} {
		t.Run(kind.name, func(t *testing.T) {
			for seed := range seeds {
				t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
					t.Parallel()
					d := newDays(t, seed, kind.power)
					for range ops {
						d.step()
					}
					d.settle(settle)
					d.check()
				})
			}
		})
	}
}

// daysSeedsEnv sets how many histories of each kind of pool TestDaysOfAPool
// runs: daysSeedsDefault in `make test` (a few seconds under -race), more
// from `make test-days`.
const (
	daysSeedsEnv     = "CTPOOL_DAYS_SEEDS"
	daysSeedsDefault = 40
)

func daysSeeds(t *testing.T) uint64 {
	s := os.Getenv(daysSeedsEnv)
	if s == "" {
		return daysSeedsDefault
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 0 {
		t.Fatalf("%s=%q: want a positive count", daysSeedsEnv, s)
	}
	return n
}

// days is one pool's history on a fake cluster.
type days struct {
	t   *testing.T
	ctx context.Context
	e   *Engine
	f   *fakeCluster
	rng *rand.Rand

	size  int
	image int
	// power is an elastic pool's power policy ("" for a fixed pool): at
	// spare 1 within [1, 6], settling at once.
	power string
	// held: the claims made and not released, by member; data: the UID of
	// each claimed member's PVC when its claim was made.
	held map[string]string
	data map[string]types.UID
	log  []string
	// now is the engine's clock: it moves only when an operation says
	// time passed.
	now time.Time
}

var daysIdentities = []string{"ann@example.com", "ben@example.com", "cat@example.com", "dan@example.com", "eve@example.com"}

func newDays(t *testing.T, seed uint64, power string) *days {
	e, f := newEngine()
	d := &days{t: t, ctx: context.Background(), e: e, f: f, rng: rand.New(rand.NewPCG(seed, 1)),
		size: 3, image: 1, power: power, held: map[string]string{}, data: map[string]types.UID{}, now: testNow}
	e.Now = func() time.Time { return d.now }
	if _, err := e.Apply(d.ctx, "desk", d.spec()); err != nil {
		t.Fatal(err)
	}
	d.kubelet()
	return d
}

func (d *days) spec() Spec {
	s := baseSpec(d.size)
	if d.power != "" {
		s = elasticSpec(d.size, 1, 6, 1)
		s.Power, s.Settle = d.power, "0s"
	}
	s.Image = fmt.Sprintf("ghcr.io/example/desktop:%d", d.image)
	return s
}

// fail ends the test with the history so far.
func (d *days) fail(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("%s\nhistory:\n  %s", fmt.Sprintf(format, args...), strings.Join(d.log, "\n  "))
}

func (d *days) view() PoolView {
	snap, err := d.f.Snapshot(d.ctx, "desk")
	if err != nil {
		d.fail("snapshot: %v", err)
	}
	return Observe(snap, d.e.Now())
}

// daysBadImage is the image of the histories that never starts.
const daysBadImage = 4

// kubelet makes every new Pod that is not being deleted Running and Ready,
// or, on the bad image, Pending in ImagePullBackOff.
func (d *days) kubelet() {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	bad := fmt.Sprintf(":%d", daysBadImage)
	for _, p := range d.f.pods {
		if p.DeletionTimestamp != nil || p.Status.Phase != "" {
			continue
		}
		if strings.HasSuffix(p.Spec.Containers[0].Image, bad) {
			p.Status.Phase = corev1.PodPending
			for _, c := range p.Spec.Containers {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name,
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not found"}}})
			}
		} else {
			readyPod(p)
		}
		p.ResourceVersion = d.f.nextRV()
	}
	d.f.notify()
}

// step runs one random operation, then the kubelet.
func (d *days) step() {
	defer d.kubelet()
	switch n := d.rng.IntN(15); {
	case n < 3:
		who := daysIdentities[d.rng.IntN(len(daysIdentities))]
		res, err := d.e.Claim(d.ctx, "desk", who)
		d.log = append(d.log, fmt.Sprintf("claim %s: %s %v", who, res.Member, err))
		if err != nil {
			return
		}
		if h := d.held[res.Member]; h != "" && h != who {
			d.fail("claim by %s got %s, held by %s", who, res.Member, h)
		}
		for m, h := range d.held {
			if h == who && m != res.Member {
				d.fail("%s claimed %s while holding %s", who, res.Member, m)
			}
		}
		d.held[res.Member] = who
		if c := d.f.pvc(PVCName(res.Member)); c != nil && d.data[res.Member] == "" {
			d.data[res.Member] = c.UID
		}
	case n < 5:
		members := sortedKeys(d.held)
		if len(members) == 0 {
			return
		}
		m := members[d.rng.IntN(len(members))]
		_, err := d.e.Release(d.ctx, "desk", m, d.held[m])
		d.log = append(d.log, fmt.Sprintf("release %s by %s: %v", m, d.held[m], err))
		if err == nil {
			delete(d.held, m)
			delete(d.data, m)
		}
	case n < 7:
		d.size = 1 + d.rng.IntN(5)
		_, err := d.e.Resize(d.ctx, "desk", d.size)
		d.log = append(d.log, fmt.Sprintf("resize %d: %v", d.size, err))
	case n < 8:
		d.image = 1 + d.rng.IntN(daysBadImage)
		_, err := d.e.Apply(d.ctx, "desk", d.spec())
		d.log = append(d.log, fmt.Sprintf("apply image %d: %v", d.image, err))
	case n < 10:
		d.f.mu.Lock()
		names := sortedKeys(d.f.pods)
		var name string
		if len(names) > 0 {
			name = names[d.rng.IntN(len(names))]
			delete(d.f.pods, name)
			d.f.notify()
		}
		d.f.mu.Unlock()
		d.log = append(d.log, "Pod lost: "+name)
	case n < 12:
		_, err := d.e.Reconcile(d.ctx, "desk")
		d.log = append(d.log, fmt.Sprintf("reconcile: %v", err))
	case n < 13:
		// A reconciler stops mid-step: its Lease stays on a member nobody
		// holds, sometimes with the member's Pod already deleted.
		m := MemberName("desk", 1+d.rng.IntN(d.size+1))
		if d.f.lease(LeaseName(m)) != nil {
			return
		}
		d.f.add(newLease(testNS, "desk", m, ReconcilerIdentity, ReconcilerLeaseTTL, d.now))
		lost := d.rng.IntN(2) == 0 && d.f.pod(m) != nil
		if lost {
			d.f.mu.Lock()
			delete(d.f.pods, m)
			d.f.notify()
			d.f.mu.Unlock()
		}
		d.log = append(d.log, fmt.Sprintf("a reconciler stopped mid-step on %s (Pod deleted %t)", m, lost))
	case n < 14:
		// Someone deletes the data PVC of a member nobody holds.
		m := MemberName("desk", 1+d.rng.IntN(d.size))
		if d.held[m] != "" || d.f.pvc(PVCName(m)) == nil {
			return
		}
		d.f.mu.Lock()
		delete(d.f.pvcs, PVCName(m))
		d.f.notify()
		d.f.mu.Unlock()
		d.log = append(d.log, "PVC deleted by hand: "+PVCName(m))
	default:
		// Time passes: claims expire (and stay claims), an elastic
		// pool's settle time and a reconciler's Lease run out.
		dt := time.Duration(1+d.rng.IntN(90)) * time.Minute
		d.now = d.now.Add(dt)
		d.log = append(d.log, fmt.Sprintf("%s pass", dt))
	}
}

// settle reconciles until a reconcile writes nothing and every member is
// at rest, at most rounds times.
func (d *days) settle(rounds int) {
	d.log = append(d.log, "-- settling")
	// The Leases of reconcilers that stopped mid-step go stale.
	d.now = d.now.Add(ReconcilerLeaseTTL + time.Minute)
	// The administrator rolls a bad image back (an apply of a good one),
	// and the users of desktops that never started release them.
	if d.image == daysBadImage {
		d.image = 1 + d.rng.IntN(daysBadImage-1)
		_, err := d.e.Apply(d.ctx, "desk", d.spec())
		d.log = append(d.log, fmt.Sprintf("apply image %d (a rollback): %v", d.image, err))
		if err != nil {
			d.fail("the rollback failed: %v", err)
		}
	}
	bad := fmt.Sprintf(":%d", daysBadImage)
	for _, m := range sortedKeys(d.held) {
		if p := d.f.pod(m); p != nil && strings.HasSuffix(p.Spec.Containers[0].Image, bad) || p == nil && d.recordsBad(m) {
			_, err := d.e.Release(d.ctx, "desk", m, d.held[m])
			d.log = append(d.log, fmt.Sprintf("release %s (never started) by %s: %v", m, d.held[m], err))
			if err != nil {
				d.fail("the release of a broken desktop failed: %v", err)
			}
			delete(d.held, m)
			delete(d.data, m)
		}
	}
	for range rounds {
		// The kubelet first: a reconcile that writes nothing has then seen
		// the Pods as they stay.
		d.kubelet()
		d.f.reset()
		res, err := d.e.Reconcile(d.ctx, "desk")
		wrote := len(d.f.writes()) > 0
		d.log = append(d.log, fmt.Sprintf("reconcile: %v, wrote %v; %s", err, d.f.writes(), actionsLine(res.Actions)))
		v := d.view()
		if err == nil && !wrote && !slices.ContainsFunc(v.Members, func(m Member) bool { return !d.atRest(&m) }) {
			return
		}
	}
	v := d.view()
	var states []string
	for _, m := range v.Members {
		states = append(states, fmt.Sprintf("%s %s holder %q drift %t above %t problems %v", m.Name, m.State, m.Holder(), m.Drift, m.AboveSize, m.Problems))
	}
	d.fail("not settled after %d reconciles: %s", rounds, strings.Join(states, "; "))
}

// recordsBad reports whether member m's data PVC records the bad image (a
// claimed member without a Pod is started on it).
func (d *days) recordsBad(m string) bool {
	c := d.f.pvc(PVCName(m))
	return c != nil && strings.Contains(c.Annotations[AnnotationSource], fmt.Sprintf(":%d", daysBadImage))
}

// atRest reports whether m's state is where a settled pool leaves it:
// Ready, or Stopped when an elastic pool's power policy stops its free
// members.
func (d *days) atRest(m *Member) bool {
	return m.State == StateReady || (d.power == PowerStopped && !m.Claimed && m.State == StateStopped)
}

// check asserts the settled pool (TestDaysOfAPool).
func (d *days) check() {
	d.t.Helper()
	v := d.view()
	size := d.size
	if d.power != "" {
		size = v.Size // the elastic pool's effective size
		if size < 1 || size > 6 {
			d.fail("the elastic pool's size %d is out of [1, 6]", size)
		}
	}
	for n := 1; n <= size; n++ {
		if m := v.Member(MemberName("desk", n)); m == nil || !d.atRest(m) {
			d.fail("member %d of %d is not at rest: %+v", n, size, m)
		}
	}
	for i := range v.Members {
		m := &v.Members[i]
		holder := d.held[m.Name]
		switch {
		case m.Holder() != holder:
			d.fail("%s is held by %q, want %q", m.Name, m.Holder(), holder)
		case m.Hold != nil:
			d.fail("%s keeps a Lease that is no claim: %+v", m.Name, m.Hold)
		case holder != "" && (m.PVC == nil || m.PVC.UID != d.data[m.Name]):
			d.fail("%s, claimed by %s, lost the data it was claimed with", m.Name, holder)
		case holder != "" && m.State != StateReady:
			d.fail("%s, claimed by %s, is %s", m.Name, holder, m.State)
		case holder == "" && (m.AboveSize || m.Drift):
			d.fail("%s is unclaimed and above the size (%t) or drifted (%t)", m.Name, m.AboveSize, m.Drift)
		}
	}
	for m := range d.held {
		if v.Member(m) == nil {
			d.fail("%s, claimed by %s, is gone", m, d.held[m])
		}
	}
	// Settled, the pool stays: the next reconcile writes nothing either
	// (NeedsWork agrees).
	if NeedsWork(v) {
		d.fail("NeedsWork says the settled pool needs work")
	}
	d.f.reset()
	if _, err := d.e.Reconcile(d.ctx, "desk"); err != nil {
		d.fail("reconcile of the settled pool: %v", err)
	}
	if w := d.f.writes(); len(w) != 0 {
		d.fail("a reconcile of the settled pool wrote %v", w)
	}
}

// actionsLine is a reconcile's actions in one line, for the history.
func actionsLine(acts []MemberAction) string {
	var parts []string
	for _, a := range acts {
		p := a.Step.String() + " " + a.Member
		switch {
		case a.Err != nil:
			p += " failed: " + a.Err.Error()
		case a.Skipped != "":
			p += " skipped: " + a.Skipped
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}
