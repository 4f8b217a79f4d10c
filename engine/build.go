package engine

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rootfsMarker guards the one-time copy of the image's root file system onto
// the PVC of a privileged member.
const (
	rootfsMarker    = ".ctpool-rootfs-ready"
	rootfsMount     = "/rootfs"
	dataMount       = "/data"
	gracePeriodSecs = 10
)

// PoolLabels are the labels every object of a pool carries.
func PoolLabels(pool string) map[string]string { return map[string]string{LabelPool: pool} }

// MemberLabels are the labels of a member's Pod and PVC.
func MemberLabels(pool, member, source string) map[string]string {
	return map[string]string{LabelPool: pool, LabelMember: member, LabelSource: source}
}

// BuildConfigMap returns the pool ConfigMap for a spec (status empty).
func BuildConfigMap(namespace, pool string, spec Spec) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName(pool), Namespace: namespace, Labels: PoolLabels(pool)},
		Data:       map[string]string{KeySpec: spec.Encode()},
	}
}

// BuildPVC returns the data PVC of member n.
func BuildPVC(namespace, pool string, n int, spec Spec) *corev1.PersistentVolumeClaim {
	member := MemberName(pool, n)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: PVCName(member), Namespace: namespace,
			Labels: MemberLabels(pool, member, spec.SourceHash()),
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(orDefault(spec.Disk, DefaultDisk))},
			},
		},
	}
	if spec.StorageClass != "" {
		sc := spec.StorageClass
		pvc.Spec.StorageClassName = &sc
	}
	return pvc
}

// BuildPod returns the Pod of member n. An unprivileged member runs the image
// (sleep infinity unless init) with its PVC at /data. A privileged member keeps
// its root file system on the PVC: an init container copies the image's root
// onto the PVC once, and the privileged container runs chrooted into it
// (sleep infinity, or /sbin/init with init).
func BuildPod(namespace, pool string, n int, spec Spec) *corev1.Pod {
	member := MemberName(pool, n)
	cpu := resource.MustParse(orDefault(spec.CPU, DefaultCPU))
	mem := resource.MustParse(orDefault(spec.Memory, DefaultMemory))
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
	}
	labels := MemberLabels(pool, member, spec.SourceHash())
	grace := int64(gracePeriodSecs)
	no := false
	c := corev1.Container{
		Name:      ContainerName,
		Image:     spec.Image,
		Resources: res,
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: member, Namespace: namespace, Labels: labels, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			Hostname:                      member,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			EnableServiceLinks:            &no,
			AutomountServiceAccountToken:  &no,
			Volumes: []corev1.Volume{{
				Name:         DataVolume,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: PVCName(member)}},
			}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew:           1,
				TopologyKey:       corev1.LabelHostname,
				WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector:     &metav1.LabelSelector{MatchLabels: PoolLabels(pool)},
			}},
		},
	}
	if spec.Privileged {
		yes := true
		c.SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		c.VolumeMounts = []corev1.VolumeMount{{Name: DataVolume, MountPath: rootfsMount}}
		entry := "sleep infinity"
		if spec.Init {
			entry = "/sbin/init"
		}
		c.Command = []string{"chroot", rootfsMount, "/bin/sh", "-c", "exec " + entry}
		pod.Spec.InitContainers = []corev1.Container{{
			Name:         "rootfs",
			Image:        spec.Image,
			Command:      []string{"/bin/sh", "-c", rootfsCopyScript},
			Resources:    res,
			VolumeMounts: []corev1.VolumeMount{{Name: DataVolume, MountPath: rootfsMount}},
		}}
	} else {
		c.VolumeMounts = []corev1.VolumeMount{{Name: DataVolume, MountPath: dataMount}}
		if !spec.Init {
			c.Command = []string{"sleep", "infinity"}
		}
	}
	pod.Spec.Containers = []corev1.Container{c}
	rt := spec.Runtime
	if rt == nil {
		rt = &Runtime{Backend: BackendStandard}
	}
	rt.applyRuntime(pod, namespace)
	return pod
}

// rootfsCopyScript copies the image's root file system onto the PVC once.
var rootfsCopyScript = fmt.Sprintf(`set -e
if [ -e %[1]s/%[2]s ]; then exit 0; fi
tar -C / --one-file-system --exclude=.%[1]s --exclude=./proc --exclude=./sys --exclude=./dev -cf - . | tar -C %[1]s -xpf -
mkdir -p %[1]s/proc %[1]s/sys %[1]s/dev
touch %[1]s/%[2]s`, rootfsMount, rootfsMarker)

// ClaimLease returns the Lease of a new claim by identity.
func ClaimLease(namespace, pool, member, identity string, now time.Time) *coordinationv1.Lease {
	return newLease(namespace, pool, member, identity, ClaimDuration, now)
}

// ReconcilerLease returns the Lease the reconciler takes before working on a member.
func ReconcilerLease(namespace, pool, member string, now time.Time) *coordinationv1.Lease {
	return newLease(namespace, pool, member, ReconcilerIdentity, ReconcilerLeaseTTL, now)
}

func newLease(namespace, pool, member, holder string, d time.Duration, now time.Time) *coordinationv1.Lease {
	secs := int32(d / time.Second)
	t := metav1.NewMicroTime(now)
	h := holder
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: LeaseName(member), Namespace: namespace,
			Labels: map[string]string{LabelPool: pool, LabelMember: member},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &h, LeaseDurationSeconds: &secs, AcquireTime: &t, RenewTime: &t},
	}
}

// setLeaseHolder rewrites a Lease copy for a new holder (compare-and-swap on its resourceVersion).
func setLeaseHolder(l *coordinationv1.Lease, holder string, d time.Duration, now time.Time) *coordinationv1.Lease {
	c := l.DeepCopy()
	secs := int32(d / time.Second)
	t := metav1.NewMicroTime(now)
	h := holder
	c.Spec.HolderIdentity, c.Spec.LeaseDurationSeconds, c.Spec.AcquireTime, c.Spec.RenewTime = &h, &secs, &t, &t
	tr := int32(0)
	if c.Spec.LeaseTransitions != nil {
		tr = *c.Spec.LeaseTransitions
	}
	tr++
	c.Spec.LeaseTransitions = &tr
	return c
}

// renewLease returns a copy of a claim Lease renewed at now.
func renewLease(l *coordinationv1.Lease, now time.Time) *coordinationv1.Lease {
	c := l.DeepCopy()
	t := metav1.NewMicroTime(now)
	secs := int32(ClaimDuration / time.Second)
	c.Spec.RenewTime, c.Spec.LeaseDurationSeconds = &t, &secs
	return c
}
