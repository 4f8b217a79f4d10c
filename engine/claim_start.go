package engine

// Starting a claimed member: its Pod (and PVC) for the holder, from the
// source its data records, and the reads that close the race with a release.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// errClaimChanged: a claimed member's start found, after creating its Pod,
// that the claim had been released meanwhile and the release was destroying
// the member's data; the Pod was removed.
var errClaimChanged = errors.New("the claim changed meanwhile")

// startClaimed creates the Pod of a claimed member that has none (its PVC too
// when that is missing) for holder's claim, without a reconciler Lease: the
// claim protects the member.
//
// A release may take the claim between the caller's check and these creates,
// and read the member before the Pod lands: the Pod would keep the released
// PVC from ever going. Two reads close that gap. The release, once it has
// deleted the PVC, deletes whatever Pod of the member exists (destroyMember).
// And this start, once its Pod exists, reads the Lease and the PVC fresh:
// when the reconciler holds the Lease and the PVC is being deleted (or marked
// released), a release is waiting on this Pod, which is deleted again (by
// UID; errClaimChanged). Either the release's delete came after this Pod, or
// this read comes after the release's delete of the PVC. In any other case
// the Pod stays: on data still claimed, or on the new member's data once a
// release has finished. When a read fails nothing is deleted: a user's
// desktop is not stopped on a guess.
//
// A PVC this call created is never deleted here: only a Lease holder deletes
// a member's data. It is brand new (the member had none), and a release at
// work adopts it or deletes it under its own Lease.
//
// The Pod is built from the source the member's PVC records (claimedSpec), so
// that a changed pool definition never changes a claimed desktop: the member
// stays drifted until it is released. A PVC this call creates is built from
// spec, the pool's current source, and carries the holder's display
// annotation. The Pod carries the claim marks from its creation.
func (e *Engine) startClaimed(ctx context.Context, ns, pool string, spec Spec, m *Member, holder string) error {
	build := spec
	if m.PVC == nil {
		pvc := BuildPVC(ns, pool, m.Index, spec)
		pvc.Annotations[AnnotationAssignedTo] = holder
		if _, err := e.Cluster.CreatePVC(ctx, pvc); err != nil {
			if err = e.createExisting(ctx, err, "pvc", pool, m.Name); err != nil {
				return fmt.Errorf("start %s: create PVC: %w", m.Name, err)
			}
		}
	} else {
		build = claimedSpec(spec, m.PVC)
	}
	pod := BuildPod(ns, pool, m.Index, build)
	markClaimed(pod)
	pod, err := e.Cluster.CreatePod(ctx, pod)
	if err != nil {
		if err = e.createExisting(ctx, err, "pod", pool, m.Name); err != nil {
			return fmt.Errorf("start %s: create Pod: %w", m.Name, err)
		}
		return nil
	}
	return e.keepUnlessReleasing(ctx, pool, m.Name, holder, pod)
}

// claimedSpec is the spec a claimed member with data PVC pvc is started from:
// the source pvc records, with the pool's size. A PVC without a record (made
// before members recorded their source) or with one that cannot be used
// (SourceRecordProblem, shown on the member) gives spec, the pool's current
// source.
func claimedSpec(spec Spec, pvc *corev1.PersistentVolumeClaim) Spec {
	rec, ok := pvc.Annotations[AnnotationSource]
	if !ok {
		return spec
	}
	s, err := SpecFromSourceRecord(rec, spec, pvc.Labels[LabelSource])
	if err != nil {
		return spec
	}
	return s
}

// SourceRecordProblem describes a data PVC's source record that a start
// cannot use, or returns "" (a PVC without a record has no problem: it is
// older than the records).
func SourceRecordProblem(pvc *corev1.PersistentVolumeClaim) string {
	rec, ok := pvc.Annotations[AnnotationSource]
	if !ok {
		return ""
	}
	if _, err := SpecFromSourceRecord(rec, Spec{}, pvc.Labels[LabelSource]); err != nil {
		return fmt.Sprintf("the source its data PVC records (annotation %s) cannot be used: %v; a restart takes the pool's current source", AnnotationSource, err)
	}
	return ""
}

// readMember reads m's Pod and PVC fresh (GetPod, GetPVC) into a copy of m.
// When a read fails, the copy keeps what m had and a warning says so.
func (e *Engine) readMember(ctx context.Context, m *Member) (*Member, string) {
	cur := *m
	var failed []string
	switch p, err := e.Cluster.GetPod(ctx, m.Name); {
	case errors.Is(err, ErrNotFound):
		cur.Pod = nil
	case err != nil:
		failed = append(failed, err.Error())
	default:
		cur.Pod = p
	}
	switch c, err := e.Cluster.GetPVC(ctx, PVCName(m.Name)); {
	case errors.Is(err, ErrNotFound):
		cur.PVC = nil
	case err != nil:
		failed = append(failed, err.Error())
	default:
		cur.PVC = c
	}
	if len(failed) > 0 {
		return &cur, fmt.Sprintf("could not read %s after claiming it (%s): decided from the earlier read", m.Name, strings.Join(failed, "; "))
	}
	return &cur, ""
}

// StartRacePermissions are what a claimed member's start needs beyond its
// reads and creates to find a release deleting the member's data
// (keepUnlessReleasing reads the member's Lease and PVC and deletes its own
// Pod). The permission derivation's pool cannot reach that race, so they are
// declared here and merged into the claim and reconcile permissions.
var StartRacePermissions = []Permission{
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "get"},
	{Resource: "persistentvolumeclaims", Verb: "get"},
	{Resource: "pods", Verb: "delete"},
}

// keepUnlessReleasing deletes pod (just created, by UID) and returns
// errClaimChanged when a reconciler holds the member's Lease and its PVC is
// being destroyed; see startClaimed.
func (e *Engine) keepUnlessReleasing(ctx context.Context, pool, member, holder string, pod *corev1.Pod) error {
	l, err := e.Cluster.GetLease(ctx, LeaseName(member))
	switch {
	case errors.Is(err, ErrNotFound):
		return nil // no Lease: no release at work
	case err != nil:
		return fmt.Errorf("start %s: check the claim after starting: %w", member, err)
	case l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != ReconcilerIdentity:
		return nil
	}
	pvc, err := e.Cluster.GetPVC(ctx, PVCName(member))
	switch {
	case errors.Is(err, ErrNotFound):
		return nil // its PVC is created after the release: the new member's
	case err != nil:
		return fmt.Errorf("start %s: check the data after starting: %w", member, err)
	case pvc.DeletionTimestamp == nil && pvc.Annotations[AnnotationReleased] == "":
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if derr := e.Cluster.DeletePod(dctx, pod.Name, pod.UID); derr != nil && !errors.Is(derr, ErrConflict) {
		return fmt.Errorf("start %s: %w (released by %q while starting), and removing the Pod just created failed: %v", member, errClaimChanged, holder, derr)
	}
	return fmt.Errorf("start %s: %w (released by %q while starting): the Pod just created was removed", member, errClaimChanged, holder)
}
