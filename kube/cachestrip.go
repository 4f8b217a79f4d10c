// The informers' cache transform: what a Pod or PVC keeps in the cache.

package kube

import (
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// StripForCache is the informers' transform: before an object enters the
// cache it drops what neither the dashboard nor the engine reads, so that a
// namespace of thousands of members costs little memory
// (BenchmarkInformerCacheBytes: about a third of the untransformed bytes).
//
//   - Every object loses its managedFields, but a Lease and a ConfigMap keep
//     the time of their last write (keepWriteTime): a Lease's claim counts
//     from no earlier than it, and a rollout starts at its ConfigMap's.
//   - Pods and PVCs keep their metadata but the annotations other components
//     write for their own bookkeeping (droppedAnnotationPrefixes), and of
//     their spec and status only what engine.Observe, engine.Diagnose and the
//     dashboard read: for a Pod the node, node selector, tolerations, restart
//     policy, runtime class, each container's name and image, the phase,
//     reason, message and conditions, and each container status but its
//     resources, IDs, mounts, user and last state; for a PVC the storage
//     class, the phase, the storage capacity and, until there is a capacity,
//     the storage request. Such a cached copy is for reading: the engine
//     creates, deletes (with a UID precondition) and patches Pods and PVCs,
//     never updates them from a cached copy, and nothing else may either.
//   - Leases and ConfigMaps keep everything else: the engine updates them
//     from cached copies (a compare-and-swap on the resourceVersion), which
//     must not lose a field.
func StripForCache(obj any) (any, error) {
	inner := obj
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		inner = t.Obj
	}
	switch o := inner.(type) {
	case *corev1.Pod:
		stripPod(o)
	case *corev1.PersistentVolumeClaim:
		stripPVC(o)
	}
	switch o := inner.(type) {
	case *coordinationv1.Lease:
		keepWriteTime(o)
		return obj, nil
	case *corev1.ConfigMap:
		keepWriteTime(o)
		return obj, nil
	}
	if m, err := meta.Accessor(inner); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// keepWriteTime reduces an object's managed fields to one entry holding the
// time the API server last took a write of it (engine.Written): a Lease
// writer's stamp never counts from before it, and a rollout starts at its
// ConfigMap's. The entry never goes back to the API server:
// Cluster.UpdateLease sends no managed fields, and a ConfigMap is only
// ever patched.
func keepWriteTime(o metav1.Object) {
	w := engine.Written(o)
	if w.IsZero() {
		o.SetManagedFields(nil)
		return
	}
	o.SetManagedFields([]metav1.ManagedFieldsEntry{{Time: &metav1.Time{Time: w}}})
}

// droppedAnnotationPrefixes are annotations of Pods and PVCs that other
// components write for their own bookkeeping and that the cache drops:
// kubectl's last-applied copy of the whole manifest, the PV controller's and
// the scheduler's binding notes, and the CNI plugins' address notes.
var droppedAnnotationPrefixes = []string{
	lastAppliedAnnotation,
	"pv.kubernetes.io/", "volume.kubernetes.io/", "volume.beta.kubernetes.io/",
	"cni.projectcalico.org/", "k8s.v1.cni.cncf.io/",
}

func droppedAnnotation(key string) bool {
	for _, p := range droppedAnnotationPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// stripAnnotations returns the annotations without the dropped ones: the
// same map when none is dropped, a smaller one otherwise, nil when none is left.
func stripAnnotations(a map[string]string) map[string]string {
	keep := 0
	for k := range a {
		if !droppedAnnotation(k) {
			keep++
		}
	}
	switch keep {
	case len(a):
		return a
	case 0:
		return nil
	}
	out := make(map[string]string, keep)
	for k, v := range a {
		if !droppedAnnotation(k) {
			out[k] = v
		}
	}
	return out
}

func stripPod(p *corev1.Pod) {
	p.Annotations = stripAnnotations(p.Annotations)
	s := &p.Spec
	p.Spec = corev1.PodSpec{
		NodeName:         s.NodeName,
		NodeSelector:     s.NodeSelector,
		Tolerations:      s.Tolerations,
		RestartPolicy:    s.RestartPolicy,
		RuntimeClassName: s.RuntimeClassName,
		Containers:       nameAndImage(s.Containers),
		InitContainers:   nameAndImage(s.InitContainers),
	}
	st := &p.Status
	p.Status = corev1.PodStatus{
		Phase:                 st.Phase,
		Reason:                st.Reason,
		Message:               st.Message,
		Conditions:            st.Conditions,
		ContainerStatuses:     slimStatuses(st.ContainerStatuses),
		InitContainerStatuses: slimStatuses(st.InitContainerStatuses),
	}
}

func nameAndImage(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	return out
}

func slimStatuses(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(cs))
	for i, c := range cs {
		out[i] = corev1.ContainerStatus{Name: c.Name, State: c.State, Ready: c.Ready,
			RestartCount: c.RestartCount, Image: c.Image, Started: c.Started}
	}
	return out
}

func stripPVC(c *corev1.PersistentVolumeClaim) {
	c.Annotations = stripAnnotations(c.Annotations)
	capacity := storageOnly(c.Status.Capacity)
	var requests corev1.ResourceList
	if capacity == nil { // the request is shown only until the volume is bound
		requests = storageOnly(c.Spec.Resources.Requests)
	}
	c.Spec = corev1.PersistentVolumeClaimSpec{
		StorageClassName: c.Spec.StorageClassName,
		Resources:        corev1.VolumeResourceRequirements{Requests: requests},
	}
	c.Status = corev1.PersistentVolumeClaimStatus{Phase: c.Status.Phase, Capacity: capacity}
}

// storageOnly keeps the storage quantity of a resource list.
func storageOnly(l corev1.ResourceList) corev1.ResourceList {
	q, ok := l[corev1.ResourceStorage]
	switch {
	case !ok:
		return nil
	case len(l) == 1:
		return l
	}
	return corev1.ResourceList{corev1.ResourceStorage: q}
}
