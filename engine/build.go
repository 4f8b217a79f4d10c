package engine

import (
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// rootMount is where the init container of a privileged member mounts
	// the PVC to copy the image's root directories onto it.
	rootMount = "/ctpool-root"
	// rootMarker, at the top of the PVC, is written last, once every root
	// directory has been copied. A PVC of an earlier design (the seven
	// directories under .ctpool-root-ready, or the chroot design's whole root
	// under .ctpool-rootfs-ready) is taken over as it is: the directories it
	// holds are kept and the ones it lacks are copied from the image.
	rootMarker      = ".ctpool-root-v2"
	dataMount       = "/data"
	gracePeriodSecs = 10
	// rootInitContainer is the name of the init container that copies the root.
	rootInitContainer = "rootfs"
)

// rootDirs are the top-level directories of a root file system that a
// privileged member keeps on its PVC: each is a sub-directory of the PVC
// mounted over the same path, so that every directory of the root but the
// runtime's own (/proc, /sys, /dev, /run, /tmp) is the PVC's. A directory the
// image lacks is an empty one. A top-level symbolic link of the image
// (/bin -> usr/bin on a merged-/usr image) stays a link on the PVC, relative to
// its top, so the kubelet resolves its subPath to the directory it names and
// the mount over the image's link lands on that same directory, already
// mounted: usr and var, the usual targets of such links, come first, and the
// runtime keeps this order among mounts of one depth. What cannot be kept: a
// file directly in / (no mount can name a file the image may not have).
var rootDirs = []string{
	"usr", "var",
	"bin", "boot", "data", "etc", "home", "lib", "lib32", "lib64", "libx32",
	"media", "mnt", "opt", "root", "sbin", "srv",
}

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

// BuildPVC returns the data PVC of member n. It records the source it is
// built from (AnnotationSource), from which a claimed member is started.
func BuildPVC(namespace, pool string, n int, spec Spec) *corev1.PersistentVolumeClaim {
	member := MemberName(pool, n)
	rec := spec.sourceEncoding()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: PVCName(member), Namespace: namespace,
			Labels:      MemberLabels(pool, member, hashSource(rec)),
			Annotations: map[string]string{AnnotationSource: string(rec)},
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

// BuildPod returns the Pod of member n. The desktop container runs the image's
// own entrypoint with init, and sleep infinity without. An unprivileged member
// mounts its PVC at /data. A privileged member keeps its root file system on
// the PVC: an init container from the same image copies the image's rootDirs
// onto the PVC once, and the privileged container mounts each of those PVC
// sub-directories over the same path, so its entrypoint, every console session
// (exec runs in this container) and every process see one persistent root.
// Every container satisfies the pool's Pod Security level (applyPodSecurity).
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
		Name:         ContainerName,
		Image:        spec.Image,
		Resources:    res,
		VolumeMounts: []corev1.VolumeMount{{Name: DataVolume, MountPath: dataMount}},
	}
	if !spec.Init {
		c.Command = []string{"sleep", "infinity"}
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
		c.VolumeMounts = rootMounts()
		// The copy keeps ownership, so it runs as root whatever the image's
		// user; it needs no privilege beyond a root container's defaults.
		root := int64(0)
		pod.Spec.InitContainers = []corev1.Container{{
			Name:            rootInitContainer,
			Image:           spec.Image,
			Command:         []string{"/bin/sh", "-c", rootCopyScript("", rootMount)},
			Resources:       res,
			SecurityContext: &corev1.SecurityContext{RunAsUser: &root, RunAsGroup: &root},
			VolumeMounts:    []corev1.VolumeMount{{Name: DataVolume, MountPath: rootMount}},
		}}
	}
	pod.Spec.Containers = []corev1.Container{c}
	for _, name := range spec.ImagePullSecrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	}
	applyPodSecurity(pod, spec.podSecurityLevel(), spec.runAsUser())
	rt := spec.Runtime
	if rt == nil {
		rt = &Runtime{Backend: BackendStandard}
	}
	rt.applyRuntime(pod, namespace)
	// sleep as the PID 1 of its own PID namespace ignores SIGTERM (the kernel
	// delivers no signal to a namespace's init that it has no handler for),
	// so on a kubelet every stop would wait the whole grace period. Sharing
	// the Pod's PID namespace makes the sandbox's pause PID 1 and sleep an
	// ordinary process that SIGTERM ends at once; what runs in the desktop
	// container is the same. A member with --init keeps a namespace of its
	// own: its entrypoint (an init system, as often as not) is PID 1 and
	// handles SIGTERM itself. The microVM backends run no such container.
	if !spec.Init && (rt.Backend == BackendStandard || rt.Backend == "") {
		share := true
		pod.Spec.ShareProcessNamespace = &share
	}
	return pod
}

// applyPodSecurity writes the security contexts that make pod satisfy
// level of the Pod Security Standards, on every container and init
// container. A privileged Pod is left as BuildPod wrote it. A baseline one
// runs its containers without privilege escalation and under the runtime's
// default seccomp profile. A restricted one also drops every capability and
// runs as user and group uid (never root); the Pod's fsGroup is uid too, so
// that the PVC at /data is the user's (the ownership is changed only when
// the volume's root does not already match).
func applyPodSecurity(pod *corev1.Pod, level string, uid int64) {
	if level == PodSecurityPrivileged {
		return
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			sc := cs[i].SecurityContext
			if sc == nil {
				sc = &corev1.SecurityContext{}
				cs[i].SecurityContext = sc
			}
			no := false
			sc.AllowPrivilegeEscalation = &no
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
			if level != PodSecurityRestricted {
				continue
			}
			yes, u := true, uid
			sc.RunAsNonRoot, sc.RunAsUser, sc.RunAsGroup = &yes, &u, &u
			sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
		}
	}
	if level == PodSecurityRestricted {
		u := uid
		policy := corev1.FSGroupChangeOnRootMismatch
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &u, FSGroupChangePolicy: &policy}
	}
}

// rootMounts mounts each of the PVC's rootDirs over the same path.
func rootMounts() []corev1.VolumeMount {
	m := make([]corev1.VolumeMount, 0, len(rootDirs))
	for _, d := range rootDirs {
		m = append(m, corev1.VolumeMount{Name: DataVolume, MountPath: "/" + d, SubPath: d})
	}
	return m
}

// rootCopyScript returns the /bin/sh script that copies the rootDirs found
// under src ("" for the image's own root) into the directory dst, once. Each
// directory is copied into a staging directory and renamed into place, so a
// copy cut short is redone and a directory already renamed is kept; the marker
// is written last. `cp -a` keeps ownership, modes, symbolic and hard links and
// times with GNU coreutils and busybox, and extended attributes with GNU
// coreutils. A top-level symbolic link is kept as a link relative to the PVC's
// top (an absolute or ../ target would leave the volume, and the kubelet
// refuses a subPath outside it); a target missing from the image becomes an
// empty directory, so the subPath resolves. A directory the image lacks becomes
// an empty one, so its subPath mount works.
func rootCopyScript(src, dst string) string {
	return fmt.Sprintf(`set -eu
src=%s
root=%s
if [ -e "$root/%s" ]; then exit 0; fi
for d in %s; do
  if [ -e "$root/$d" ] || [ -L "$root/$d" ]; then continue; fi
  stage="$root/.$d.partial"
  rm -rf "$stage"
  if [ -L "$src/$d" ]; then
    t=$(readlink "$src/$d")
    while :; do
      case "$t" in
      /*) t=${t#/} ;;
      ./*) t=${t#./} ;;
      ../*) t=${t#../} ;;
      *) break ;;
      esac
    done
    if [ -z "$t" ] || [ "$t" = . ] || [ "$t" = .. ]; then mkdir -m 755 "$stage"; else ln -s "$t" "$stage"; fi
  elif [ -d "$src/$d" ]; then
    cp -a "$src/$d/." "$stage"
  else
    mkdir -m 755 "$stage"
  fi
  mv "$stage" "$root/$d"
done
for d in %s; do
  if [ -L "$root/$d" ] && [ ! -e "$root/$d" ]; then mkdir -p "$root/$(readlink "$root/$d")"; fi
done
sync
touch "$root/%s"`, shellQuote(src), shellQuote(dst), rootMarker, strings.Join(rootDirs, " "), strings.Join(rootDirs, " "), rootMarker)
}

// shellQuote quotes s as one /bin/sh word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

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
			Labels: map[string]string{LabelPool: pool, LabelMember: member, LabelHolder: HolderLabel(holder)},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &h, LeaseDurationSeconds: &secs, AcquireTime: &t, RenewTime: &t},
	}
}

// setLeaseHolder rewrites a Lease copy for a new holder (compare-and-swap on
// its resourceVersion), labelled as the engine labels its Leases.
func setLeaseHolder(l *coordinationv1.Lease, holder string, d time.Duration, now time.Time) *coordinationv1.Lease {
	c := l.DeepCopy()
	labelLease(c, holder)
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

// renewLease returns a copy of a claim Lease renewed at now, labelled as
// the engine labels its Leases.
func renewLease(l *coordinationv1.Lease, now time.Time) *coordinationv1.Lease {
	c := l.DeepCopy()
	holder := ""
	if c.Spec.HolderIdentity != nil {
		holder = *c.Spec.HolderIdentity
	}
	labelLease(c, holder)
	t := metav1.NewMicroTime(now)
	secs := int32(ClaimDuration / time.Second)
	c.Spec.RenewTime, c.Spec.LeaseDurationSeconds = &t, &secs
	return c
}
