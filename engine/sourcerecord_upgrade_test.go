package engine

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// An upgrade changes nobody's desktop: a claimed member built by an earlier
// release (its data PVC records no source) is given the record of the source
// its Pod runs by the first reconcile, also after an apply of a new
// definition; when it then loses its Pod, it starts again on that source,
// not on the new image. Before the records were written this way, the
// member came back on the new image (tried on the plane with a pool an
// earlier release wrote).
func TestUpgradeRecordsTheSourceOfAClaimedDesktop(t *testing.T) {
	oldSpec := baseSpec(2)
	newSpec := oldSpec
	newSpec.Image, newSpec.CPU, newSpec.Disk = "ghcr.io/example/desktop:2", "2", "50Gi"
	for _, tc := range []struct {
		name string
		// edit changes the earlier release's objects of the claimed member (nil: none).
		edit func(pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim)
		// applyFirst: the new definition is applied before the first
		// reconcile of this release (the Pod then has drift).
		applyFirst bool
		wantRecord bool
	}{
		{name: "first reconcile before any apply", wantRecord: true},
		{name: "an apply before the first reconcile: the Pod's own fields prove its source", applyFirst: true, wantRecord: true},
		{name: "the cluster's default storage class written into the PVC", applyFirst: true, wantRecord: true,
			edit: func(_ *corev1.Pod, pvc *corev1.PersistentVolumeClaim) {
				sc := "standard"
				pvc.Spec.StorageClassName = &sc
			}},
		{name: "a PVC labelled with another source than its Pod's: left alone", applyFirst: true,
			edit: func(_ *corev1.Pod, pvc *corev1.PersistentVolumeClaim) { pvc.Labels[LabelSource] = "0123456789abcdef" }},
		{name: "a Pod whose fields prove no source (hand-edited image): left alone", applyFirst: true,
			edit: func(pod *corev1.Pod, _ *corev1.PersistentVolumeClaim) {
				pod.Spec.Containers[0].Image = "ghcr.io/example/desktop:edited"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e, f := newEngine()
			seedPool(f, "desk", oldSpec, 2)
			res, err := e.Claim(ctx, "desk", "alice")
			if err != nil {
				t.Fatalf("Claim = %+v, %v", res, err)
			}
			mine, free := res.Member, map[string]string{"desk-1": "desk-2", "desk-2": "desk-1"}[res.Member]
			f.mu.Lock()
			// What an earlier release wrote: no record on either PVC.
			for _, c := range f.pvcs {
				delete(c.Annotations, AnnotationSource)
			}
			if tc.edit != nil {
				tc.edit(f.pods[mine], f.pvcs[PVCName(mine)])
			}
			f.mu.Unlock()
			if tc.applyFirst {
				putSpec(f, "desk", newSpec)
			}
			f.reset()
			if _, err := e.Reconcile(ctx, "desk"); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			got, recorded := f.pvc(PVCName(mine)).Annotations[AnnotationSource]
			if recorded != tc.wantRecord {
				t.Fatalf("recorded %v (%q), want %v", recorded, got, tc.wantRecord)
			}
			if recorded {
				if s, err := SpecFromSourceRecord(got, oldSpec, oldSpec.SourceHash()); err != nil || s.Image != oldSpec.Image {
					t.Fatalf("the record %q is not the old source: %v", got, err)
				}
			}
			if c := f.pvc(PVCName(free)); !tc.applyFirst && c.Annotations[AnnotationSource] != "" {
				t.Fatal("a free member's PVC was written: only claimed desktops need the record")
			}
			snap, _ := f.Snapshot(ctx, "desk")
			if v := Observe(snap, testNow); NeedsWork(v) && !tc.applyFirst {
				t.Fatal("NeedsWork after the record: the controller would reconcile for ever")
			}

			// Upgraded; the admin applies the new image (if not yet), the
			// node loses the claimed desktop's Pod, and a reconcile starts
			// it again.
			if !tc.applyFirst {
				putSpec(f, "desk", newSpec)
			}
			f.mu.Lock()
			delete(f.pods, mine)
			f.mu.Unlock()
			if _, err := e.Reconcile(ctx, "desk"); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			pod := f.pod(mine)
			if pod == nil {
				t.Fatal("the claimed member was not started again")
			}
			want := newSpec.Image
			if tc.wantRecord {
				want = oldSpec.Image
			}
			if img := pod.Spec.Containers[0].Image; img != want {
				t.Fatalf("the claimed desktop came back on %s, want %s", img, want)
			}
		})
	}
}

// putSpec writes spec into the pool's ConfigMap as an apply by another
// program would, with no reconcile.
func putSpec(f *fakeCluster, pool string, spec Spec) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cms[ConfigMapName(pool)].Data[KeySpec] = spec.Encode()
}
