//go:build integration

package systest_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
)

// The randomized run's second pool is elastic (DECISIONS, "Elastic"): it
// starts at elasticStart members within [elasticMin, elasticMax], keeps
// elasticSpare free, and shrinks after elasticSettle. Its actors:
//
//   - users (elasticIdentities, none of the fixed pool's) claim, and a claim
//     that finds nothing free takes and builds the first member above the
//     size; they release, which leaves free members the reconcilers shrink
//     from the top once the settle time has passed;
//   - an administrator turns elasticity off (apply with maxSize 0, as
//     `apply --max-size=0` edits the definition) and, at its next turn, on
//     again (`apply --max-size … --size <its size>`), and resizes within the
//     bounds, half the time to the size the definition already names;
//   - a reconciler whose clock runs an hour slow (elasticSkew) reconciles it
//     beside the correct ones;
//   - another program puts an unlabelled PVC on the name of the member the
//     next growing claim would take, and removes it later.
//
// Checked at every batch end and at the end, beside what the replay checks
// for both pools (no Pod or PVC deleted but under the reconciler's Lease, so
// never a claimed member's; no identity holding two members):
//   - the effective size stays within [minSize, maxSize] and never below the
//     highest claimed member (after a reconcile at the batch end);
//   - a claim is never refused while a member was free, or an index up to
//     maxSize was unbuilt, throughout the claim (no change of that member's
//     objects, the definition or the effective size from before the claim
//     to after its answer: resourceVersions of one etcd);
//   - no claim takes a member whose name another program's object holds, and
//     that object is never deleted but by its owner;
//   - a resize sets the effective size, also to the size the definition
//     already names;
//   - turning elasticity off fixes the pool at its effective size, never
//     below it (that would delete free members above at once);
//   - no shrink comes before the settle time has passed, on the correct
//     clock, since the pool first had more free members than its spare after
//     its size last changed (elasticTrack, from the watched objects);
//   - at the end, all released and the settle time passed, free == spare
//     where the bounds allow.

const (
	elasticPool                              = "elastic"
	elasticStart, elasticMin, elasticMax     = 2, 1, 12
	elasticSpare                             = 2
	elasticSettle                            = 5 * time.Second
	elasticSkew                              = -time.Hour // the slow reconciler's clock
	shrinkTolerance                          = 2 * time.Second
	elasticRestDeadline, elasticRestInterval = 2 * time.Minute, 500 * time.Millisecond
)

// elasticIdentities claim from the elastic pool; enough of them to take it
// to its ceiling now and then (with the spare).
var elasticIdentities = []string{
	"gus@elastic.example", "hal@elastic.example", "ida@elastic.example", "jon@elastic.example",
	"kim@elastic.example", "lou@elastic.example", "meg@elastic.example", "ned@elastic.example",
	"oli@elastic.example", "pam@elastic.example",
}

func elasticSpec() engine.Spec {
	s := pooltest.SmallSpec(pooltest.Image, elasticStart)
	s.MinSize, s.MaxSize, s.Spare, s.Settle = elasticMin, elasticMax, new(elasticSpare), elasticSettle.String()
	return s
}

func isElasticMember(member string) bool {
	_, ok := engine.MemberIndex(elasticPool, member)
	return ok
}

// poolOf is the pool of one of the run's members.
func poolOf(member string) string {
	if isElasticMember(member) {
		return elasticPool
	}
	return chaosPool
}

// foreignObject is the unlabelled PVC another program put on a member's name.
type foreignObject struct {
	member  string
	uid     types.UID
	rv      int64
	created time.Time
	batch   int
	held    bool // a claim on its member was reported (once)
	touched bool // a write to it was reported (once)
}

// refusal is an elastic claim answered with "no free members": rv0 before
// it read anything, rv1 after its answer; cands are the members free, or
// the indices up to maxSize unbuilt, when the pool was read after rv0.
type refusal struct {
	identity string
	rv0, rv1 int64
	cands    map[string]string // member -> what it was
	err      string
}

// elasticActors is the state of the elastic pool's actors (h.mu held).
type elasticActors struct {
	foreign *foreignObject
	// foreignSpans: every foreign PVC's member and the resourceVersions it
	// lived between (to: math.MaxInt64 while it lives). The recorder does
	// not see it (no labels), so a refusal beside one is not judged.
	foreignSpans []foreignSpan
	refusals     []refusal
	adminBusy    bool
	relists      int // the recorder's relists when the refusals were last checked
	// released is when the final force-releases ended (converge).
	released time.Time
}

type foreignSpan struct {
	member   string
	from, to int64
}

// listRV is the current resourceVersion of the namespace's Leases: a
// consistent list of one item (0 when it fails).
func (h *chaosHarness) listRV(ctx context.Context) int64 {
	l, err := h.env.Client.CoordinationV1().Leases(h.env.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
	return n
}

// elasticClaim is a user's claim from the elastic pool.
func (h *chaosHarness) elasticClaim(ctx context.Context, rng *rand.Rand) {
	id := elasticIdentities[rng.IntN(len(elasticIdentities))]
	rv0 := h.listRV(ctx)
	before, berr := h.viewOf(ctx, elasticPool)
	start := time.Now()
	res, err := h.user.Claim(ctx, elasticPool, id)
	if res.Member != "" {
		h.checkForeignClaim(ctx, id, res, start)
	}
	var nf *engine.NoFreeMembersError
	switch {
	case errors.As(err, &nf) || errors.Is(err, engine.ErrNoFreeMembers):
		rv1 := h.listRV(ctx)
		if berr == nil && rv0 > 0 && rv1 > 0 {
			if c := h.claimCandidates(&before); len(c) > 0 {
				h.mu.Lock()
				h.el.refusals = append(h.el.refusals, refusal{identity: id, rv0: rv0, rv1: rv1, cands: c, err: err.Error()})
				h.mu.Unlock()
			}
		}
		h.count("elastic claim: no free member", nil)
	case err == nil && res.Grew:
		h.count("elastic claim: grew the pool", nil)
	default:
		h.count("elastic claim", err)
	}
}

// claimCandidates are the members of v a claim must not pass over: free
// ones, and, below the ceiling, the indices above the size with no object,
// no Lease, no block and no object of another program.
func (h *chaosHarness) claimCandidates(v *engine.PoolView) map[string]string {
	out := map[string]string{}
	for i := range v.Members {
		if m := &v.Members[i]; m.Free {
			out[m.Name] = "free (" + string(m.State) + ")"
		}
	}
	if !v.Spec.Elastic() || v.SpecError != nil {
		return out
	}
	h.mu.Lock()
	f := h.el.foreign
	h.mu.Unlock()
	for idx := v.Size + 1; idx <= v.Spec.MaxSize; idx++ {
		name := engine.MemberName(elasticPool, idx)
		if f != nil && f.member == name {
			continue
		}
		if m := v.Member(name); m != nil && (m.Exists() || m.Lease != nil || m.Blocked != "") {
			continue
		}
		out[name] = fmt.Sprintf("unbuilt, above the size %d and within maxSize %d", v.Size, v.Spec.MaxSize)
	}
	return out
}

// checkRefusals checks the refusals of the batch against its events (h.mu
// held): a candidate with no event of its own from rv0 to rv1, while the
// definition and the effective size stayed, was there to take all along.
func (h *chaosHarness) checkRefusals(events []objEvent) {
	refs := h.el.refusals
	h.el.refusals = nil
	if h.rec.relists != h.el.relists {
		// A relist places what changed at the list's resourceVersion,
		// not where it happened: the windows cannot be judged.
		h.el.relists = h.rec.relists
		h.counts["elastic refusals not judged (a watch relisted)"] += len(refs)
		return
	}
	for _, r := range refs {
		changed := map[string]bool{}
		for _, e := range events {
			if e.rv > r.rv0 && e.rv <= r.rv1 {
				changed[e.member] = true
			}
		}
		if h.replay.el.changedWithin(r.rv0, r.rv1) {
			h.counts["elastic refusals beside a change of the definition or the size"]++
			continue
		}
		var left []string
		for m, what := range r.cands {
			beside := false
			for _, f := range h.el.foreignSpans {
				beside = beside || (f.member == m && f.from <= r.rv1 && f.to >= r.rv0)
			}
			if !changed[m] && !beside {
				left = append(left, m+" ("+what+")")
			}
		}
		h.counts["elastic refusals checked"]++
		if len(left) == 0 {
			continue
		}
		sort.Strings(left)
		why := ""
		for _, m := range left {
			name, _, _ := strings.Cut(m, " ")
			why += h.historyOf(name)
		}
		h.violateLocked("claim by %q from %s was refused (%s) while %s stayed so throughout, rv %d to %d: no change of its objects, the definition or the effective size%s",
			r.identity, elasticPool, r.err, strings.Join(left, ", "), r.rv0, r.rv1, why)
	}
}

// elasticRelease releases a claimed member of the elastic pool by its holder.
func (h *chaosHarness) elasticRelease(ctx context.Context, rng *rand.Rand) {
	h.releaseIn(ctx, rng, elasticPool, "elastic release")
	if rng.IntN(2) == 0 {
		// Right after: the slow reconciler may be the first to see the
		// pool above its spare, and stamp the time an hour early.
		h.skewedReconcile(ctx)
	}
}

// skewedReconcile runs the reconciler whose clock is elasticSkew off.
func (h *chaosHarness) skewedReconcile(ctx context.Context) {
	_, err := h.skewed.Reconcile(ctx, elasticPool)
	h.count("reconcile (elastic, clock an hour slow)", err)
}

// elasticResize resizes the elastic pool within its bounds, half the time to
// the size its definition already names, and checks that the resize set the
// effective size: to the size asked, or above it only as far as claims and
// the spare take it at once, by a decision made since the resize began (not
// a size recorded before it and left as it was).
func (h *chaosHarness) elasticResize(ctx context.Context, rng *rand.Rand) {
	v, err := h.viewOf(ctx, elasticPool)
	if err != nil || !v.Spec.Elastic() {
		h.count("elastic resize: not elastic now", err)
		return
	}
	n := v.Spec.Size
	if rng.IntN(2) == 0 {
		n = v.Spec.MinSize + rng.IntN(v.Spec.MaxSize-v.Spec.MinSize+1)
	}
	named := n == v.Spec.Size
	rv0 := h.listRV(ctx)
	start := h.clk.Now()
	res, err := h.admin.Resize(ctx, elasticPool, n)
	end := h.clk.Now()
	h.instructed(ctx, rv0)
	var se *engine.StepError
	if err != nil && !errors.As(err, &se) {
		h.count("elastic resize", err)
		return
	}
	h.count("elastic resize", nil)
	es := res.Status.Elastic
	if es == nil || es.From != n {
		h.count("elastic resize: overtaken by another change of the definition", nil)
		return
	}
	top, held := 0, []string{}
	for _, r := range res.Status.Members {
		idx, ok := engine.MemberIndex(elasticPool, r.Name)
		if ok && (r.Holder != "" || r.Maintenance || r.Blocked != "") && idx <= v.Spec.MaxSize {
			top = max(top, idx)
			held = append(held, r.Name)
		}
	}
	spare := v.Spec.SpareTarget()
	// A size other than n must have been decided since the resize began:
	// on the run's clock, or on the slow reconciler's, had it decided in
	// between.
	decided := es.ChangedAt != nil && (!es.ChangedAt.Before(start.Add(-stampTolerance)) ||
		(!es.ChangedAt.Before(start.Add(elasticSkew-stampTolerance)) && !es.ChangedAt.After(end.Add(elasticSkew+stampTolerance))))
	changed := "never"
	if es.ChangedAt != nil {
		changed = fmt.Sprintf("at %s, %s before the resize began", es.ChangedAt.Format("15:04:05.000"), start.Sub(*es.ChangedAt).Round(time.Millisecond))
	}
	switch lo, hi := n, max(n, top)+spare; {
	case es.Size < lo || es.Size > hi:
		h.mu.Lock()
		h.violateLocked("resize of %s to %d (the definition named %d already: %v) left its effective size at %d, not %d (or up to %d for the members held, %v, and the spare %d); the size was decided %s; status: %q",
			elasticPool, n, v.Spec.Size, named, es.Size, n, hi, held, spare, changed, es.Reason)
		h.mu.Unlock()
	case es.Size != n && !decided:
		h.mu.Lock()
		h.violateLocked("resize of %s to %d (the definition named %d already: %v) left its effective size at %d, decided %s: the resize did nothing; status: %q",
			elasticPool, n, v.Spec.Size, named, es.Size, changed, es.Reason)
		h.mu.Unlock()
	}
	if named {
		h.count("elastic resize to the size the definition names", nil)
	}
}

// elasticToggle is the administrator's two applies: maxSize 0 (the
// definition's other elastic fields go, as `apply --max-size=0`), a claim
// on the pool fixed, then the bounds back at the pool's size as it is then.
// What the off-switch must keep is checked from the history (elasticTrack).
func (h *chaosHarness) elasticToggle(ctx context.Context, rng *rand.Rand) {
	if !h.elasticApply(ctx) {
		return
	}
	h.elasticClaim(ctx, rng)
	for range 5 { // again after a conflict with a resize
		h.elasticApply(ctx)
		if v, err := h.viewOf(ctx, elasticPool); err == nil && v.Spec.Elastic() {
			return
		}
	}
}

// elasticApply is one apply of elasticToggle: it turns elasticity off when
// it is on, and on when it is off; it reports whether it turned it off.
func (h *chaosHarness) elasticApply(ctx context.Context) bool {
	h.mu.Lock()
	if h.el.adminBusy {
		h.mu.Unlock()
		h.count("elastic admin: busy", nil)
		return false
	}
	h.el.adminBusy = true
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.el.adminBusy = false
		h.mu.Unlock()
	}()
	var off bool
	rv0 := h.listRV(ctx)
	defer h.instructed(ctx, rv0)
	res, err := h.admin.ApplyEdit(ctx, elasticPool, func(stored *engine.Spec) (engine.Spec, error) {
		if stored == nil {
			return engine.Spec{}, errors.New("the pool's definition is gone")
		}
		s := *stored
		off = s.Elastic()
		if off {
			return s.Fixed(s.Size), nil // cmd's setElastic for --max-size=0
		}
		return elasticOn(s), nil
	}, false)
	var se *engine.StepError
	if err != nil && !errors.As(err, &se) {
		h.count("elastic admin apply", err)
		return false
	}
	if !off {
		h.count("elastic admin: elasticity on", nil)
		return false
	}
	h.count("elastic admin: elasticity off (maxSize 0)", nil)
	var gone []string
	for _, a := range res.Reconcile.Actions {
		if a.Step == engine.StepDelete && a.Skipped == "" && a.Err == nil {
			gone = append(gone, a.Member)
		}
	}
	h.add("elastic admin: members the off-switch's reconcile deleted", len(gone))
	return true
}

// instructed notes that the administrator's instruction (a resize, an apply)
// ran from rv0 to now: a smaller size recorded in between is that
// instruction's (a resize sets the effective size at once), no shrink of the
// reconcilers'.
func (h *chaosHarness) instructed(ctx context.Context, rv0 int64) {
	rv1 := h.listRV(ctx)
	if rv1 == 0 {
		rv1 = 1<<62 - 1
	}
	h.mu.Lock()
	h.replay.el.instructed = append(h.replay.el.instructed, [2]int64{rv0, rv1})
	h.mu.Unlock()
}

// elasticOn makes a fixed pool elastic again at its size, as `apply
// --max-size 12 --min-size 1 --spare 2 --settle 5s --size <its size>`.
func elasticOn(s engine.Spec) engine.Spec {
	s.MaxSize, s.MinSize, s.Spare, s.Settle = elasticMax, elasticMin, new(elasticSpare), elasticSettle.String()
	s.Size = min(max(s.Size, elasticMin), elasticMax)
	return s
}

// elasticForeign is another program: it puts an unlabelled PVC on the name
// of the member the next growing claim would take (the first above the
// size, nothing there), and removes it at a later batch. Right after it puts
// one there, users claim one more member than the spare, so that a claim
// finds nothing free and grows the pool onto that name.
func (h *chaosHarness) elasticForeign(ctx context.Context, rng *rand.Rand) {
	if h.elasticForeignStep(ctx) {
		for range elasticSpare + 1 {
			h.elasticClaim(ctx, rng)
		}
	}
}

// elasticForeignStep puts the foreign PVC there or removes it; it reports
// whether it put one there.
func (h *chaosHarness) elasticForeignStep(ctx context.Context) bool {
	pvcs := h.env.Client.CoreV1().PersistentVolumeClaims(h.env.Namespace)
	h.mu.Lock()
	f := h.el.foreign
	batch := h.batch
	h.mu.Unlock()
	if f != nil {
		if f.batch == batch {
			h.count("foreign PVC: kept for a batch", nil)
			return false
		}
		err := pvcs.Delete(ctx, engine.PVCName(f.member), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &f.uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			h.count("foreign PVC: removed by its owner", err)
			return false
		}
		h.foreignGone(ctx, f)
		h.count("foreign PVC: removed by its owner", nil)
		return false
	}
	v, err := h.viewOf(ctx, elasticPool)
	if err != nil || !v.Spec.Elastic() || v.Size >= v.Spec.MaxSize {
		h.count("foreign PVC: no index above the size", err)
		return false
	}
	name := engine.MemberName(elasticPool, v.Size+1)
	if m := v.Member(name); m != nil && (m.Exists() || m.Lease != nil) {
		h.count("foreign PVC: the next member is taken", nil)
		return false
	}
	c, err := pvcs.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: engine.PVCName(name), Namespace: h.env.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		h.count("foreign PVC: put on the next member's name", err)
		return false
	}
	h.mu.Lock()
	h.el.foreign = &foreignObject{member: name, uid: c.UID, rv: rvOf(c), created: time.Now(), batch: batch}
	h.el.foreignSpans = append(h.el.foreignSpans, foreignSpan{member: name, from: rvOf(c), to: math.MaxInt64})
	h.mu.Unlock()
	h.count("foreign PVC: put on the next member's name", nil)
	return true
}

// foreignGone notes that the foreign PVC f is gone.
func (h *chaosHarness) foreignGone(ctx context.Context, f *foreignObject) {
	rv := h.listRV(ctx)
	if rv == 0 {
		return // its span stays open: refusals beside it stay unjudged
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.el.foreign == f {
		h.el.foreign = nil
	}
	for i := range h.el.foreignSpans {
		if s := &h.el.foreignSpans[i]; s.member == f.member && s.from == f.rv {
			s.to = rv
		}
	}
}

// removeForeign removes the other program's PVC (converge).
func (h *chaosHarness) removeForeign(ctx context.Context) {
	h.mu.Lock()
	f := h.el.foreign
	h.el.foreign = nil
	h.mu.Unlock()
	if f == nil {
		return
	}
	err := h.env.Client.CoreV1().PersistentVolumeClaims(h.env.Namespace).Delete(ctx, engine.PVCName(f.member), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &f.uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		h.t.Errorf("removing the foreign PVC of %s: %v", f.member, err)
	}
	h.foreignGone(ctx, f)
}

// checkForeignClaim: a claim that started after the foreign PVC was there
// is never answered with its member.
func (h *chaosHarness) checkForeignClaim(ctx context.Context, identity string, res engine.ClaimResult, start time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.el.foreign; f != nil && f.member == res.Member && f.created.Before(start) {
		f.held = true
		h.violateLocked("claim by %q was answered with %s (grew %v, started %v), whose name an unlabelled PVC (uid %s) has held since before the claim%s",
			identity, res.Member, res.Grew, res.Started, shortUID(f.uid), h.explain(ctx, res.Member))
	}
}

// checkElastic is the elastic pool's batch end (h.mu held): rec is the
// reconcile run at the start of the batch end, v the pool read after it.
func (h *chaosHarness) checkElastic(ctx context.Context, rec engine.ReconcileResult, recErr error, v *engine.PoolView) {
	var se *engine.StepError
	if recErr != nil && !errors.As(recErr, &se) {
		h.counts["reconcile (elastic, batch end) failed"]++
		if _, ok := h.errSamples["reconcile (elastic, batch end) failed"]; !ok {
			h.errSamples["reconcile (elastic, batch end) failed"] = recErr.Error()
		}
	} else if es := rec.Status.Elastic; es != nil && v.Spec.Elastic() {
		h.counts["elastic sizes checked at a batch end"]++
		top, holder := 0, ""
		for _, r := range rec.Status.Members {
			idx, ok := engine.MemberIndex(elasticPool, r.Name)
			if ok && r.Holder != "" && r.Holder != engine.ReconcilerIdentity && idx <= v.Spec.MaxSize && idx > top {
				top, holder = idx, r.Holder
			}
		}
		switch {
		case es.Size < v.Spec.MinSize || es.Size > v.Spec.MaxSize:
			h.violateLocked("%s's effective size is %d, outside minSize %d and maxSize %d (status: %q)", elasticPool, es.Size, v.Spec.MinSize, v.Spec.MaxSize, es.Reason)
		case es.Size < top:
			h.violateLocked("%s's effective size is %d after a reconcile, below its claimed member %s (held by %q) (status: %q)%s",
				elasticPool, es.Size, engine.MemberName(elasticPool, top), holder, es.Reason, h.explain(ctx, engine.MemberName(elasticPool, top)))
		}
	}
	f := h.el.foreign
	if f == nil {
		return
	}
	c, err := h.env.Client.CoreV1().PersistentVolumeClaims(h.env.Namespace).Get(ctx, engine.PVCName(f.member), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || (err == nil && (c.UID != f.uid || c.DeletionTimestamp != nil)):
		h.violateLocked("the unlabelled PVC %s (uid %s) another program put there was deleted, not by that program%s", engine.PVCName(f.member), shortUID(f.uid), h.explain(ctx, f.member))
		h.el.foreign = nil
		return
	case err != nil:
		h.t.Errorf("batch %d: read the foreign PVC: %v", h.batch, err)
	default:
		// Never touched: no label or annotation of the engine's on it.
		for _, kv := range []map[string]string{c.Labels, c.Annotations} {
			for k := range kv {
				if strings.HasPrefix(k, "corral.dev/") && !f.touched {
					f.touched = true
					h.violateLocked("the unlabelled PVC %s (uid %s) another program put there was written to: %s=%q%s", c.Name, shortUID(f.uid), k, kv[k], h.explain(ctx, f.member))
				}
			}
		}
	}
	l, err := h.env.Client.CoordinationV1().Leases(h.env.Namespace).Get(ctx, engine.LeaseName(f.member), metav1.GetOptions{})
	if err == nil && !f.held {
		if hd := holderOf(l); hd != "" && hd != engine.ReconcilerIdentity && rvOf(l) > f.rv && l.CreationTimestamp.Time.After(f.created.Add(-time.Second)) {
			f.held = true
			h.violateLocked("%q holds a claim on %s (Lease rv %d), whose name an unlabelled PVC (uid %s, rv %d) held before the claim: a claim took a member another program's object holds%s",
				hd, f.member, rvOf(l), shortUID(f.uid), f.rv, h.explain(ctx, f.member))
		}
	}
}

// ---- the history of the elastic pool: its size decisions ----

// elasticTrack rebuilds the elastic pool from the watched objects, event by
// event: its definition and recorded size, and whether the pool has more
// free members than its spare (by the engine's own rule, PlanElastic), so
// that every shrink is checked against the time since the pool first had
// that after its size last changed.
type elasticTrack struct {
	ns     string
	cm     *corev1.ConfigMap
	pods   map[types.UID]*corev1.Pod
	pvcs   map[types.UID]*corev1.PersistentVolumeClaim
	leases map[types.UID]*coordinationv1.Lease
	spec   *engine.Spec // the definition (nil: none, or it does not parse)
	rec    *engine.ElasticStatus
	eff    int
	// decisions are the ChangedAt of every record seen (UnixNano): a record
	// with one seen before carries an older decision (a status write of a
	// reconcile that read before another's), not a new one.
	decisions map[int64]bool
	// aboveFrom: when the rebuilt pool first had more free members than
	// its spare since changedAt (zero: not since), on the run's clock.
	aboveFrom, changedAt time.Time
	// relevant are the resourceVersions of ConfigMap events that changed
	// the definition or the effective size.
	relevant []int64
	// instructed are the resourceVersion windows of the administrator's
	// resizes and applies (chaosHarness.instructed).
	instructed [][2]int64
	shrinks    int
	aboves     int // times the pool came above its spare (after a size change)
	sets       int // smaller sizes an instruction set
	offs       int
}

func newElasticTrack(ns string) *elasticTrack {
	return &elasticTrack{ns: ns, pods: map[types.UID]*corev1.Pod{}, pvcs: map[types.UID]*corev1.PersistentVolumeClaim{},
		leases: map[types.UID]*coordinationv1.Lease{}, decisions: map[int64]bool{}, eff: -1}
}

// changedWithin tells whether the definition or the effective size changed
// in (rv0, rv1].
func (t *elasticTrack) changedWithin(rv0, rv1 int64) bool {
	if t == nil {
		return false
	}
	for _, rv := range t.relevant {
		if rv > rv0 && rv <= rv1 {
			return true
		}
	}
	return false
}

// instructedAt tells whether rv lies in an instruction's window.
func (t *elasticTrack) instructedAt(rv int64) bool {
	for _, w := range t.instructed {
		if rv > w[0] && rv <= w[1] {
			return true
		}
	}
	return false
}

// apply takes one event of the elastic pool's objects.
func (t *elasticTrack) apply(e objEvent, bad func(format string, a ...any)) {
	switch e.kind {
	case "Pod":
		if p, ok := e.obj.(*corev1.Pod); ok && !e.gone {
			t.pods[e.uid] = p
		} else {
			delete(t.pods, e.uid)
		}
	case "PVC":
		if c, ok := e.obj.(*corev1.PersistentVolumeClaim); ok && !e.gone {
			t.pvcs[e.uid] = c
		} else {
			delete(t.pvcs, e.uid)
		}
	case "Lease":
		if l, ok := e.obj.(*coordinationv1.Lease); ok && !e.gone {
			t.leases[e.uid] = l
		} else {
			delete(t.leases, e.uid)
		}
	case "ConfigMap":
		cm, ok := e.obj.(*corev1.ConfigMap)
		if !ok || e.gone {
			t.cm = nil
			return
		}
		t.cm = cm
		t.record(e, cm, bad)
	}
	t.updateAbove(e.seenAt)
}

// record takes a new version of the pool's ConfigMap: a changed definition
// or a new size decision.
func (t *elasticTrack) record(e objEvent, cm *corev1.ConfigMap, bad func(format string, a ...any)) {
	var spec *engine.Spec
	if s, err := engine.ParseSpec(cm.Data[engine.KeySpec]); err == nil {
		spec = &s
	}
	rec := engine.RecordedElastic(cm.Data[engine.KeyStatus])
	eff := -1
	if spec != nil {
		eff = engine.EffectiveSize(*spec, rec)
	}
	prevSpec, prevRec, prevEff := t.spec, t.rec, t.eff
	defChanged := (prevSpec == nil) != (spec == nil) || (spec != nil && prevSpec.Encode() != spec.Encode())
	switch {
	case defChanged && prevSpec != nil && prevSpec.Elastic() && spec != nil && !spec.Elastic() && spec.Size < prevEff:
		t.offs++
		bad("rv %d: elasticity of %s was turned off (maxSize 0) at the definition's size %d, below its effective size %d: the free members above %d go at once, with no settle time (recorded: %q)",
			e.rv, elasticPool, spec.Size, prevEff, spec.Size, reasonOf(prevRec))
	case !defChanged && spec != nil && spec.Elastic() && prevRec != nil && rec != nil && eff < prevEff && rec.From == prevRec.From &&
		rec.ChangedAt != nil && !t.decisions[rec.ChangedAt.UnixNano()] && t.instructedAt(e.rv):
		t.sets++
	case !defChanged && spec != nil && spec.Elastic() && prevRec != nil && rec != nil && eff < prevEff && rec.From == prevRec.From &&
		rec.ChangedAt != nil && !t.decisions[rec.ChangedAt.UnixNano()]:
		t.shrinks++
		if early, why := shrinkTooEarly(t.aboveFrom, e.seenAt, spec.SettleTime(), shrinkTolerance); early {
			above := "none"
			if prevRec.AboveSince != nil {
				above = fmt.Sprintf("%s (%s before the shrink)", prevRec.AboveSince.Format("15:04:05.000"), e.seenAt.Sub(*prevRec.AboveSince).Round(time.Millisecond))
			}
			bad("rv %d: %s shrank from %d to %d at %s (the run's clock), %s, its size last changed at %s; settle is %s (the record it shrank from: aboveSince %s, reason %q; the shrink's: %q)",
				e.rv, elasticPool, prevEff, eff, e.seenAt.Format("15:04:05.000"), why, t.changedAt.Format("15:04:05.000"), spec.SettleTime(), above, reasonOf(prevRec), reasonOf(rec))
		}
	}
	if rec != nil && rec.ChangedAt != nil {
		t.decisions[rec.ChangedAt.UnixNano()] = true
	}
	if defChanged || eff != prevEff {
		t.relevant = append(t.relevant, e.rv)
		t.aboveFrom, t.changedAt = time.Time{}, e.seenAt
	}
	t.spec, t.rec, t.eff = spec, rec, eff
}

func reasonOf(r *engine.ElasticStatus) string {
	if r == nil {
		return ""
	}
	return r.Reason
}

// updateAbove notes the first moment, since the size last changed, that the
// rebuilt pool has more free members than its spare by the engine's rule:
// PlanElastic, given the record without its aboveSince, starts one.
func (t *elasticTrack) updateAbove(now time.Time) {
	if t.cm == nil || t.spec == nil || !t.spec.Elastic() || !t.aboveFrom.IsZero() {
		return
	}
	snap := engine.Snapshot{Namespace: t.ns, Pool: elasticPool, ConfigMap: t.cm}
	for _, p := range t.pods {
		snap.Pods = append(snap.Pods, p)
	}
	for _, c := range t.pvcs {
		snap.PVCs = append(snap.PVCs, c)
	}
	for _, l := range t.leases {
		snap.Leases = append(snap.Leases, l)
	}
	v := engine.Observe(snap, now)
	var prev *engine.ElasticStatus
	if r := v.Recorded.Elastic; r != nil {
		c := *r
		c.AboveSince = nil
		prev = &c
	}
	if d := engine.PlanElastic(v.Spec, &v, prev, now); !d.Changed && d.Status.AboveSince != nil {
		t.aboveFrom = now
		t.aboves++
	}
}

// shrinkTooEarly judges a shrink at shrunkAt: the pool must have had more
// free members than its spare since aboveFrom (zero: not since its size last
// changed) for settle, less a tolerance for the reads' spread.
func shrinkTooEarly(aboveFrom, shrunkAt time.Time, settle, tolerance time.Duration) (bool, string) {
	if aboveFrom.IsZero() {
		return true, "and the pool has not had more free members than its spare since"
	}
	if d := shrunkAt.Sub(aboveFrom); d < settle-tolerance {
		return true, fmt.Sprintf("%s after the pool first had more free members than its spare (at %s)", d.Round(time.Millisecond), aboveFrom.Format("15:04:05.000"))
	}
	return false, ""
}

// ---- the end: at rest ----

// elasticAtRest waits, everything released and elasticity on, until the
// elastic pool rests: no Lease, no member above the size, every member
// Ready, and free == spare where the bounds allow (with nothing claimed:
// the spare within minSize and maxSize). Reconciles run throughout (the
// caller's controller, and one here per round).
func (h *chaosHarness) elasticAtRest(ctx context.Context) {
	t := h.t
	if _, err := h.admin.ApplyEdit(ctx, elasticPool, func(stored *engine.Spec) (engine.Spec, error) {
		if stored == nil {
			return engine.Spec{}, errors.New("the pool's definition is gone")
		}
		if stored.Elastic() {
			return *stored, nil
		}
		return elasticOn(*stored), nil
	}, false); err != nil {
		var se *engine.StepError
		if !errors.As(err, &se) {
			t.Errorf("turning elasticity of %s on at the end: %v", elasticPool, err)
		}
	}
	want := min(max(elasticSpare, elasticMin), elasticMax)
	h.mu.Lock()
	settledFrom := h.el.released
	h.mu.Unlock()
	var last engine.PoolView
	var why string
	err := waitUntil(ctx, time.Now().Add(elasticRestDeadline), func() bool {
		_, rerr := h.cli.Reconcile(ctx, elasticPool)
		h.count("reconcile (command line, elastic, final)", rerr)
		v, err := h.viewOf(ctx, elasticPool)
		if err != nil {
			return false
		}
		last = v
		h.mu.Lock()
		h.repairPlaneArtifacts(ctx, v)
		h.mu.Unlock()
		ready := 0
		for i := range v.Members {
			m := &v.Members[i]
			if m.Lease != nil || m.AboveSize || m.Drift || m.Blocked != "" {
				why = fmt.Sprintf("%s: lease %v, above the size %v, drift %v, blocked %q", m.Name, m.Lease != nil, m.AboveSize, m.Drift, m.Blocked)
				return false
			}
			if m.State == engine.StateReady {
				ready++
			}
		}
		why = fmt.Sprintf("size %d, %d members, %d Ready, %d free", v.Size, len(v.Members), ready, v.Status.Free)
		// At least the settle time since the last release: the shrink is
		// due by then, and the pool must rest at the spare after it.
		return time.Since(settledFrom) > elasticSettle && ready == len(v.Members) && v.Size == want && v.Status.Free == want
	})
	if err != nil {
		for i := range last.Members {
			m := &last.Members[i]
			t.Errorf("%s not at rest: %s %s holder %q above-size=%v blocked=%q %s%s", elasticPool, m.Name, m.State, m.Holder(), m.AboveSize, m.Blocked, m.Message, h.explain(ctx, m.Name))
		}
		rec := last.Recorded.Elastic
		h.mu.Lock()
		h.violateLocked("%s did not come to rest within %s of the last release: %s; want size and free %d (spare %d within minSize %d and maxSize %d); recorded %+v",
			elasticPool, elasticRestDeadline, why, want, elasticSpare, elasticMin, elasticMax, rec)
		h.mu.Unlock()
		return
	}
	h.add("elastic pool at rest: free == spare", 1)
}
