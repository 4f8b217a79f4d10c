package engine

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// createMember creates the PVC and the Pod of member n. Objects that already
// exist are left as they are (another reconciler was faster).
func (e *Engine) createMember(ctx context.Context, ns, pool string, n int, spec Spec, withPod bool) error {
	member := MemberName(pool, n)
	if _, err := e.Cluster.CreatePVC(ctx, BuildPVC(ns, pool, n, spec)); err != nil {
		if err = e.createExisting(ctx, err, "pvc", pool, member); err != nil {
			return fmt.Errorf("create PVC: %w", err)
		}
	}
	if !withPod {
		return nil
	}
	if _, err := e.Cluster.CreatePod(ctx, BuildPod(ns, pool, n, spec)); err != nil {
		if err = e.createExisting(ctx, err, "pod", pool, member); err != nil {
			return fmt.Errorf("create Pod: %w", err)
		}
	}
	return nil
}

// destroyMember deletes the member's PVC, Pod and console Service and waits
// until they are gone. The PVC goes first, with the UID seen (a member rebuilt
// meanwhile is not touched), then the Pod seen, by its UID. When no Pod was
// seen, the Pod the member has now (read fresh) goes, by its UID: a claimed member's start that
// checked the claim before the caller took the Lease may have created one
// since the member was read, and it would keep the PVC from going (the Lease
// holder may delete it; see startClaimed).
func (e *Engine) destroyMember(ctx context.Context, m *Member) error {
	if m.PVC != nil {
		if err := e.Cluster.DeletePVC(ctx, m.PVC.Name, m.PVC.UID); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("delete PVC: %w", err)
		}
	}
	pod := m.Pod // the Pod to wait for
	switch {
	case m.Pod != nil:
		// A start cannot create another Pod while this one exists, and once
		// it is gone the PVC is being deleted, which the start checks.
		if err := e.Cluster.DeletePod(ctx, m.Pod.Name, m.Pod.UID); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("delete Pod: %w", err)
		}
	case m.PVC != nil:
		// Read fresh and deleted by its UID, never by name alone: a delete
		// the client retries late must not hit a Pod started after it.
		p, err := e.Cluster.GetPod(ctx, m.Name)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return fmt.Errorf("read Pod: %w", err)
		default:
			if err := e.Cluster.DeletePod(ctx, p.Name, p.UID); err != nil && !errors.Is(err, ErrConflict) {
				return fmt.Errorf("delete Pod: %w", err)
			}
			pod = p
		}
	}
	if err := e.Cluster.DeleteService(ctx, ConsoleServiceName(m.Name)); err != nil {
		return fmt.Errorf("delete console Service: %w", err)
	}
	if pod != nil {
		if err := e.wait(ctx, KindPod, pod.Name, pod.UID); err != nil {
			return err
		}
	}
	if m.PVC != nil {
		if err := e.wait(ctx, KindPVC, m.PVC.Name, m.PVC.UID); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) wait(ctx context.Context, kind Kind, name string, uid types.UID) error {
	defer e.waiting(ctx, kind, name)()
	wctx, cancel := context.WithTimeout(ctx, e.waitTimeout())
	defer cancel()
	if err := e.Cluster.WaitGone(wctx, kind, name, uid); err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("%s %s still exists after %s (stuck Terminating? check its finalizers)", kind, name, e.waitTimeout())
		}
		return fmt.Errorf("wait for %s %s to go: %w", kind, name, err)
	}
	return nil
}
