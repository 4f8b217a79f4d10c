package engine

import (
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The observed model: a pool's objects as read (Snapshot), its members
// (Member, Claim, Hold, State) and the view Observe derives from them (PoolView).

// State is the state of one member (DECISIONS.md, first match wins).
type State string

// Member states.
const (
	StateTerminating   State = "Terminating"
	StateMissing       State = "Missing"
	StateStopped       State = "Stopped"
	StateFailed        State = "Failed"
	StateUnschedulable State = "Unschedulable"
	StateReady         State = "Ready"
	StateStarting      State = "Starting"
)

// States lists every state in the order of the decision table.
var States = []State{StateTerminating, StateMissing, StateStopped, StateFailed, StateUnschedulable, StateReady, StateStarting}

// failingWaitReasons are the container waiting reasons that make a member
// Failed: the kubelet's own words for a container that will not start without
// a change (ErrImageNeverPull: the image is not on the node and the pull
// policy forbids pulling; InvalidImageName: the reference does not parse).
var failingWaitReasons = map[string]bool{
	"CrashLoopBackOff":     true,
	"ImagePullBackOff":     true,
	"ErrImagePull":         true,
	"ErrImageNeverPull":    true,
	"InvalidImageName":     true,
	"CreateContainerError": true,
}

// Snapshot is what Observe reads: one pool's ConfigMap and the Pods, PVCs and
// Leases labelled with its name. Objects are read, never modified.
type Snapshot struct {
	// Context is the kubeconfig context of the pool's cluster in a source of
	// several contexts (kube.Contexts), "" in one cluster.
	Context   string
	Namespace string
	Pool      string
	// ConfigMap is nil when the pool has no definition.
	ConfigMap *corev1.ConfigMap
	Pods      []*corev1.Pod
	PVCs      []*corev1.PersistentVolumeClaim
	Leases    []*coordinationv1.Lease
	// LeaseSeen, when set, holds for a Lease name when the reader first saw
	// the Lease's current resourceVersion (a reader that watches); a Lease
	// stamped in the future counts from then (interpretLeaseSeen).
	LeaseSeen map[string]time.Time
	// NodeDown holds the nodes that are down (NodeDown), by name, with the
	// node's evidence. nil means the nodes are unknown (the reader may not
	// list them): every member then reads as on a healthy node.
	NodeDown map[string]string
	// NetworkPolicy is an isolated pool's NetworkPolicy as a reader read it
	// (ReadNetworkPolicy); nil when it was not read (a dashboard's cache
	// holds none).
	NetworkPolicy *NetworkPolicyRead
	// NodeCordoned holds the cordoned nodes (NodeCordoned), by name; nil
	// when the nodes are unknown.
	NodeCordoned map[string]bool
	// DisruptionBudget is the pool's PodDisruptionBudget as a reader read
	// it (kube.ReadProtection); nil when it was not read.
	DisruptionBudget *DisruptionBudgetRead
}

// NetworkPolicyRead is the read of a pool's NetworkPolicy: the policy (nil
// when there is none) or why it could not be read.
type NetworkPolicyRead struct {
	Policy *networkingv1.NetworkPolicy
	Err    error
}

// Ref is the snapshot's pool's identity.
func (s *Snapshot) Ref() PoolRef {
	return PoolRef{Context: s.Context, Namespace: s.Namespace, Name: s.Pool}
}

// Claim is the interpretation of a member's Lease.
type Claim struct {
	Holder   string
	Acquired time.Time
	Renewed  time.Time
	Expires  time.Time
	Duration time.Duration
	Expired  bool
	// Stale: a reconciler Lease older than ReconcilerLeaseTTL, or a Lease too
	// broken to honour, that the next reconcile may take over.
	Stale bool
	// Since is when the Lease counts as taken or renewed: its renew (or
	// acquire) time, a time in the future clamped by the skew rule.
	Since time.Time
}

// Hold is the reading of a member's Lease that is no user's claim: the
// reconciler's (Maintenance: the member is in maintenance, taken for a
// release or a step) or one with an empty holder (not Maintenance: the
// Lease is unheld; no claim and no maintenance, the member is not free while
// it exists, and a reconcile removes it once stale). Its staleness is the
// Claim's Stale: the next reconcile may take the Lease over (maintenance) or
// remove it (unheld).
type Hold struct {
	Claim
	Maintenance bool
}

// Member is one observed member with its state and markers.
type Member struct {
	Name  string
	Pool  string
	Index int // 0 when the name does not fit <pool>-<n>
	State State

	Pod   *corev1.Pod
	PVC   *corev1.PersistentVolumeClaim
	Lease *coordinationv1.Lease
	// Claim is a user's claim: the Lease held by an identity (expired or
	// not). It is nil for no Lease, the reconciler's Lease and an empty
	// holder's, which Hold reads instead.
	Claim *Claim
	// Hold is the member's hold (type Hold): the reading of its Lease when
	// that is no user's claim. It is nil for no Lease and for a user's claim
	// (Claim). InMaintenance, Unheld and HoldStale read it.
	Hold *Hold

	Claimed bool // Claim != nil: held by a user identity
	// Blocked names an object that holds this member's name but is not this
	// pool's member, and why ("pod desk-1 exists and is not this pool's
	// member: ..."). A blocked member is left alone: never created,
	// started, replaced, deleted or handed out.
	Blocked   string
	Drift     bool
	AboveSize bool
	Free      bool
	// OldSource: the member is drifted only because it was built from an
	// earlier source of the pool (a rollout's work), not because its data
	// must never be reused (a release that did not finish).
	OldSource bool
	// Serving: an unclaimed Ready member of an earlier source, with no
	// Lease, on a node that is up. It is not free (a free member has the
	// current source), but a claim takes it when no member is free: a
	// rollout's members still on the old source keep serving until it
	// replaces them (rollout.go).
	Serving bool

	Source string // the member's source label
	Node   string
	// NodeDown is the evidence that the node the member's Pod is bound to
	// is down (Snapshot.NodeDown), or "". The Pod's own readings (Ready,
	// probes, container states) are then stale: the desktop is probably
	// fine, and nothing of it is replaced until the node is back.
	NodeDown string
	// NodeDraining: the node the member's Pod is bound to is cordoned
	// (Snapshot.NodeCordoned): a drain evicts it unless it is claimed.
	NodeDraining bool
	Created      time.Time // Pod creation time (zero without a Pod)
	// Message is the scheduler's message for Unschedulable, the failure reason
	// for Failed, and empty otherwise.
	Message string
	// Problems are malformed or surprising facts about this member's objects.
	Problems []string
	// Backoff is the replacement backoff the pool's recorded status holds
	// for this member (nil when none, and for a member that is Ready,
	// drifted or above the size: its count starts again).
	Backoff *Backoff
	// backoffWait: a reconcile leaves this failing member alone until its
	// backoff ends (planBackoff).
	backoffWait bool
}

// Holder returns the claim holder, or "" when the member is not claimed by a user.
func (m *Member) Holder() string {
	if m.Claim != nil {
		return m.Claim.Holder
	}
	return ""
}

// LeaseRead is the reading of the member's Lease, a claim or not (nil
// without one).
func (m *Member) LeaseRead() *Claim {
	if m.Claim != nil {
		return m.Claim
	}
	if m.Hold != nil {
		return &m.Hold.Claim
	}
	return nil
}

// InMaintenance reports whether the member's Lease is the reconciler's: its
// hold is maintenance.
func (m *Member) InMaintenance() bool { return m.Hold != nil && m.Hold.Maintenance }

// Unheld reports whether the member's Lease has an empty holder: its hold
// is no maintenance.
func (m *Member) Unheld() bool { return m.Hold != nil && !m.Hold.Maintenance }

// HoldStale reports whether the member has a hold, maintenance or unheld,
// that is stale: the next reconcile takes it over or removes it.
func (m *Member) HoldStale() bool { return m.Hold != nil && m.Hold.Stale }

// Exists reports whether the member has a Pod or a PVC.
func (m *Member) Exists() bool { return m.Pod != nil || m.PVC != nil }

// PoolView is what Observe derives from a snapshot.
type PoolView struct {
	Name      string
	Namespace string
	// Context is the snapshot's (its cluster's context; "" in one cluster).
	Context string
	// Defined is false when the pool's ConfigMap does not exist.
	Defined bool
	Spec    Spec
	// Size is the pool's effective size (EffectiveSize): the definition's
	// size for a fixed pool, the recorded one for an elastic pool.
	Size int
	// SpecError is set when the stored spec cannot be parsed or is invalid.
	SpecError error
	Source    string
	// Status is the status derived now from the snapshot.
	Status Status
	// Recorded is the status the last reconcile wrote into the ConfigMap.
	Recorded      Status
	RecordedError error
	Members       []Member
	// Problems at pool level (no definition, malformed spec or status).
	Problems []string
	// ObservedAt is the time passed to Observe.
	ObservedAt time.Time
	// policy is the snapshot's read of the NetworkPolicy (Isolation).
	policy *NetworkPolicyRead
	// budget is the snapshot's read of the PodDisruptionBudget (Protection).
	budget *DisruptionBudgetRead
}

// Isolation is what is known of an isolated pool's NetworkPolicy, nil for
// a pool that is not isolated: its state against the definition when the
// snapshot read it, else unknown, with the last reconcile's isolate error
// when it recorded one.
func (v *PoolView) Isolation() *IsolationView {
	if !v.Spec.Isolate || v.SpecError != nil {
		return nil
	}
	if r := v.policy; r != nil && r.Err == nil {
		iv := ObserveIsolation(v.Name, v.Spec, r.Policy)
		return &iv
	}
	iv := IsolationView{Policy: NetworkPolicyName(v.Name), State: IsolationUnknown, Detail: "not read here; ctpool-tui status " + v.Name + " reads it"}
	if r := v.policy; r != nil {
		iv.Detail = readFailure("networkpolicies", r.Err)
	}
	for _, e := range v.Recorded.Errors {
		if strings.HasPrefix(e, "isolate: ") {
			iv.Detail += "; the last reconcile said: " + strings.TrimPrefix(e, "isolate: ")
			break
		}
	}
	return &iv
}

// Ref is the pool's identity.
func (v *PoolView) Ref() PoolRef {
	return PoolRef{Context: v.Context, Namespace: v.Namespace, Name: v.Name}
}

// Member returns the named member, or nil.
func (v *PoolView) Member(name string) *Member {
	for i := range v.Members {
		if v.Members[i].Name == name {
			return &v.Members[i]
		}
	}
	return nil
}
