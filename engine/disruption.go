package engine

// Claimed desktops and voluntary disruptions: the claim marks on a claimed
// member's Pod, and the PodDisruptionBudget every pool owns that selects
// the Pods so marked (README, "Claimed desktops and node drains").

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The claim marks of a claimed member's Pod.
const (
	// LabelClaimed is "true" on the Pod of a claimed member: the pool's
	// PodDisruptionBudget selects the Pods that carry it.
	LabelClaimed = "ctpool.dev/claimed"
	// AnnotationSafeToEvict is "false" on the Pod of a claimed member, so
	// that the cluster autoscaler never removes its node under the user.
	AnnotationSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"
)

// DisruptionBudgetName is the name of the PodDisruptionBudget a pool owns:
// the name of its ConfigMap.
func DisruptionBudgetName(pool string) string { return configMapNamePrefix + pool }

// DisruptionBudgetClient is what the engine writes of a pool's
// PodDisruptionBudget, and the Pod patch that marks a member claimed or free.
// Implementations map API errors as every Writer does.
type DisruptionBudgetClient interface {
	// GetPodDisruptionBudget reads one budget fresh (ErrNotFound when none).
	GetPodDisruptionBudget(ctx context.Context, name string) (*policyv1.PodDisruptionBudget, error)
	CreatePodDisruptionBudget(ctx context.Context, pdb *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error)
	// UpdatePodDisruptionBudget is a compare-and-swap on
	// pdb.ResourceVersion (ErrConflict).
	UpdatePodDisruptionBudget(ctx context.Context, pdb *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error)
	// DeletePodDisruptionBudget deletes with a UID precondition when uid is
	// set; it succeeds when the budget is already gone.
	DeletePodDisruptionBudget(ctx context.Context, name string, uid types.UID) error
	// PatchPodMeta sets (a value) or removes (nil) labels and annotations
	// of the Pod name, only while it is the Pod of UID uid (another UID:
	// ErrConflict): one merge patch.
	PatchPodMeta(ctx context.Context, name string, uid types.UID, labels, annotations map[string]*string) error
}

// markClaimed gives a Pod being built for a claimed member its claim marks.
func markClaimed(pod *corev1.Pod) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Labels[LabelClaimed] = "true"
	pod.Annotations[AnnotationSafeToEvict] = "false"
}

// ClaimMarked tells whether pod carries both claim marks.
func ClaimMarked(pod *corev1.Pod) bool {
	return pod != nil && pod.Labels[LabelClaimed] == "true" && pod.Annotations[AnnotationSafeToEvict] == "false"
}

// anyClaimMark tells whether pod carries either claim mark.
func anyClaimMark(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	_, l := pod.Labels[LabelClaimed]
	_, a := pod.Annotations[AnnotationSafeToEvict]
	return l || a
}

// claimMarks is the patch that sets (claimed) or removes the claim marks.
func claimMarks(claimed bool) (labels, annotations map[string]*string) {
	if !claimed {
		return map[string]*string{LabelClaimed: nil}, map[string]*string{AnnotationSafeToEvict: nil}
	}
	t, f := "true", "false"
	return map[string]*string{LabelClaimed: &t}, map[string]*string{AnnotationSafeToEvict: &f}
}

// setClaimMarks patches pod's claim marks (one write).
func (e *Engine) setClaimMarks(ctx context.Context, pod *corev1.Pod, claimed bool) error {
	labels, annotations := claimMarks(claimed)
	return e.Cluster.PatchPodMeta(ctx, pod.Name, pod.UID, labels, annotations)
}

// markWork says whether m's Pod needs its claim marks changed, and to
// what: a claimed member's Pod (an expired claim too: it still protects
// the desktop) carries both; a Pod of a member without any Lease carries
// neither. A member the reconciler or a release holds, one without a Pod,
// one being deleted and one blocked are left as they are.
func markWork(m *Member) (claimed, needed bool) {
	if m.Pod == nil || m.Index == 0 || m.Blocked != "" || m.Pod.DeletionTimestamp != nil {
		return false, false
	}
	switch {
	case m.Claimed:
		return true, !ClaimMarked(m.Pod)
	case m.Lease == nil:
		return false, anyClaimMark(m.Pod)
	}
	return false, false
}

// markNeeded tells whether a reconcile patches m's claim marks.
func markNeeded(m *Member) bool {
	_, need := markWork(m)
	return need
}

// repairClaimMarks gives every claimed member's Pod its claim marks (a
// claim by a broker that follows only the Lease contract, or by an earlier
// release of this tool, left none) and takes them from every free member's
// Pod (a release that stopped midway left them): one patch per Pod that
// differs, nothing for the others. Removing them races a claim at that
// moment, which marks the Pod once it won its Lease: after the removal the
// member's Lease is read again, and a claim found there gets its marks back.
func (e *Engine) repairClaimMarks(ctx context.Context, view *PoolView, add func(MemberAction)) {
	var todo []*Member
	for i := range view.Members {
		if _, need := markWork(&view.Members[i]); need {
			todo = append(todo, &view.Members[i])
		}
	}
	e.forEach(todo, func(m *Member) {
		claimed, _ := markWork(m)
		err := e.setClaimMarks(ctx, m.Pod, claimed)
		if err == nil && !claimed {
			err = e.remarkIfClaimed(ctx, m)
		}
		switch {
		case errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict):
			add(MemberAction{Step: StepMark, Member: m.Name, Skipped: "its Pod changed meanwhile"})
		default:
			add(MemberAction{Step: StepMark, Member: m.Name, Err: err})
		}
	})
}

// remarkIfClaimed gives m's Pod its claim marks back when a claim took the
// member while its marks were being removed.
func (e *Engine) remarkIfClaimed(ctx context.Context, m *Member) error {
	l, err := e.Cluster.GetLease(ctx, LeaseName(m.Name))
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("check for a claim after removing the claim marks: %w", err)
	case l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || *l.Spec.HolderIdentity == ReconcilerIdentity:
		return nil
	}
	return e.setClaimMarks(ctx, m.Pod, true)
}

// Protection states of a pool's PodDisruptionBudget (ProtectionView.State).
const (
	// ProtectionEnforced: the budget exists and is the pool's.
	ProtectionEnforced = "protected"
	// ProtectionMissing: there is no budget; a reconcile creates it.
	ProtectionMissing = "missing"
	// ProtectionChanged: the budget is the pool's but not as the engine
	// writes it (edited by hand); a reconcile puts it back.
	ProtectionChanged = "changed"
	// ProtectionForeign: a budget of that name exists that is not the
	// pool's (no pool label): the engine leaves it alone.
	ProtectionForeign = "foreign"
	// ProtectionUnknown: the budget could not be read here (permission).
	ProtectionUnknown = "unknown"
	// ProtectionNone: a reconcile could not read or write the budget
	// (permission, a failed write): the claimed desktops are not protected.
	ProtectionNone = "unprotected"
)

// NotProtected is how the status, the diagnosis and apply say that the
// claimed desktops of a pool may be evicted.
const NotProtected = "claimed desktops are not protected from eviction"

// ProtectionView is what is known of a pool's PodDisruptionBudget.
type ProtectionView struct {
	Budget string `json:"budget"`
	State  string `json:"state"`
	// Detail says what differs or why the state is unknown, and the fix.
	Detail string `json:"detail,omitempty"`
}

// Protected tells whether the claimed desktops are protected from eviction.
func (p ProtectionView) Protected() bool { return p.State == ProtectionEnforced }

// Text is the one line the status and apply print for p: "" when the
// claimed desktops are protected.
func (p ProtectionView) Text() string {
	switch p.State {
	case ProtectionEnforced:
		return ""
	case ProtectionUnknown:
		return "cannot tell whether claimed desktops are protected from eviction: " + p.Detail
	}
	return NotProtected + ": " + p.Detail
}

// claimedSelector selects the claimed member Pods of pool.
func claimedSelector(pool string) *metav1.LabelSelector {
	s := memberSelector(pool)
	s.MatchLabels[LabelClaimed] = "true"
	return &s
}

// disruptionBudgetSpec is the spec of a pool's PodDisruptionBudget: its
// claimed members, none of which may be evicted.
func disruptionBudgetSpec(pool string) policyv1.PodDisruptionBudgetSpec {
	zero := intstr.FromInt32(0)
	return policyv1.PodDisruptionBudgetSpec{Selector: claimedSelector(pool), MaxUnavailable: &zero}
}

// BuildDisruptionBudget is the PodDisruptionBudget of a pool.
func BuildDisruptionBudget(namespace, pool string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: DisruptionBudgetName(pool), Namespace: namespace, Labels: PoolLabels(pool)},
		Spec:       disruptionBudgetSpec(pool),
	}
}

// ObserveProtection says how pdb (nil: there is none) stands against the
// PodDisruptionBudget the pool owns.
func ObserveProtection(pool string, pdb *policyv1.PodDisruptionBudget) ProtectionView {
	v := ProtectionView{Budget: DisruptionBudgetName(pool)}
	want := disruptionBudgetSpec(pool)
	switch {
	case pdb == nil:
		v.State, v.Detail = ProtectionMissing, "no PodDisruptionBudget "+v.Budget+"; a reconcile creates it"
	case pdb.Labels[LabelPool] != pool:
		v.State = ProtectionForeign
		v.Detail = fmt.Sprintf("PodDisruptionBudget %s exists and is not this pool's (no label %s=%s): it is left alone; rename or remove it, then reconcile", v.Budget, LabelPool, pool)
	case pdb.DeletionTimestamp != nil:
		v.State, v.Detail = ProtectionMissing, "PodDisruptionBudget "+v.Budget+" is being deleted; a reconcile creates it again"
	case !equality.Semantic.DeepEqual(pdb.Spec.Selector, want.Selector) || !equality.Semantic.DeepEqual(pdb.Spec.MaxUnavailable, want.MaxUnavailable) || pdb.Spec.MinAvailable != nil:
		v.State, v.Detail = ProtectionChanged, "PodDisruptionBudget "+v.Budget+" is not the pool's as written (changed by hand?); a reconcile puts it back"
	default:
		v.State = ProtectionEnforced
	}
	return v
}

// ensureProtection makes the pool's PodDisruptionBudget the engine's: it
// creates it when missing and puts it back when changed. A budget of that
// name that is not the pool's is left alone and reported. Without the
// rights the view says so (unknown); it never fails the reconcile: the
// members are served all the same, only a drain may take a claimed one.
func (e *Engine) ensureProtection(ctx context.Context, pool string) ProtectionView {
	v := ProtectionView{Budget: DisruptionBudgetName(pool), State: ProtectionNone}
	pdb, err := e.Cluster.GetPodDisruptionBudget(ctx, v.Budget)
	if err != nil && !errors.Is(err, ErrNotFound) {
		v.Detail = readFailure("poddisruptionbudgets", err)
		return v
	}
	if err != nil {
		pdb = nil
	}
	v = ObserveProtection(pool, pdb)
	switch v.State {
	case ProtectionEnforced, ProtectionForeign:
		return v
	case ProtectionMissing:
		if pdb != nil { // terminating: created again by a later reconcile
			return v
		}
		_, err = e.Cluster.CreatePodDisruptionBudget(ctx, BuildDisruptionBudget(e.Namespace, pool))
		if errors.Is(err, ErrAlreadyExists) {
			err = fmt.Errorf("created by someone else meanwhile; the next reconcile checks it: %w", err)
		}
	case ProtectionChanged:
		put := pdb.DeepCopy()
		put.Spec.Selector, put.Spec.MaxUnavailable, put.Spec.MinAvailable = disruptionBudgetSpec(pool).Selector, disruptionBudgetSpec(pool).MaxUnavailable, nil
		_, err = e.Cluster.UpdatePodDisruptionBudget(ctx, put)
		if errors.Is(err, ErrConflict) {
			err = fmt.Errorf("changed by someone else meanwhile; the next reconcile checks it again: %w", err)
		}
	}
	if err != nil {
		v.State, v.Detail = ProtectionNone, fmt.Sprintf("write PodDisruptionBudget %s: %v", v.Budget, err)
		return v
	}
	if v.State == ProtectionMissing {
		v.Detail = "created"
	} else {
		v.Detail = "put back"
	}
	v.State = ProtectionEnforced
	return v
}

// protect is ensureProtection, unless snap holds the pool's budget as the
// engine writes it (a controller's cache: kube.BudgetWatch): then nothing
// is read or written, so that a pool at rest costs no request.
func (e *Engine) protect(ctx context.Context, snap Snapshot) ProtectionView {
	if r := snap.DisruptionBudget; r != nil && r.Err == nil && r.Budget != nil {
		if v := ObserveProtection(snap.Pool, r.Budget); v.Protected() {
			return v
		}
	}
	return e.ensureProtection(ctx, snap.Pool)
}

// removeProtection deletes the pool's PodDisruptionBudget when it is the
// pool's (one of that name without the pool label is left alone). It says
// whether it deleted one; gone already is success, and so is a budget this
// identity may not read (it could not have made one either).
func (e *Engine) removeProtection(ctx context.Context, pool string) (bool, error) {
	name := DisruptionBudgetName(pool)
	pdb, err := e.Cluster.GetPodDisruptionBudget(ctx, name)
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrForbidden):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read PodDisruptionBudget %s: %w", name, err)
	case pdb.Labels[LabelPool] != pool:
		return false, nil // not the pool's
	}
	if err := e.Cluster.DeletePodDisruptionBudget(ctx, name, pdb.UID); err != nil && !errors.Is(err, ErrConflict) {
		return false, fmt.Errorf("delete PodDisruptionBudget %s: %w", name, err)
	}
	return true, nil
}

// DisruptionBudgetRead is the read of a pool's PodDisruptionBudget: the
// budget (nil when there is none) or why it could not be read.
type DisruptionBudgetRead struct {
	Budget *policyv1.PodDisruptionBudget
	Err    error
}

// Protection is what is known of the pool's PodDisruptionBudget: its state
// when the snapshot read it, else what the last reconcile recorded when it
// found the claimed desktops unprotected, else nil (not known here).
func (v *PoolView) Protection() *ProtectionView {
	if !v.Defined {
		return nil
	}
	if r := v.budget; r != nil && r.Err == nil {
		p := ObserveProtection(v.Name, r.Budget)
		return &p
	}
	p := ProtectionView{Budget: DisruptionBudgetName(v.Name), State: ProtectionUnknown}
	if r := v.budget; r != nil {
		p.Detail = readFailure("poddisruptionbudgets", r.Err)
	}
	if u := v.Recorded.Unprotected; u != "" {
		if p.Detail != "" {
			p.Detail += "; "
		}
		p.State, p.Detail = ProtectionNone, p.Detail+"the last reconcile said: "+u
		return &p
	}
	if v.budget != nil {
		return &p
	}
	return nil
}

// DrainHold is a node being drained (cordoned) with claimed desktops on it:
// a drain waits on them until their users release them.
type DrainHold struct {
	Node    string   `json:"node"`
	Claimed int      `json:"claimed"`
	Members []string `json:"members"`
}

// DrainHolds are the cordoned nodes that claimed members of the pool hold,
// by node name.
func (v *PoolView) DrainHolds() []DrainHold {
	var out []DrainHold
	at := map[string]int{}
	for i := range v.Members {
		m := &v.Members[i]
		if !m.NodeDraining || !m.Claimed || m.State == StateTerminating {
			continue
		}
		j, ok := at[m.Node]
		if !ok {
			j = len(out)
			at[m.Node] = j
			out = append(out, DrainHold{Node: m.Node})
		}
		out[j].Claimed++
		out[j].Members = append(out[j].Members, m.Name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// DrainHoldText says how many claimed desktops hold the drain of a node.
func DrainHoldText(h DrainHold) string {
	if h.Claimed == 1 {
		return "1 claimed desktop holds the drain of " + h.Node
	}
	return fmt.Sprintf("%d claimed desktops hold the drain of %s", h.Claimed, h.Node)
}

// NodeCordoned is whether a node is cordoned (spec.unschedulable): a drain
// has begun, or an administrator keeps new Pods off it.
func NodeCordoned(n *corev1.Node) bool { return n != nil && n.Spec.Unschedulable }

// NodeCordonedMap is the cordoned nodes of a node list, by name: never nil
// (the nodes are known).
func NodeCordonedMap(nodes []*corev1.Node) map[string]bool {
	out := map[string]bool{}
	for _, n := range nodes {
		if NodeCordoned(n) {
			out[n.Name] = true
		}
	}
	return out
}
