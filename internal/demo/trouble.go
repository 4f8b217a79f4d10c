package demo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// shrink is a resize down that the simulated administrator undoes later.
type shrink struct {
	pool     string
	from, to int
}

// Trouble timing at Speed 1 (after the first occurrence, set in New).
const (
	faultMin  = 18 * time.Second // a crash or an armed pull failure
	faultMax  = 32 * time.Second
	driftMin  = 60 * time.Second // desk gets a new image tag
	driftMax  = 90 * time.Second
	expireMin = 45 * time.Second // a claim is left to expire
	expireMax = 75 * time.Second
	maintMin  = 90 * time.Second // a reconciler "dies" mid-step
	maintMax  = 150 * time.Second
	shrinkMin = 35 * time.Second // how long a pool stays shrunk
	shrinkMax = 60 * time.Second
	resizeMin = 70 * time.Second // between two shrinks
	resizeMax = 110 * time.Second
	retryMin  = 3 * time.Second // when there was nothing to act on
	retryMax  = 6 * time.Second
)

// makeTrouble is what keeps an on-call admin busy: crashing desktops, a bad
// registry, image updates, abandoned claims, a reconciler that stops
// mid-step and resizes.
func (s *Sim) makeTrouble(ctx context.Context, pods []corev1.Pod) {
	if s.due(s.faultAt) {
		s.fault(ctx, pods)
	}
	if s.due(s.expireAt) {
		s.expireAt = s.after(expireMin, expireMax)
		if !s.walkAway(ctx) {
			s.expireAt = s.after(retryMin, retryMax)
		}
	}
	if s.due(s.driftAt) {
		s.driftAt = s.after(driftMin, driftMax)
		if !s.drift(ctx, "desk", s.driftWaits >= 5) {
			s.driftWaits++
			s.driftAt = s.after(retryMin, retryMax)
		} else {
			s.driftWaits = 0
		}
	}
	if s.due(s.maintAt) {
		s.maintAt = s.after(maintMin, maintMax)
		if !s.strandLease(ctx) {
			s.maintAt = s.after(retryMin, retryMax)
		}
	}
	if s.due(s.resizeAt) {
		s.resize(ctx)
	}
}

// fault alternates between arming a pull failure for the next image pull
// (the first one with hostile text; the first drift makes the pulls) and
// crashing a ready, unclaimed desktop.
func (s *Sim) fault(ctx context.Context, pods []corev1.Pod) {
	if s.faultTurn%2 == 0 {
		if s.pullFault == pullOK {
			s.pullFault = pullNotFound
			if s.pullFaults == 0 || s.rng.IntN(2) == 0 {
				s.pullFault = pullHostile
			}
			s.pullFaults++
		}
		s.faultTurn++
		s.faultAt = s.after(faultMin, faultMax)
		return
	}
	leases, err := s.client.CoordinationV1().Leases(s.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		s.note("list leases", err)
		return
	}
	held := map[string]bool{}
	for _, l := range leases.Items {
		if m, ok := engine.MemberFromLeaseName(l.Name); ok {
			held[m] = true
		}
	}
	var cands []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		ps := s.pods[p.UID]
		_, member := memberOf(p.Labels)
		if ps != nil && ps.stage == stageReady && member != "" && !held[member] && s.nodes[p.Spec.NodeName] != nil {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		s.faultAt = s.after(retryMin, retryMax)
		return
	}
	p := cands[s.rng.IntN(len(cands))]
	ps := s.pods[p.UID]
	ps.crashMsg = "desktop session exited: display server lost (exit status 1)"
	if s.crashes == 0 {
		// A container's termination message is whatever the program wrote.
		ps.crashMsg = "panic: session broker unreachable\n\x1b[2J\x1b[H\x1b[5mgoroutine 1 [running]\x1b[0m (demo: terminal escapes on purpose)"
	}
	s.crash(ctx, p, ps, s.nodes[p.Spec.NodeName])
	if ps.stage != stageCrashLoop {
		s.faultAt = s.after(retryMin, retryMax) // lost a race; try again
		return
	}
	s.crashes++
	s.faultTurn++
	s.faultAt = s.after(faultMin, faultMax)
}

// drift applies a new image tag to a pool, as a release of the desktop image
// would: unclaimed members are replaced, claimed ones keep the drift marker.
// Unless anyway, it waits (returns false) while no member is claimed, since
// only a claimed member shows the marker for long.
func (s *Sim) drift(ctx context.Context, pool string, anyway bool) bool {
	view, ok := s.view(ctx, pool)
	if !ok {
		return true // gone or broken: nothing to update
	}
	if view.Status.Claimed == 0 && !anyway {
		return false
	}
	spec := view.Spec
	img, ok := nextTag(spec.Image)
	if !ok {
		return true // someone set an image without a numeric tag
	}
	spec.Image = img
	_, err := s.eng.Apply(ctx, pool, spec)
	s.note("apply "+pool, err)
	return true
}

// nextTag turns repo:N into repo:N+1.
func nextTag(img string) (string, bool) {
	i := strings.LastIndex(img, ":")
	if i < 0 || i < strings.LastIndex(img, "/") {
		return "", false
	}
	n, err := strconv.Atoi(img[i+1:])
	if err != nil {
		return "", false
	}
	return img[:i+1] + strconv.Itoa(n+1), true
}

// strandLease plays a reconciler that stopped in the middle of replacing a
// member: it took the member's Lease and deleted the Pod, then died. The
// member shows as Stopped under maintenance until the Lease goes stale
// (10 minutes; demo shortcut: the Lease is written as taken almost that long
// ago) and the next reconcile takes it over and starts the member.
func (s *Sim) strandLease(ctx context.Context, pools ...string) bool {
	if len(pools) == 0 {
		var err error
		if pools, err = s.pools(ctx); err != nil {
			s.note("list pools", err)
			return false
		}
	}
	type cand struct {
		pool string
		pod  *corev1.Pod
	}
	var cands []cand
	for _, pool := range pools {
		snap, err := s.eng.Cluster.Snapshot(ctx, pool)
		if err != nil {
			s.note("read "+pool, err)
			continue
		}
		view := engine.Observe(snap, s.now)
		for i := range view.Members {
			m := &view.Members[i]
			if m.Free && m.State == engine.StateReady && m.Pod != nil {
				cands = append(cands, cand{pool, m.Pod})
			}
		}
	}
	if len(cands) == 0 {
		return false
	}
	c := cands[s.rng.IntN(len(cands))]
	_, member := memberOf(c.pod.Labels)
	if member == "" {
		member = c.pod.Name
	}
	taken := s.now.Add(-(engine.ReconcilerLeaseTTL - s.scale(s.between(15*time.Second, 25*time.Second))))
	lease := engine.ReconcilerLease(s.opts.Namespace, c.pool, member, taken)
	if _, err := s.client.CoordinationV1().Leases(s.opts.Namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			s.note("take lease of "+member, err)
		}
		return false
	}
	uid := c.pod.UID
	err := s.client.CoreV1().Pods(s.opts.Namespace).Delete(ctx, c.pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	s.note("delete pod "+c.pod.Name, err)
	return true
}

// resize shrinks a pool below its highest claimed member, so that member is
// claimed above the size, and restores the size later (unless someone else
// changed it meanwhile).
func (s *Sim) resize(ctx context.Context) {
	if sh := s.shrink; sh != nil {
		s.shrink = nil
		s.resizeAt = s.after(resizeMin, resizeMax)
		if view, ok := s.view(ctx, sh.pool); ok && view.Size == sh.to {
			_, err := s.eng.Resize(ctx, sh.pool, sh.from)
			s.note(fmt.Sprintf("resize %s to %d", sh.pool, sh.from), err)
		}
		return
	}
	pools, err := s.pools(ctx)
	if err != nil {
		s.note("list pools", err)
		return
	}
	for _, pool := range pools {
		view, ok := s.view(ctx, pool)
		if !ok || view.Spec.Elastic() {
			continue // an elastic pool moves its own size
		}
		size, high := view.Size, 0
		for i := range view.Members {
			m := &view.Members[i]
			if m.Claimed && m.Index <= size {
				high = max(high, m.Index)
			}
		}
		if high < 3 || size-(high-1) > 3 {
			continue // no claimed member to leave above the size, or too many to delete
		}
		if _, err := s.eng.Resize(ctx, pool, high-1); err != nil {
			s.note(fmt.Sprintf("resize %s to %d", pool, high-1), err)
			continue
		}
		s.shrink = &shrink{pool: pool, from: size, to: high - 1}
		s.resizeAt = s.after(shrinkMin, shrinkMax)
		return
	}
	s.resizeAt = s.after(retryMin, retryMax)
}

// view observes a pool with a valid definition.
func (s *Sim) view(ctx context.Context, pool string) (engine.PoolView, bool) {
	snap, err := s.eng.Cluster.Snapshot(ctx, pool)
	if err != nil {
		s.note("read "+pool, err)
		return engine.PoolView{}, false
	}
	v := engine.Observe(snap, s.now)
	return v, v.Defined && v.SpecError == nil
}
