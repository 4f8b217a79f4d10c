//go:build integration

package systest_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The evictor of the randomized run: voluntary disruptions of the fixed
// pool's member Pods through the eviction API (policy/v1), as a node drain or
// the cluster autoscaler sends them. Its invariant: no claimed member's Pod
// is ever evicted. A claimed member's Pod carries the claim marks, which the
// pool's PodDisruptionBudget selects, so the expected answer is 429; a free
// member's Pod is evicted, and a reconcile builds it again.

// markGrace is how long a user's claim may stand before its Pod must carry
// the claim marks: a claim marks the Pod right after it wins the Lease, and
// a broker's claim (the Lease alone) is marked by the next reconcile of the
// in-cluster controller. An unmarked claimed Pod evicted within it is the
// window the contract leaves (counted); after it, a violation.
const markGrace = stuckDeadline

// evictorActor is the evictor's client (its own user agent, on the run's
// clock, so that the audit log names it).
type evictorActor struct {
	client kubernetes.Interface
}

func (a *evictorActor) init(h *chaosHarness) {
	a.client = onRunClock(h.env.ClientWithAgent(h.t, "evictor"), h.clk)
}

// claimHolder is the user identity holding l ("" for none, and for the
// reconciler's Lease).
func claimHolder(l *coordinationv1.Lease) string {
	if l == nil {
		return ""
	}
	if h := holderOf(l); h != engine.ReconcilerIdentity {
		return h
	}
	return ""
}

// evictOp evicts a random member Pod of the fixed pool: its Lease and Pod
// are read fresh, the eviction names that very Pod version (UID and
// resourceVersion preconditions), and the Lease is read again after it, so
// that a member claimed throughout the eviction is told apart from one whose
// claim came or went meanwhile.
func (h *chaosHarness) evictOp(ctx context.Context, rng *rand.Rand) {
	m, ok := h.pick(ctx, rng, func(m *engine.Member) bool { return m.Pod != nil && m.Pod.DeletionTimestamp == nil })
	if !ok {
		h.count("evict: no Pod", nil)
		return
	}
	defer h.unlock(m.Name)
	c := h.evictor.client
	leases := c.CoordinationV1().Leases(h.env.Namespace)
	readLease := func() (*coordinationv1.Lease, error) {
		l, err := leases.Get(ctx, engine.LeaseName(m.Name), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return l, err
	}
	before, err := readLease()
	if err != nil {
		h.count("evict: read", err)
		return
	}
	pod, err := c.CoreV1().Pods(h.env.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && pod.DeletionTimestamp != nil:
		h.count("evict: the Pod went meanwhile", nil)
		return
	case err != nil:
		h.count("evict: read", err)
		return
	case pod.Status.Phase != corev1.PodRunning:
		// A Pod not running yet is no session to disrupt: the eviction API
		// lets a Pending one go whatever its budget says.
		h.count("evict: Pod not running yet", nil)
		return
	}
	marked := engine.ClaimMarked(pod)
	if !marked {
		// Its deletion is the test's own (the replay's check of who deleted
		// a Pod); a marked Pod is not, so that the replay also reports it
		// should the eviction take it.
		h.mu.Lock()
		h.replay.byTest[pod.UID] = true
		h.mu.Unlock()
	}
	uid, rv := pod.UID, pod.ResourceVersion
	err = c.PolicyV1().Evictions(h.env.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: h.env.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}},
	})
	after, aerr := readLease()
	holder := claimHolder(before)
	throughout := holder != "" && aerr == nil && after != nil && after.UID == before.UID && after.ResourceVersion == before.ResourceVersion
	switch {
	case apierrors.IsTooManyRequests(err) && throughout:
		h.count("evict: claimed, refused (429)", nil)
	case apierrors.IsTooManyRequests(err):
		h.count("evict: refused (429), a claim came or went, or marks not removed yet", nil)
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		h.count("evict: the Pod changed meanwhile", nil)
	case err != nil:
		h.count("evict", err)
	case marked:
		h.violate("the eviction API evicted %s's Pod (uid %s), which carried the claim marks (holder before %q): the pool's PodDisruptionBudget did not protect it%s",
			m.Name, uid, holder, h.explain(ctx, m.Name))
	case throughout && h.clk.Now().Sub(stampOf(before)) > markGrace:
		h.violate("the eviction API evicted %s's Pod (uid %s), claimed by %q since %s and still without the claim marks: no claim or reconcile marked it%s",
			m.Name, uid, holder, stampOf(before).Format(time.RFC3339), h.explain(ctx, m.Name))
	case throughout && before.Labels[engine.LabelHolder] == "":
		h.count("evict: a broker's claim, not marked until a reconcile: evicted", nil)
		h.evictedClaimed(ctx, m, pod, holder)
	case throughout:
		h.count("evict: claimed, not marked yet (between its Lease and its patch): evicted", nil)
		h.evictedClaimed(ctx, m, pod, holder)
	case holder != "" || claimHolder(after) != "":
		h.count("evict: evicted as a claim came or went", nil)
		h.evictedClaimed(ctx, m, pod, claimHolder(after))
	default:
		h.count("evict: free, evicted", nil)
	}
	if aerr != nil && !errors.Is(aerr, context.Canceled) {
		h.count("evict: read after", aerr)
	}
}

// evictedClaimed records a claimed member whose Pod the eviction took in the
// window the contract leaves (its claim not marked yet): the desktop was lost
// to a disruption, as when its node fails, so the checks that follow are
// those of a vanished Pod (a reconcile starts it again on the same data for
// its holder) and not those of a desktop the engine stopped. Without this, a
// broker's check at a batch end took the eviction for the engine's doing.
// The data PVC is read fresh: the view the member was picked from may be
// older than the claim.
func (h *chaosHarness) evictedClaimed(ctx context.Context, m *engine.Member, pod *corev1.Pod, holder string) {
	var pvcUID types.UID
	if holder != "" {
		c, err := h.evictor.client.CoreV1().PersistentVolumeClaims(h.env.Namespace).Get(ctx, engine.PVCName(m.Name), metav1.GetOptions{})
		if err == nil && c.DeletionTimestamp == nil {
			pvcUID = c.UID
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.actors.brokerHeld[m.Name]; b != nil && b.pod == pod.UID {
		b.vanished = true
	}
	if pvcUID == "" || h.vanished[m.Name] != nil {
		return
	}
	h.vanished[m.Name] = &vanished{member: m.Name, identity: holder, pvcUID: pvcUID, batch: h.batch, at: time.Now(), releases: h.releases[m.Name]}
}
