// Objects the engine did not make: an object that holds a member's name but
// is not that member blocks the member (DECISIONS, "Objects the engine did not
// make").

package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// blockedPrefix and blockedSuffix frame the reason a member is blocked:
// "<kind> <name> exists and is not this pool's member (<why>)".
const blockedReason = "%s %s exists and is not this pool's member (%s)"

// BlockedError is a create that found another object on a member's name.
type BlockedError struct {
	Member string
	Reason string // "pod desk-1 exists and is not this pool's member (...)"
}

func (e *BlockedError) Error() string { return e.Reason }

// foreignWhy says why an object named after member is not pool's member, or
// "" when it is (the pool label, and a member label naming member or none).
func foreignWhy(pool, member string, meta metav1.ObjectMeta) string {
	p, m := meta.Labels[LabelPool], meta.Labels[LabelMember]
	switch {
	case p == "" && m == "":
		return "it has no pool labels"
	case p != pool:
		return fmt.Sprintf("it is labelled %s=%s", LabelPool, p)
	case m != "" && m != member:
		return fmt.Sprintf("it is labelled %s=%s", LabelMember, m)
	}
	return ""
}

func blockReason(kind, name, why string) string {
	return fmt.Sprintf(blockedReason, kind, name, why)
}

// blockedBy is the member's block from its objects in the snapshot, else the
// block the last reconcile recorded (a create found an object the snapshot
// cannot show: one without this pool's label), unless the snapshot holds this
// member's own object of that kind now.
func blockedBy(pool, member string, pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim, recorded string) string {
	if pod != nil {
		if why := foreignWhy(pool, member, pod.ObjectMeta); why != "" {
			return blockReason("pod", pod.Name, why)
		}
	}
	if pvc != nil {
		if why := foreignWhy(pool, member, pvc.ObjectMeta); why != "" {
			return blockReason("pvc", pvc.Name, why)
		}
	}
	switch {
	case recorded == "":
	case strings.HasPrefix(recorded, "pod ") && pod == nil,
		strings.HasPrefix(recorded, "pvc ") && pvc == nil:
		return recorded
	}
	return ""
}

// checkExisting is called when a create of the member's Pod (kind "pod") or
// data PVC ("pvc") found one already there: nil when that object is this
// pool's member (a read behind the API server), a *BlockedError when it is
// not, the read's error when it fails.
func (e *Engine) checkExisting(ctx context.Context, kind, pool, member string) error {
	var meta metav1.ObjectMeta
	name := member
	switch kind {
	case "pod":
		p, err := e.Cluster.GetPod(ctx, member)
		if errors.Is(err, ErrNotFound) {
			return nil // gone meanwhile: the next reconcile creates it
		} else if err != nil {
			return fmt.Errorf("read the Pod %s that exists: %w", member, err)
		}
		meta = p.ObjectMeta
	default:
		name = PVCName(member)
		c, err := e.Cluster.GetPVC(ctx, name)
		if errors.Is(err, ErrNotFound) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the PVC %s that exists: %w", name, err)
		}
		meta = c.ObjectMeta
	}
	if why := foreignWhy(pool, member, meta); why != "" {
		return &BlockedError{Member: member, Reason: blockReason(kind, name, why)}
	}
	return nil
}

// createExisting maps a create's ErrAlreadyExists onto checkExisting.
func (e *Engine) createExisting(ctx context.Context, err error, kind, pool, member string) error {
	if errors.Is(err, ErrAlreadyExists) {
		return e.checkExisting(ctx, kind, pool, member)
	}
	return err
}

// recheckBlocked reads fresh the object each member recorded as blocked
// names, which the snapshot cannot show: a member whose object is gone or is
// now this pool's is no longer blocked. A failed read keeps the block.
func (e *Engine) recheckBlocked(ctx context.Context, v *PoolView) {
	for i := range v.Members {
		m := &v.Members[i]
		if m.Blocked == "" || m.Index == 0 {
			continue
		}
		kind := "pod"
		if strings.HasPrefix(m.Blocked, "pvc ") {
			kind = "pvc"
		}
		if kind == "pod" && m.Pod != nil || kind == "pvc" && m.PVC != nil {
			continue // seen in the snapshot: Observe decided
		}
		var be *BlockedError
		switch err := e.checkExisting(ctx, kind, v.Name, m.Name); {
		case errors.As(err, &be):
			m.Blocked = be.Reason
		case err == nil:
			m.Blocked = ""
		}
	}
}
