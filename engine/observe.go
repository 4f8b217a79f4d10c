package engine

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Observe derives each member's state and markers and the pool status from a
// snapshot. It is pure and linear in the number of objects.
func Observe(snap Snapshot, now time.Time) PoolView {
	v := PoolView{Name: snap.Pool, Namespace: snap.Namespace, Context: snap.Context, ObservedAt: now}
	observeDefinition(&v, snap.ConfigMap)
	v.policy = snap.NetworkPolicy
	v.budget = snap.DisruptionBudget
	size := v.Size

	// Members whose names fit <pool>-<n> go into a slice by index (dense and
	// cache-friendly); the rest into a map by name. The slice is the result:
	// each member is observed in place and moved down one slot (slot 0 is
	// never a member), so no member is built twice.
	limit := 4*(size+len(snap.Pods)+len(snap.PVCs)) + 64
	slots := make([]Member, size+1, max(size+1, len(snap.Pods)+1))
	var odd map[string]*Member
	get := func(name string) *Member {
		if n, ok := MemberIndex(snap.Pool, name); ok && n <= limit {
			for n >= len(slots) {
				slots = append(slots, Member{})
			}
			if slots[n].Name == "" {
				slots[n].Name = name
			}
			return &slots[n]
		}
		o := odd[name]
		if o == nil {
			if odd == nil {
				odd = map[string]*Member{}
			}
			o = &Member{Name: name}
			odd[name] = o
		}
		return o
	}
	for _, p := range snap.Pods {
		if p != nil {
			// The source label is read now, while the Pod's labels are
			// in the CPU's cache (a large pool's Pods are not, later).
			m := get(p.Name)
			m.Pod, m.Source = p, p.Labels[LabelSource]
		}
	}
	for _, c := range snap.PVCs {
		if c == nil {
			continue
		}
		name, ok := MemberFromPVCName(c.Name)
		if !ok {
			// Not named <member>-data: no member's data, whatever its
			// name is (a PVC named desk-1 is not desk-1's).
			name = "pvc/" + c.Name
		}
		get(name).PVC = c
	}
	for _, l := range snap.Leases {
		if l == nil {
			continue
		}
		if name, ok := MemberFromLeaseName(l.Name); ok {
			get(name).Lease = l
		}
	}

	// The Lease readings (claims and holds) of all members share one
	// allocation.
	ob := newObserver(&v, size, now, snap.LeaseSeen, snap.NodeDown, snap.NodeCordoned)
	ob.reads = make([]Hold, 0, len(snap.Leases))
	w := 0
	for n := 1; n < len(slots); n++ {
		o := &slots[n]
		name := o.Name
		if name == "" {
			if n > size {
				continue
			}
			name = MemberName(snap.Pool, n)
		}
		ob.member(&slots[w], name, n, true, MemberObjects{Pod: o.Pod, PVC: o.PVC, Lease: o.Lease}, o.Source)
		w++
	}
	clear(slots[w:])
	v.Members = slots[:w]
	if len(odd) > 0 {
		names := make([]string, 0, len(odd))
		for name := range odd {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			o := odd[name]
			idx, ok := MemberIndex(snap.Pool, name)
			v.Members = append(v.Members, Member{})
			ob.member(&v.Members[len(v.Members)-1], name, idx, ok, MemberObjects{Pod: o.Pod, PVC: o.PVC, Lease: o.Lease}, o.Source)
		}
	}

	st := Status{Desired: size, Source: v.Source, Members: make([]MemberRow, 0, len(v.Members))}
	for i := range v.Members {
		m := &v.Members[i]
		st.count(m, 1)
		st.Members = append(st.Members, memberRow(m))
	}
	st.Exhausted = size > 0 && st.Free == 0 && st.Serving == 0
	v.Status = st
	return v
}

// count adds a member's part of the counts (sign 1), or takes it away (-1).
func (st *Status) count(m *Member, sign int) {
	if m.Exists() {
		st.Observed += sign
	}
	switch m.State {
	case StateReady:
		st.Ready += sign
	case StateUnschedulable:
		st.Unschedulable += sign
	case StateFailed:
		st.Failed += sign
	}
	if m.Claimed {
		st.Claimed += sign
	}
	if m.Free {
		st.Free += sign
	}
	if m.Serving {
		st.Serving += sign
	}
	if m.Drift {
		st.Drifted += sign
	}
}

// memberRow is a member's row of the status.
func memberRow(m *Member) MemberRow {
	return MemberRow{
		Name: m.Name, State: m.State, Holder: m.Holder(),
		ClaimExpired: m.Claimed && m.Claim.Expired, Maintenance: m.InMaintenance(),
		Drift: m.Drift, AboveSize: m.AboveSize, Message: m.Message, Blocked: m.Blocked, Backoff: m.Backoff,
	}
}

// memberNameOf prefers the member label, falling back to the object's name.
func memberNameOf(labels map[string]string, fallback string) string {
	if m := labels[LabelMember]; m != "" {
		return m
	}
	return fallback
}

// observer holds what every member of one Observe shares.
type observer struct {
	pool   string
	size   int
	source string
	now    time.Time
	reads  []Hold // backing store of the members' Claims and Holds
	seen   map[string]time.Time
	// blocked are the blocks the last reconcile recorded, by member.
	blocked map[string]string
	// backoffs are the replacement backoffs the last reconcile recorded,
	// by member.
	backoffs map[string]*Backoff
	// records caches recordProblem: the members of a pool share few records.
	records map[[2]string]string
	// nodeDown is Snapshot.NodeDown.
	nodeDown map[string]string
	// cordoned is Snapshot.NodeCordoned.
	cordoned map[string]bool
}

// newObserver is the observer of pool view v (its definition observed) at
// size and now, with the reader's Lease sightings and the snapshot's down
// nodes: Observe and PoolState.Update both make theirs here, so that a
// member is observed alike by either.
func newObserver(v *PoolView, size int, now time.Time, seen map[string]time.Time, nodeDown map[string]string, cordoned map[string]bool) observer {
	return observer{pool: v.Name, size: size, source: v.Source, now: now, seen: seen, nodeDown: nodeDown, cordoned: cordoned, blocked: recordedBlocks(&v.Recorded), backoffs: recordedBackoffs(&v.Recorded)}
}

// recordedBlocks are the blocks a recorded status names, by member (nil when
// none).
func recordedBlocks(st *Status) map[string]string {
	var blocked map[string]string
	for i := range st.Members {
		if r := &st.Members[i]; r.Blocked != "" {
			if blocked == nil {
				blocked = map[string]string{}
			}
			blocked[r.Name] = r.Blocked
		}
	}
	return blocked
}

// recordProblem is SourceRecordProblem of a claimed member's PVC, decoded
// once per distinct record and label in one observation.
func (ob *observer) recordProblem(pvc *corev1.PersistentVolumeClaim) string {
	rec, ok := pvc.Annotations[AnnotationSource]
	if !ok {
		return ""
	}
	k := [2]string{rec, pvc.Labels[LabelSource]}
	p, seen := ob.records[k]
	if !seen {
		if ob.records == nil {
			ob.records = map[[2]string]string{}
		}
		p = SourceRecordProblem(pvc)
		ob.records[k] = p
	}
	return p
}

// member observes one member, of objects o, into m (overwritten whole); idx
// and ok are the name's MemberIndex, podSource the Pod's source label.
func (ob *observer) member(m *Member, name string, idx int, ok bool, o MemberObjects, podSource string) {
	pool, size, source, now := ob.pool, ob.size, ob.source, ob.now
	*m = Member{Name: name, Pool: pool, Pod: o.Pod, PVC: o.PVC, Lease: o.Lease}
	if ok {
		m.Index = idx
	} else {
		m.Problems = append(m.Problems, fmt.Sprintf("name does not fit %s-<n>", pool))
	}
	m.AboveSize = ok && idx > size

	switch {
	case o.Pod != nil:
		m.Source = podSource
		m.Node = o.Pod.Spec.NodeName
		if m.Node != "" {
			m.NodeDown = ob.nodeDown[m.Node]
			m.NodeDraining = ob.cordoned[m.Node]
		}
		m.Created = o.Pod.CreationTimestamp.Time
	case o.PVC != nil:
		m.Source = o.PVC.Labels[LabelSource]
	}
	m.State, m.Message = memberState(o.Pod, o.PVC)
	if ok {
		m.Blocked = blockedBy(pool, name, o.Pod, o.PVC, ob.blocked[name])
		if m.Blocked != "" {
			m.Problems = append(m.Problems, "blocked, left alone: "+m.Blocked)
		}
	}
	if o.Pod != nil && o.PVC == nil && m.State != StateTerminating {
		m.Problems = append(m.Problems, fmt.Sprintf("data PVC %s is missing", PVCName(name)))
		if m.State != StateFailed {
			m.State, m.Message = StateFailed, "data PVC "+PVCName(name)+" is missing"
		}
	}
	m.Drift = source != "" && m.Exists() && m.Source != source
	m.OldSource = m.Drift
	switch {
	case o.PVC != nil && o.PVC.Annotations[AnnotationReleased] != "" && o.PVC.DeletionTimestamp == nil:
		m.Drift, m.OldSource = true, false
		m.Problems = append(m.Problems, "a release of this member did not finish: its data is rebuilt, never reused")
	case o.PVC != nil && o.PVC.DeletionTimestamp != nil && m.State != StateTerminating:
		// A Pod still runs on a data PVC that is being deleted (a Pod
		// created while a release destroyed the member keeps the PVC
		// Terminating): that data is going, so the member is never free and
		// is rebuilt when unclaimed.
		m.Drift, m.OldSource = true, false
		m.Problems = append(m.Problems, "its data PVC "+o.PVC.Name+" is being deleted while a Pod still uses it: the member is rebuilt, never handed out")
	}

	if o.Lease != nil {
		c, problems := interpretLeaseSeen(o.Lease, now, ob.seen[o.Lease.Name])
		ob.reads = append(ob.reads, Hold{Claim: c})
		read := &ob.reads[len(ob.reads)-1]
		m.Problems = append(m.Problems, problems...)
		switch c.Holder {
		case "":
			m.Hold = read
		case ReconcilerIdentity:
			read.Maintenance = true
			m.Hold = read
			if _, releasing := o.Lease.Annotations[AnnotationReleasing]; releasing && m.Exists() && !m.Drift {
				m.Drift, m.OldSource = true, false
				m.Problems = append(m.Problems, "a release of this member did not finish: its data is rebuilt, never reused")
			}
		default:
			m.Claim, m.Claimed = &read.Claim, true
		}
	}
	if m.Claimed && o.PVC != nil {
		if p := ob.recordProblem(o.PVC); p != "" {
			m.Problems = append(m.Problems, p)
		}
	}
	m.Free = ok && o.Lease == nil && m.Blocked == "" && !m.AboveSize && source != "" && !m.Drift &&
		(m.State == StateReady || m.State == StateStarting || m.State == StateStopped)
	m.Serving = ok && m.OldSource && o.Lease == nil && m.Blocked == "" && !m.AboveSize && m.State == StateReady &&
		m.NodeDown == "" && o.Pod != nil && o.PVC != nil
	if b := ob.backoffs[name]; b != nil && keepsBackoff(m) {
		m.Backoff = b
	}
}

// memberState applies the decision table.
func memberState(pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) (State, string) {
	switch {
	case pod != nil && pod.DeletionTimestamp != nil:
		return StateTerminating, ""
	case pod == nil && pvc != nil && pvc.DeletionTimestamp != nil:
		return StateTerminating, ""
	case pod == nil && pvc == nil:
		return StateMissing, ""
	case pod == nil:
		return StateStopped, ""
	}
	if pod.Status.Phase == corev1.PodFailed {
		return StateFailed, joinReason(pod.Status.Reason, pod.Status.Message, "Pod failed")
	}
	if pod.Status.Phase == corev1.PodSucceeded {
		return StateFailed, joinReason(pod.Status.Reason, pod.Status.Message, "Pod completed: the desktop exited")
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w != nil && failingWaitReasons[w.Reason] {
				return StateFailed, joinReason(w.Reason, w.Message, "")
			}
		}
	}
	if pod.Status.Phase == corev1.PodPending {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return StateUnschedulable, c.Message
			}
		}
	}
	if pod.Status.Phase == corev1.PodRunning {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return StateReady, ""
			}
		}
	}
	return StateStarting, ""
}

func joinReason(reason, message, fallback string) string {
	switch {
	case reason != "" && message != "":
		return reason + ": " + message
	case reason != "":
		return reason
	case message != "":
		return message
	}
	return fallback
}
