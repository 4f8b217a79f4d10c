package engine

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
)

// A claimed member built by a release older than the source records (its
// data PVC has no AnnotationSource) would be started again from the pool's
// current definition once it lost its Pod: after an apply, on an image its
// user never had. While its Pod exists, the Pod says which source it runs
// (its source label, and the fields BuildPod wrote from it), so a reconcile
// records that source on the PVC, and an upgrade changes nobody's desktop.

// sourceOfPod is the source m's Pod was built from, when it can be proven:
// a candidate whose hash is the Pod's source label. The candidates are the
// pool's definition itself, and the definition with the fields the Pod and
// its PVC show (image, resources, privilege, init, disk, storage class: what
// an apply changes). ok is false when none hashes to the label.
func sourceOfPod(spec Spec, pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) (rec string, ok bool) {
	want := pod.Labels[LabelSource]
	if want == "" {
		return "", false
	}
	try := func(s Spec) bool {
		if s.SourceHash() != want {
			return false
		}
		// It must also be a record a start can use (SpecFromSourceRecord
		// validates it and checks its hash again).
		if _, err := SpecFromSourceRecord(s.SourceRecord(), spec, want); err != nil {
			return false
		}
		rec = s.SourceRecord()
		return true
	}
	if try(spec) {
		return rec, true
	}
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == ContainerName {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil {
		return "", false
	}
	s := spec
	s.Image = c.Image
	if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		s.CPU = q.String()
	}
	if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
		s.Memory = q.String()
	}
	s.Privileged = c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	s.Init = len(c.Command) == 0
	classes := []string{spec.StorageClass}
	if pvc != nil {
		if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			s.Disk = q.String()
		}
		// A definition with no class builds a PVC with none; the cluster's
		// default class may have been written into it since.
		if sc := pvc.Spec.StorageClassName; sc != nil && *sc != spec.StorageClass {
			classes = append(classes, *sc)
		}
	}
	for _, sc := range classes {
		s.StorageClass = sc
		if try(s) {
			return rec, true
		}
	}
	return "", false
}

// recordWork is the source record a reconcile writes on m's data PVC: m is
// claimed, its PVC records no source, and its Pod (not being deleted) proves
// the source it runs (sourceOfPod). A PVC whose source label names another
// source than the Pod's is left alone: a start could not use a record that
// disagrees with its label.
func recordWork(spec Spec, m *Member) (string, bool) {
	if !m.Claimed || m.PVC == nil || m.PVC.DeletionTimestamp != nil || m.Pod == nil || m.Pod.DeletionTimestamp != nil {
		return "", false
	}
	if _, ok := m.PVC.Annotations[AnnotationSource]; ok {
		return "", false
	}
	if l := m.PVC.Labels[LabelSource]; l != "" && l != m.Pod.Labels[LabelSource] {
		return "", false
	}
	return sourceOfPod(spec, m.Pod, m.PVC)
}

// recordClaimedSources writes the source record of every claimed member
// that needs one (recordWork): one annotation patch per such PVC, once.
func (e *Engine) recordClaimedSources(ctx context.Context, spec Spec, view *PoolView, add func(MemberAction)) {
	var todo []*Member
	recs := map[string]string{}
	for i := range view.Members {
		m := &view.Members[i]
		if rec, ok := recordWork(spec, m); ok {
			todo, recs[m.Name] = append(todo, m), rec
		}
	}
	e.forEach(todo, func(m *Member) {
		rec := recs[m.Name]
		err := e.Cluster.AnnotatePVC(ctx, m.PVC.Name, AnnotationSource, &rec)
		if errors.Is(err, ErrNotFound) {
			add(MemberAction{Step: StepRecord, Member: m.Name, Skipped: "its PVC went meanwhile"})
			return
		}
		add(MemberAction{Step: StepRecord, Member: m.Name, Err: err})
	})
}
