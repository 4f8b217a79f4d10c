//go:build integration

package systest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Two actors of the randomized run that reach the pool from outside the
// engine's own claims:
//
// A broker in front of the pool (the seed's #227) claims by the contract's
// name alone: it creates Lease corral-vdi-ct-<member> with holderIdentity,
// acquireTime, renewTime and leaseDurationSeconds 3600, and no label; the
// first writer wins. The contract gives a broker no release of its own, and
// deleting its Lease would hand the next user a desktop with the last one's
// data, so a broker ends a session through the engine's Release with its
// identity, as it would call `release`. The one exception is a claim whose
// desktop was never handed to anyone (the broker's own session setup failed
// right after the win): that Lease is given back by deleting it, with the
// UID and resourceVersion the broker wrote, as the engine gives back a
// duplicate claim. A member a broker holds is never handed to another
// identity, never destroyed, never started for someone else, and the engine
// shows it claimed by the broker.
//
// An administrator applies a new image (and now and then a new disk size) to
// the pool while claims are held. A claimed member's Pod is never replaced,
// nor started again from the new source, while it is claimed: a claimed
// member restarted (its Pod lost) comes back from the source its claim
// started with, and stays drift until released. Unclaimed members converge to
// the new source.

// chaosBrokers are the identities the broker claims for; none of the engine's
// actors uses them.
var chaosBrokers = []string{"eve@broker.example", "fay@broker.example"}

func isBroker(identity string) bool { return strings.HasSuffix(identity, "@broker.example") }

// brokerClaim is a claim a broker won and has not ended.
type brokerClaim struct {
	member, identity string
	lease            types.UID
	pvc, pod         types.UID
	batch            int
	// vanished: the test deleted the member's Pod (or data) since; the
	// vanished checks follow it, and its objects may be new ones.
	vanished bool
	// reported: the checks already reported for this claim (each once).
	reported map[string]bool
}

// haltedMember is an old member unclaimed when a rollout halted: its data
// PVC and the releases that had ended its claims by then.
type haltedMember struct {
	pvc      types.UID
	releases int
}

// chaosActors is the state of the broker and the administrator (h.mu held).
type chaosActors struct {
	brokerHeld map[string]*brokerClaim // by member
	brokerBusy map[string]bool         // broker identities in an operation
	// driftSince: when a batch end first found an unclaimed member drifted
	// (of the batch ends in a row that did), on the wall clock.
	driftSince map[string]time.Time
	generation int // the administrator's applies so far
	// halts: the rollout halts seen, by their stamp, with the old members
	// unclaimed at the first sighting (h.mu held).
	halts map[string]map[string]haltedMember
}

func (a *chaosActors) init() {
	a.brokerHeld, a.brokerBusy, a.driftSince, a.halts = map[string]*brokerClaim{}, map[string]bool{}, map[string]time.Time{}, map[string]map[string]haltedMember{}
}

// askRelease records, before a release (or a give-back) of member is sent,
// that it may end a broker's claim (h.mu held).
func (h *chaosHarness) askReleaseLocked(member string) bool {
	if h.actors.brokerHeld[member] == nil {
		return false
	}
	h.replay.releaseAsked[member]++
	return true
}

// releaseAnswered takes back an ask whose release did not touch the claim
// (refused, or nothing to do), and forgets the broker's claim when the
// release ended it.
func (h *chaosHarness) releaseAnswered(member string, asked bool, res engine.ReleaseResult, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	untouched := res.NoOp || errors.Is(err, engine.ErrConflict) || errors.Is(err, engine.ErrNotFound) ||
		errors.Is(err, engine.ErrMaintenance) || errors.Is(err, engine.ErrNotHolder)
	if asked && untouched && h.replay.releaseAsked[member] > 0 {
		h.replay.releaseAsked[member]--
	}
	if !untouched {
		// Done, or failed after it took the claim (the member is in
		// maintenance then, followed as a failed release): the claim ended,
		// whoever asked (a user, a failing release, a broker, the final
		// force-release), so a vanished member's holder claiming it again
		// is a new claim, not the old one kept.
		delete(h.actors.brokerHeld, member)
		h.releases[member]++
	}
}

// checkClaimResult: a claim by another identity is never answered with a
// member a broker holds.
func (h *chaosHarness) checkClaimResult(ctx context.Context, identity string, res engine.ClaimResult) {
	if res.Member == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.actors.brokerHeld[res.Member]; b != nil && b.identity != identity {
		h.violateLocked("claim by %q was answered with %s (started %v), which %q holds by its Lease (no labels)%s", identity, res.Member, res.Started, b.identity, h.explain(ctx, res.Member))
	}
}

// brokerOp is one step of a broker identity: a release of the member it
// holds, or a claim (given back now and then before it is used).
func (h *chaosHarness) brokerOp(ctx context.Context, rng *rand.Rand) {
	id := chaosBrokers[rng.IntN(len(chaosBrokers))]
	h.mu.Lock()
	if h.actors.brokerBusy[id] {
		h.mu.Unlock()
		h.count("broker: busy", nil)
		return
	}
	h.actors.brokerBusy[id] = true
	var held *brokerClaim
	for _, b := range h.actors.brokerHeld {
		if b.identity == id {
			held = b
		}
	}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.actors.brokerBusy, id)
		h.mu.Unlock()
	}()
	if held != nil {
		h.brokerRelease(ctx, held)
		return
	}
	h.brokerClaim(ctx, rng, id)
}

// brokerRelease ends the broker's session on b.member through the engine.
func (h *chaosHarness) brokerRelease(ctx context.Context, b *brokerClaim) {
	if !h.lock(b.member) {
		h.count("broker release: member busy", nil)
		return
	}
	defer h.unlock(b.member)
	h.mu.Lock()
	asked := h.askReleaseLocked(b.member)
	h.mu.Unlock()
	res, err := h.broker.Release(ctx, chaosPool, b.member, b.identity)
	h.releaseAnswered(b.member, asked, res, err)
	switch {
	case err == nil && res.NoOp:
		// The broker's Lease is there (the batch end checks it): the
		// engine did not see the claim its holder ends.
		h.mu.Lock()
		if !b.reported["release"] {
			b.reported["release"] = true
			h.violateLocked("release of %s by %q, which holds its Lease by name, did nothing (the engine found no claim)%s", b.member, b.identity, h.explain(ctx, b.member))
		}
		h.mu.Unlock()
		h.count("broker release: no claim seen", nil)
	default:
		h.count("broker release", err)
	}
}

// brokerClaim claims a free member for id by creating its Lease by name, as
// the contract has it: a Ready member of the current source with no Lease
// (the broker reads the pool as anyone may), first writer wins.
func (h *chaosHarness) brokerClaim(ctx context.Context, rng *rand.Rand, id string) {
	v, err := h.view(ctx)
	if err != nil {
		h.count("broker claim: read", err)
		return
	}
	var cands []*engine.Member
	for i := range v.Members {
		m := &v.Members[i]
		if m.Lease == nil && m.State == engine.StateReady && !m.AboveSize && !m.Drift && m.PVC != nil && m.PVC.DeletionTimestamp == nil {
			cands = append(cands, m)
		}
	}
	rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	leases := h.brokerClient.CoordinationV1().Leases(h.env.Namespace)
	for _, m := range cands {
		// The member is locked while its Lease is created and the claim
		// recorded: a release an actor sends meanwhile (a force-release
		// that reads the pool after this create) is then asked after the
		// claim is known, and counted as asked of it.
		if !h.lock(m.Name) {
			continue
		}
		now := metav1.NewMicroTime(h.clk.Now())
		l, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: engine.LeaseName(m.Name), Namespace: h.env.Namespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(id), AcquireTime: &now, RenewTime: &now,
				LeaseDurationSeconds: ptr.To(int32(engine.ClaimDuration / time.Second)),
			},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			h.unlock(m.Name)
			h.count("broker claim: lost the race for a member", nil)
			continue
		}
		if err != nil {
			h.unlock(m.Name)
			h.count("broker claim", err)
			return
		}
		b := &brokerClaim{member: m.Name, identity: id, lease: l.UID, pvc: m.PVC.UID, batch: h.batchNo(), reported: map[string]bool{}}
		if m.Pod != nil {
			b.pod = m.Pod.UID
		}
		h.mu.Lock()
		h.actors.brokerHeld[m.Name] = b
		h.mu.Unlock()
		h.unlock(m.Name)
		h.count("broker claim", nil)
		if rng.IntN(5) == 0 {
			h.brokerGiveBack(ctx, b, l)
		}
		return
	}
	h.count("broker claim: no free member", nil)
}

// brokerGiveBack deletes the Lease the broker just won, its desktop never
// handed to anyone: only the very Lease it wrote (UID and resourceVersion).
func (h *chaosHarness) brokerGiveBack(ctx context.Context, b *brokerClaim, l *coordinationv1.Lease) {
	h.mu.Lock()
	h.askReleaseLocked(b.member)
	h.mu.Unlock()
	err := h.brokerClient.CoordinationV1().Leases(h.env.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion},
	})
	h.mu.Lock()
	if err == nil {
		delete(h.actors.brokerHeld, b.member)
	} else if h.replay.releaseAsked[b.member] > 0 {
		h.replay.releaseAsked[b.member]--
	}
	h.mu.Unlock()
	h.count("broker give-back of an unused claim", err)
}

// checkBrokers checks, at a batch end, every claim a broker holds against
// the API server (its Lease read by name) and the engine's view (h.mu held).
func (h *chaosHarness) checkBrokers(ctx context.Context, v engine.PoolView) {
	leases := h.env.Client.CoordinationV1().Leases(h.env.Namespace)
	for name, b := range h.actors.brokerHeld {
		l, err := leases.Get(ctx, engine.LeaseName(name), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			h.violateLocked("%q's claim on %s is gone, and the broker never ended it (Lease uid %s)%s", b.identity, name, b.lease, h.explain(ctx, name))
			delete(h.actors.brokerHeld, name)
			continue
		case err != nil:
			h.t.Errorf("batch %d: read the Lease of %s: %v", h.batch, name, err)
			continue
		case l.UID != b.lease || holderOf(l) != b.identity:
			h.violateLocked("%q's claim on %s was replaced without its release: Lease uid %s holder %q (the broker's: uid %s)%s", b.identity, name, l.UID, holderOf(l), b.lease, h.explain(ctx, name))
			delete(h.actors.brokerHeld, name)
			continue
		}
		h.counts["broker claims checked at a batch end"]++
		m := v.Member(name)
		once := func(key, format string, a ...any) {
			if !b.reported[key] {
				b.reported[key] = true
				h.violateLocked(format+"%s", append(a, h.explain(ctx, name))...)
			}
		}
		if m == nil || !m.Claimed || m.Holder() != b.identity {
			state, holder, free := "absent", "", false
			if m != nil {
				state, holder, free = string(m.State), m.Holder(), m.Free
			}
			once("view", "the engine shows %s as %s (holder %q, free %v) while %q holds its Lease by name (no labels)", name, state, holder, free, b.identity)
		}
		if b.vanished || m == nil {
			continue
		}
		switch {
		case m.PVC == nil || m.PVC.UID != b.pvc:
			once("data", "the data of %s, which %q holds, was destroyed (PVC %v, was uid %s)", name, b.identity, m.PVC != nil, b.pvc)
		case m.Pod == nil || m.Pod.UID != b.pod || m.Pod.DeletionTimestamp != nil:
			once("pod", "the desktop of %s, which %q holds, was stopped or replaced (Pod %v, was uid %s)", name, b.identity, m.Pod != nil, b.pod)
		}
	}
}

// brokersEnd ends every broker session (converge: before the final
// force-releases).
func (h *chaosHarness) brokersEnd(ctx context.Context) {
	h.mu.Lock()
	var held []*brokerClaim
	for _, b := range h.actors.brokerHeld {
		held = append(held, b)
	}
	h.mu.Unlock()
	for _, b := range held {
		h.brokerRelease(ctx, b)
	}
}

// chaosBadImage is the image the plane cannot pull (testdata/cluster/kwok-stages.yaml).
const chaosBadImage = "registry.invalid/desktop:bad"

// adminApply applies a new image (one time in four one that cannot be
// pulled; and, one time in three, a new disk size) to
// the pool, as an administrator's `apply` while claims are held, and then
// deletes the Pod of one claimed member.
func (h *chaosHarness) adminApply(ctx context.Context, rng *rand.Rand) {
	// A user holds a desktop when the change comes (a claim that finds no
	// free member leaves the claims there are).
	id := chaosIdentities[rng.IntN(len(chaosIdentities))]
	if res, err := h.user.Claim(ctx, chaosPool, id); err != nil && !errors.Is(err, engine.ErrNoFreeMembers) {
		h.count("admin apply: the claim before it", err)
	} else {
		h.checkClaimResult(ctx, id, res)
	}
	h.mu.Lock()
	h.actors.generation++
	image := fmt.Sprintf("registry.example/desktop:%d", h.actors.generation+1)
	if rng.IntN(4) == 0 {
		// An image that cannot be pulled (the plane's kwok stage keeps its
		// Pods in ImagePullBackOff): the rollout halts after its first
		// wave, and the next apply rolls a good image again.
		image = chaosBadImage
	}
	h.mu.Unlock()
	newDisk := rng.IntN(3) == 0
	_, err := h.admin.ApplyEdit(ctx, chaosPool, func(stored *engine.Spec) (engine.Spec, error) {
		if stored == nil {
			return engine.Spec{}, errors.New("the pool's definition is gone")
		}
		s := *stored
		s.Image = image
		if newDisk {
			s.Disk = map[bool]string{true: "2Gi", false: "1Gi"}[s.Disk == "1Gi"]
		}
		return s, nil
	}, false)
	h.count("admin apply (new image, claims held)", err)
	if err != nil {
		return
	}
	// The node of a claimed desktop fails after the change, as in the
	// contract's example (claim, apply, delete the Pod, reconcile): the
	// reconcilers start it again, from the source its claim started with.
	m, ok := h.pick(ctx, rng, func(m *engine.Member) bool {
		return claimedWithData(m) && m.Pod != nil && m.Pod.DeletionTimestamp == nil && h.vanishedOf(m.Name) == nil
	})
	if !ok {
		h.count("admin apply: no claimed desktop to lose", nil)
		return
	}
	defer h.unlock(m.Name)
	h.vanish(ctx, m, false)
}

// checkDrift: an unclaimed member of the size, not in maintenance, converges
// to the pool's source: it fails once it has stayed drifted with no change
// of its objects for deadline (h.mu held).
//
// A rollout halted by new members that failed or were not Ready in time
// keeps the old ones, by rule: they are not drift that fails to converge,
// and the next apply starts a new rollout (h.actors.halts counts the halts
// seen).
func (h *chaosHarness) checkDrift(ctx context.Context, v engine.PoolView, now time.Time, deadline time.Duration) {
	halted := false
	if ro := v.Rollout(); ro != nil && ro.Halted != "" {
		halted = true
		stamp := ro.HaltStamp()
		if h.actors.halts[stamp] == nil {
			h.actors.halts[stamp] = map[string]haltedMember{}
			h.t.Logf("the rollout of %s halted: %s", v.Name, ro.Halted)
			for i := range v.Members {
				// Members 1 to 3 only: the resizes (3 to 6) delete and
				// build the others again, halted or not.
				if m := &v.Members[i]; m.OldSource && !m.Claimed && m.PVC != nil && m.Lease == nil && m.Index >= 1 && m.Index <= 3 {
					h.actors.halts[stamp][m.Name] = haltedMember{pvc: m.PVC.UID, releases: h.releases[m.Name]}
				}
			}
		}
		// A halted rollout never replaces another member: an old member
		// unclaimed since the halt keeps its data PVC.
		for name, hm := range h.actors.halts[stamp] {
			m := v.Member(name)
			if m == nil || m.Claimed || h.releases[name] != hm.releases || h.vanished[name] != nil || h.failed[name] != nil {
				continue
			}
			if m.PVC != nil && m.PVC.UID != hm.pvc && !m.Drift {
				h.violateLocked("%s, on the old image and unclaimed when the rollout halted (%s), was replaced while it stayed halted: PVC %s, now %s%s",
					name, ro.Halted, shortUID(hm.pvc), shortUID(m.PVC.UID), h.explain(ctx, name))
				h.actors.halts[stamp][name] = haltedMember{pvc: m.PVC.UID, releases: hm.releases} // once
			}
		}
	}
	for i := range v.Members {
		m := &v.Members[i]
		if !m.Drift || m.Lease != nil || m.AboveSize || h.failed[m.Name] != nil || h.vanished[m.Name] != nil || h.actors.brokerHeld[m.Name] != nil ||
			halted && m.OldSource {
			delete(h.actors.driftSince, m.Name)
			continue
		}
		since, ok := h.actors.driftSince[m.Name]
		if !ok {
			since = now
			h.actors.driftSince[m.Name] = since
		}
		if idle := h.idle(m.Name, since, now); idle >= deadline {
			h.violateLocked("%s, unclaimed, still has drift (source %s, the pool's %s) %s after a batch end first found it so, with no change of its objects for %s%s",
				m.Name, m.Source, v.Spec.SourceHash(), now.Sub(since).Round(time.Second), idle.Round(time.Second), h.explain(ctx, m.Name))
			h.actors.driftSince[m.Name] = now.Add(100 * 365 * 24 * time.Hour) // once
		}
	}
	for name := range h.actors.driftSince {
		if _, ok := engine.MemberIndex(v.Name, name); ok && v.Member(name) == nil {
			delete(h.actors.driftSince, name)
		}
	}
}

// rollBackBadImage: a pool left on the image that cannot be pulled cannot
// converge; the administrator rolls it back to a good one, as an apply of
// the image before, before the final convergence.
func (h *chaosHarness) rollBackBadImage(ctx context.Context) {
	h.mu.Lock()
	h.actors.generation++
	image := fmt.Sprintf("registry.example/desktop:%d", h.actors.generation+1)
	h.mu.Unlock()
	rolled := false
	_, err := h.admin.ApplyEdit(ctx, chaosPool, func(stored *engine.Spec) (engine.Spec, error) {
		if stored == nil {
			return engine.Spec{}, errors.New("the pool's definition is gone")
		}
		s := *stored
		if s.Image == chaosBadImage {
			s.Image, rolled = image, true
		}
		return s, nil
	}, false)
	if rolled || err != nil {
		h.count("admin roll back of the bad image (final)", err)
	}
}
