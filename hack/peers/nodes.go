package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// ---------------------------------------------------------------------------
// The plane's part: nodes with room for the pool, and the statuses kwok's
// stages would write.

// ensureNodes adds nodes until the plane's schedulable pod capacity holds
// the pool. They are Ready from the start and kwok does not manage them
// (no kwok.x-k8s.io/node annotation): on a small shared machine kwok
// brings Pods up and binds volumes at a few objects a second, so the
// setup writes the statuses kwok's stages write itself (startPods,
// bindVolumes). A node of ours that kwok manages (an older run) is taken
// from it.
func ensureNodes(ctx context.Context, client kubernetes.Interface, c config) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalf("list nodes: %v", err)
	}
	capacity, ours := 0, 0
	for _, n := range nodes.Items {
		if len(n.Spec.Taints) > 0 {
			continue // the virtual nodes take only Pods that tolerate them
		}
		capacity += int(n.Status.Allocatable.Pods().Value())
		if !strings.HasPrefix(n.Name, nodePrefix) {
			continue
		}
		ours++
		if _, managed := n.Annotations[kwokNode]; managed {
			patch := []byte(`{"metadata":{"annotations":{"` + kwokNode + `":null}}}`)
			if _, err := client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				fatalf("take node %s from kwok: %v", n.Name, err)
			}
			logf("node %s taken from kwok", n.Name)
		}
	}
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		fatalf("list pods: %v", err)
	}
	other := 0
	for _, p := range pods.Items {
		if p.Namespace != c.namespace {
			other++
		}
	}
	need := c.members + other + 100 // a margin for the tests of the plane
	for capacity < need {
		name := fmt.Sprintf("%s%02d", nodePrefix, ours)
		ours++
		q := resource.MustParse(strconv.Itoa(c.podsPerNode))
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"),
			corev1.ResourcePods: q, corev1.ResourceEphemeralStorage: resource.MustParse("10Ti")}
		now := metav1.Now()
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
					"node-role.kubernetes.io/worker": "", "type": "peers"}},
			Status: corev1.NodeStatus{Allocatable: res, Capacity: res, Phase: corev1.NodeRunning,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
					Message: "ready (written by hack/peers)", LastHeartbeatTime: now, LastTransitionTime: now}},
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: name}},
				NodeInfo:  corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux", KubeletVersion: "peers"}},
		}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); ignoreExists(err) != nil {
			fatalf("create node %s: %v", name, err)
		}
		logf("added node %s (%d pods)", name, c.podsPerNode)
		capacity += c.podsPerNode
	}
}

const kwokNode = "kwok.x-k8s.io/node"

// startPods writes the status kwok's pod-ready stage writes on each Pod
// bound to one of our nodes that is not Running and Ready yet: what a
// kubelet reports once the container runs.
func startPods(ctx context.Context, client kubernetes.Interface, c config, pods []corev1.Pod) error {
	var todo []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp == nil && strings.HasPrefix(p.Spec.NodeName, nodePrefix) && !podReady(p) {
			todo = append(todo, p)
		}
	}
	return parallel(32, len(todo), func(i int) error {
		p := todo[i-1].DeepCopy()
		now := metav1.Now()
		started := true
		ip := fmt.Sprintf("10.%d.%d.%d", 200+i/65536, (i/256)%256, i%256)
		p.Status = corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}},
			PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now, QOSClass: corev1.PodQOSGuaranteed,
		}
		for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
		}
		for _, ctr := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: ctr.Name, Image: ctr.Image, ImageID: ctr.Image, Ready: true, Started: &started,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
		}
		_, err := client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // read again at the next round
		}
		return err
	})
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// bindVolumes provisions and binds a volume for each PVC that is not
// Bound, as kwok's pvc-provision and pv-bind stages do: a PersistentVolume
// pvc-<uid> claimed by it, the PVC's volumeName and binding annotations,
// and both statuses Bound.
func bindVolumes(ctx context.Context, client kubernetes.Interface, pvcs []corev1.PersistentVolumeClaim) error {
	var todo []*corev1.PersistentVolumeClaim
	for i := range pvcs {
		if pvcs[i].DeletionTimestamp == nil && pvcs[i].Status.Phase != corev1.ClaimBound {
			todo = append(todo, &pvcs[i])
		}
	}
	return parallel(32, len(todo), func(i int) error {
		pvc := todo[i-1].DeepCopy()
		name := "pvc-" + string(pvc.UID)
		if pvc.Spec.VolumeName != "" {
			name = pvc.Spec.VolumeName
		}
		mode := corev1.PersistentVolumeFilesystem
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "kwok.x-k8s.io/volume"}},
			Spec: corev1.PersistentVolumeSpec{
				AccessModes: pvc.Spec.AccessModes, Capacity: pvc.Spec.Resources.Requests,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, VolumeMode: &mode,
				ClaimRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace,
					Name: pvc.Name, UID: pvc.UID},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/kwok-local-path-provisioner/" + name}},
			},
		}
		if pvc.Spec.StorageClassName != nil {
			pv.Spec.StorageClassName = *pvc.Spec.StorageClassName
		}
		if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return fmt.Errorf("create PV %s: %w", name, err)
		}
		if pvc.Spec.VolumeName == "" {
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			for k, v := range map[string]string{"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
				"volume.beta.kubernetes.io/storage-provisioner": "kwok.x-k8s.io/volume", "volume.kubernetes.io/storage-provisioner": "kwok.x-k8s.io/volume"} {
				pvc.Annotations[k] = v
			}
			pvc.Spec.VolumeName = name
			updated, err := client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return nil // read again at the next round
			}
			if err != nil {
				return fmt.Errorf("bind PVC %s: %w", pvc.Name, err)
			}
			pvc = updated
		}
		pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
			Capacity: pvc.Spec.Resources.Requests}
		if _, err := client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil &&
			!apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("PVC %s status: %w", pvc.Name, err)
		}
		status := []byte(`{"status":{"phase":"Bound"}}`)
		if _, err := client.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil &&
			!apierrors.IsNotFound(err) {
			return fmt.Errorf("PV %s status: %w", name, err)
		}
		return nil
	})
}
