package demo

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pvcSim is the provisioner's memory of one claim.
type pvcSim struct {
	bindAt time.Time
	failed bool // its StorageClass does not exist
}

// provision plays the PV controller and a dynamic provisioner: a Pending
// claim of the default class gets a PersistentVolume and becomes Bound after
// a short delay; a claim of an unknown class stays Pending with a warning.
// PersistentVolumes whose claim is gone are deleted (reclaim policy Delete).
func (s *Sim) provision(ctx context.Context, pvcs []corev1.PersistentVolumeClaim) {
	live := map[types.UID]bool{}
	for i := range pvcs {
		c := &pvcs[i]
		live[c.UID] = true
		if c.Status.Phase != corev1.ClaimPending || c.DeletionTimestamp != nil {
			continue
		}
		st := s.pvcs[c.UID]
		class := ""
		if c.Spec.StorageClassName != nil {
			class = *c.Spec.StorageClassName
		}
		if st == nil {
			st = &pvcSim{bindAt: s.after(600*time.Millisecond, 1800*time.Millisecond)}
			s.pvcs[c.UID] = st
			if class != storageClassName {
				st.failed = true
				s.record(ctx, pvcRef(c), corev1.EventTypeWarning, "ProvisioningFailed",
					fmt.Sprintf("storageclass.storage.k8s.io %q not found", class), sourcePVBinder, "")
				continue
			}
			s.record(ctx, pvcRef(c), corev1.EventTypeNormal, "ExternalProvisioning",
				fmt.Sprintf("Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.", provisionerName),
				sourcePVBinder, "")
			s.record(ctx, pvcRef(c), corev1.EventTypeNormal, "Provisioning",
				fmt.Sprintf("External provisioner is provisioning volume for claim \"%s/%s\"", c.Namespace, c.Name),
				sourceProvisioner, "")
			continue
		}
		if st.failed || !s.due(st.bindAt) {
			continue
		}
		s.bindClaim(ctx, c, class)
	}
	for uid := range s.pvcs {
		if !live[uid] {
			delete(s.pvcs, uid)
		}
	}
	s.reclaimVolumes(ctx, live)
}

// bindClaim creates the claim's volume and binds the claim to it.
func (s *Sim) bindClaim(ctx context.Context, c *corev1.PersistentVolumeClaim, class string) {
	pvName := "pvc-" + string(c.UID)
	size := c.Spec.Resources.Requests[corev1.ResourceStorage]
	del := corev1.PersistentVolumeReclaimDelete
	fs := corev1.PersistentVolumeFilesystem
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pvName,
			Labels:      map[string]string{labelSimulated: "true"},
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": provisionerName, annotationSimulated: simulatedNote},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   c.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: del,
			StorageClassName:              class,
			VolumeMode:                    &fs,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace,
				Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: provisionerName, VolumeHandle: fmt.Sprintf("vol-%016x", s.rng.Uint64())},
			},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	if _, err := s.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		s.note("create volume", err)
		return
	}
	b := c.DeepCopy()
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
	b.Annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
	b.Annotations["volume.beta.kubernetes.io/storage-provisioner"] = provisionerName
	b.Annotations["volume.kubernetes.io/storage-provisioner"] = provisionerName
	b.Spec.VolumeName = pvName
	b.Status = corev1.PersistentVolumeClaimStatus{
		Phase:       corev1.ClaimBound,
		AccessModes: c.Spec.AccessModes,
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
	}
	if _, err := s.client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		s.note("bind claim", err)
		return
	}
	s.record(ctx, pvcRef(c), corev1.EventTypeNormal, "ProvisioningSucceeded",
		fmt.Sprintf("Successfully provisioned volume %s", pvName), sourceProvisioner, "")
}

// reclaimVolumes deletes the volumes of claims that are gone.
func (s *Sim) reclaimVolumes(ctx context.Context, live map[types.UID]bool) {
	pvs, err := s.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		s.note("list volumes", err)
		return
	}
	for _, pv := range pvs.Items {
		ref := pv.Spec.ClaimRef
		if ref == nil || !contains(s.Namespaces(), ref.Namespace) || live[ref.UID] {
			continue
		}
		err := s.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
		s.note("delete volume", err)
	}
}
