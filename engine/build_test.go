package engine

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestBuildPodCommonFields(t *testing.T) {
	spec := baseSpec(3)
	spec.CPU, spec.Memory = "500m", "3Gi"
	pod := BuildPod(testNS, "desk", 2, spec)

	if pod.Name != "desk-2" || pod.Namespace != testNS || pod.Spec.Hostname != "desk-2" {
		t.Fatalf("name/namespace/hostname = %s/%s/%s", pod.Name, pod.Namespace, pod.Spec.Hostname)
	}
	wantLabels := map[string]string{LabelPool: "desk", LabelMember: "desk-2", LabelSource: spec.SourceHash()}
	if !reflect.DeepEqual(pod.Labels, wantLabels) {
		t.Fatalf("labels = %v, want %v", pod.Labels, wantLabels)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if c.Name != ContainerName || c.Image != spec.Image {
		t.Fatalf("container %s image %s", c.Name, c.Image)
	}
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		if cpu := rl[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("500m")) != 0 {
			t.Errorf("cpu = %s, want 500m", cpu.String())
		}
		if mem := rl[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("3Gi")) != 0 {
			t.Errorf("memory = %s, want 3Gi", mem.String())
		}
	}
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].PersistentVolumeClaim == nil || pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "desk-2-data" {
		t.Fatalf("volumes = %+v, want the PVC desk-2-data", pod.Spec.Volumes)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("restartPolicy = %s", pod.Spec.RestartPolicy)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("service account token is mounted")
	}
	if pod.Spec.RuntimeClassName != nil || pod.Spec.NodeSelector != nil || pod.Spec.Tolerations != nil {
		t.Errorf("standard backend set runtime class %v, node selector %v, tolerations %v", pod.Spec.RuntimeClassName, pod.Spec.NodeSelector, pod.Spec.Tolerations)
	}
	if len(pod.Annotations) != 0 {
		t.Errorf("standard backend annotations = %v", pod.Annotations)
	}
}

func TestBuildPodModes(t *testing.T) {
	sleep := []string{"sleep", "infinity"}
	data := []corev1.VolumeMount{{Name: DataVolume, MountPath: "/data"}}
	// usr and var first: the targets of an image's top-level links are
	// mounted before the links (rootDirs).
	var root []corev1.VolumeMount
	for _, d := range []string{"usr", "var", "bin", "boot", "data", "etc", "home", "lib", "lib32", "lib64", "libx32",
		"media", "mnt", "opt", "root", "sbin", "srv"} {
		root = append(root, corev1.VolumeMount{Name: DataVolume, MountPath: "/" + d, SubPath: d})
	}
	tests := []struct {
		name           string
		privileged     bool
		init           bool
		wantCommand    []string // nil: the image's own entrypoint
		wantMounts     []corev1.VolumeMount
		wantCopy       bool
		wantPrivileged bool
	}{
		{name: "unprivileged", wantCommand: sleep, wantMounts: data},
		{name: "unprivileged init", init: true, wantCommand: nil, wantMounts: data},
		{name: "privileged", privileged: true, wantCommand: sleep, wantMounts: root, wantCopy: true, wantPrivileged: true},
		{name: "privileged init", privileged: true, init: true, wantCommand: nil, wantMounts: root, wantCopy: true, wantPrivileged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := baseSpec(1)
			spec.Privileged, spec.Init = tt.privileged, tt.init
			pod := BuildPod(testNS, "desk", 1, spec)
			c := pod.Spec.Containers[0]
			if !reflect.DeepEqual(c.Command, tt.wantCommand) || c.Args != nil {
				t.Errorf("command = %q args = %q, want command %q and no args", c.Command, c.Args, tt.wantCommand)
			}
			if !reflect.DeepEqual(c.VolumeMounts, tt.wantMounts) {
				t.Errorf("mounts = %+v, want %+v", c.VolumeMounts, tt.wantMounts)
			}
			gotPriv := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
			if gotPriv != tt.wantPrivileged {
				t.Errorf("privileged = %v, want %v", gotPriv, tt.wantPrivileged)
			}
			if got := len(pod.Spec.InitContainers) == 1; got != tt.wantCopy {
				t.Fatalf("init containers = %d, want the copy %v", len(pod.Spec.InitContainers), tt.wantCopy)
			}
			if !tt.wantCopy {
				if len(pod.Spec.InitContainers) != 0 {
					t.Errorf("unprivileged member has init containers %+v", pod.Spec.InitContainers)
				}
				return
			}
			ic := pod.Spec.InitContainers[0]
			wantICMounts := []corev1.VolumeMount{{Name: DataVolume, MountPath: "/ctpool-root"}}
			if ic.Name != "rootfs" || ic.Image != spec.Image || !reflect.DeepEqual(ic.VolumeMounts, wantICMounts) {
				t.Errorf("init container %s image %s mounts %+v, want rootfs from %s with the whole PVC at /ctpool-root", ic.Name, ic.Image, ic.VolumeMounts, spec.Image)
			}
			if len(ic.Command) != 3 || ic.Command[0] != "/bin/sh" || ic.Command[1] != "-c" || ic.Command[2] != rootCopyScript("", "/ctpool-root") {
				t.Errorf("init container command = %q, want /bin/sh -c and the copy script", ic.Command)
			}
			if !reflect.DeepEqual(ic.Resources, c.Resources) {
				t.Errorf("init container resources %+v, want the member's %+v", ic.Resources, c.Resources)
			}
			sc := ic.SecurityContext
			if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 {
				t.Errorf("the copy does not run as root (security context %+v), so it cannot keep ownership", sc)
			}
			if sc != nil && sc.Privileged != nil && *sc.Privileged {
				t.Errorf("the copy runs privileged")
			}
			// Every mounted sub-directory is one the copy creates.
			for _, m := range c.VolumeMounts {
				if !strings.Contains(ic.Command[2], " "+m.SubPath) || m.MountPath != "/"+m.SubPath {
					t.Errorf("mount %+v: the copy does not create %s, or it is not mounted over its own path", m, m.SubPath)
				}
			}
		})
	}
}

// The source hash is of the spec fields only: the Pod template is not hashed.
func TestBuildPodSourceHashIsSpecOnly(t *testing.T) {
	for _, priv := range []bool{false, true} {
		spec := baseSpec(1)
		spec.Privileged = priv
		pod := BuildPod(testNS, "desk", 1, spec)
		if got, want := pod.Labels[LabelSource], spec.SourceHash(); got != want {
			t.Errorf("privileged %v: source label %s, want the spec's hash %s", priv, got, want)
		}
	}
	a, b := baseSpec(1), baseSpec(1)
	b.Privileged = true
	if a.SourceHash() == b.SourceHash() {
		t.Errorf("privileged is not part of the source hash")
	}
}

func TestBuildPodRuntimes(t *testing.T) {
	toleration := corev1.Toleration{Key: ProviderTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name         string
		rt           *Runtime
		wantSelector map[string]string
		wantTolerate bool
		wantAnn      map[string]string
		wantRC       string
	}{
		{name: "standard", rt: &Runtime{Backend: BackendStandard}, wantAnn: map[string]string{}},
		{name: "standard with runtime class", rt: &Runtime{Backend: BackendStandard, RuntimeClassName: "kata"}, wantAnn: map[string]string{}, wantRC: "kata"},
		{
			name: "sandboxd minimal", rt: &Runtime{Backend: BackendSandboxd, Template: "tmpl:1"},
			wantSelector: map[string]string{SandboxdNodeLabel: "sandboxd"}, wantTolerate: true,
			wantAnn: map[string]string{SandboxdAnnotationRuntime: "sandboxd", SandboxdAnnotationTemplate: "tmpl:1"},
		},
		{
			name: "sandboxd full", rt: &Runtime{Backend: BackendSandboxd, Template: "tmpl:1", Net: "none", Size: "small", TTLSeconds: int64p(0)},
			wantSelector: map[string]string{SandboxdNodeLabel: "sandboxd"}, wantTolerate: true,
			wantAnn: map[string]string{SandboxdAnnotationRuntime: "sandboxd", SandboxdAnnotationTemplate: "tmpl:1", SandboxdAnnotationNet: "none", SandboxdAnnotationSize: "small", SandboxdAnnotationTTL: "0"},
		},
		{
			name: "cocoon defaults", rt: &Runtime{Backend: BackendCocoon, Image: "ubuntu-dev-base"},
			wantSelector: map[string]string{CocoonNodeLabel: "default"}, wantTolerate: true,
			wantAnn: map[string]string{CocoonAnnotationVMName: "vdi-vdi-desk-4-a024440db5", CocoonAnnotationManaged: "true", CocoonAnnotationMode: "run", CocoonAnnotationImage: "ubuntu-dev-base", CocoonAnnotationOS: "linux"},
		},
		{
			name: "cocoon explicit", rt: &Runtime{Backend: BackendCocoon, Image: "win", Pool: "gpu", Mode: CocoonModeClone, OS: "windows"},
			wantSelector: map[string]string{CocoonNodeLabel: "gpu"}, wantTolerate: true,
			wantAnn: map[string]string{CocoonAnnotationVMName: "vdi-vdi-desk-4-a024440db5", CocoonAnnotationManaged: "true", CocoonAnnotationMode: "clone", CocoonAnnotationImage: "win", CocoonAnnotationOS: "windows"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := baseSpec(4)
			spec.Runtime = tt.rt
			pod := BuildPod(testNS, "desk", 4, spec)
			if !reflect.DeepEqual(pod.Spec.NodeSelector, tt.wantSelector) {
				t.Errorf("nodeSelector = %v, want %v", pod.Spec.NodeSelector, tt.wantSelector)
			}
			if tt.wantTolerate != reflect.DeepEqual(pod.Spec.Tolerations, []corev1.Toleration{toleration}) {
				t.Errorf("tolerations = %+v, want provider toleration %v", pod.Spec.Tolerations, tt.wantTolerate)
			}
			if !reflect.DeepEqual(pod.Annotations, tt.wantAnn) {
				t.Errorf("annotations = %v, want %v", pod.Annotations, tt.wantAnn)
			}
			gotRC := ""
			if pod.Spec.RuntimeClassName != nil {
				gotRC = *pod.Spec.RuntimeClassName
			}
			if gotRC != tt.wantRC {
				t.Errorf("runtimeClassName = %q, want %q", gotRC, tt.wantRC)
			}
		})
	}

	t.Run("cocoon VM name differs per member", func(t *testing.T) {
		spec := baseSpec(2)
		spec.Runtime = &Runtime{Backend: BackendCocoon, Image: "u"}
		a := BuildPod("ns1", "desk", 1, spec).Annotations[CocoonAnnotationVMName]
		b := BuildPod("ns1", "desk", 2, spec).Annotations[CocoonAnnotationVMName]
		if a != "vdi-ns1-desk-1-e60c4b2ec4" || b != "vdi-ns1-desk-2-be232e8a8d" {
			t.Fatalf("VM names %q and %q, want vdi-ns1-desk-1-e60c4b2ec4 and vdi-ns1-desk-2-be232e8a8d", a, b)
		}
	})
}

func TestBuildPVC(t *testing.T) {
	tests := []struct {
		name      string
		disk      string
		class     string
		wantDisk  string
		wantClass *string
	}{
		{name: "default disk, cluster default class", wantDisk: "5Gi"},
		{name: "explicit", disk: "20Gi", class: "fast", wantDisk: "20Gi", wantClass: ptrTo("fast")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := Spec{Image: "img", Size: 3, Disk: tt.disk, StorageClass: tt.class}
			pvc := BuildPVC(testNS, "desk", 3, spec)
			if pvc.Name != "desk-3-data" || pvc.Namespace != testNS {
				t.Fatalf("PVC %s/%s", pvc.Namespace, pvc.Name)
			}
			want := map[string]string{LabelPool: "desk", LabelMember: "desk-3", LabelSource: spec.SourceHash()}
			if !reflect.DeepEqual(pvc.Labels, want) {
				t.Errorf("labels = %v, want %v", pvc.Labels, want)
			}
			got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
			if got.Cmp(resource.MustParse(tt.wantDisk)) != 0 {
				t.Errorf("storage = %s, want %s", got.String(), tt.wantDisk)
			}
			if !reflect.DeepEqual(pvc.Spec.StorageClassName, tt.wantClass) {
				t.Errorf("storageClassName = %v, want %v", pvc.Spec.StorageClassName, tt.wantClass)
			}
			if !reflect.DeepEqual(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
				t.Errorf("access modes = %v", pvc.Spec.AccessModes)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestBuildLeases(t *testing.T) {
	tests := []struct {
		name      string
		lease     func() (holder string, secs int32)
		wantHoldr string
		wantSecs  int32
	}{
		{"claim", func() (string, int32) {
			l := ClaimLease(testNS, "desk", "desk-1", "alice@example.com", testNow)
			return *l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds
		}, "alice@example.com", 3600},
		{"reconciler", func() (string, int32) {
			l := ReconcilerLease(testNS, "desk", "desk-1", testNow)
			return *l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds
		}, ReconcilerIdentity, 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			holder, secs := tt.lease()
			if holder != tt.wantHoldr || secs != tt.wantSecs {
				t.Fatalf("holder %q for %ds, want %q for %ds", holder, secs, tt.wantHoldr, tt.wantSecs)
			}
		})
	}

	l := ClaimLease(testNS, "desk", "desk-1", "alice", testNow)
	if l.Name != "corral-vdi-ct-desk-1" || l.Namespace != testNS {
		t.Errorf("lease %s/%s", l.Namespace, l.Name)
	}
	if !reflect.DeepEqual(l.Labels, map[string]string{LabelPool: "desk", LabelMember: "desk-1", LabelHolder: HolderLabel("alice")}) {
		t.Errorf("labels = %v", l.Labels)
	}
	if !l.Spec.AcquireTime.Time.Equal(testNow) || !l.Spec.RenewTime.Time.Equal(testNow) {
		t.Errorf("acquire %v renew %v, want %v", l.Spec.AcquireTime, l.Spec.RenewTime, testNow)
	}

	later := testNow.Add(2 * time.Hour)
	moved := setLeaseHolder(l, ReconcilerIdentity, ReconcilerLeaseTTL, later)
	if *moved.Spec.HolderIdentity != ReconcilerIdentity || *moved.Spec.LeaseDurationSeconds != 600 || *moved.Spec.LeaseTransitions != 1 || !moved.Spec.RenewTime.Time.Equal(later) {
		t.Errorf("setLeaseHolder = %+v", moved.Spec)
	}
	if *l.Spec.HolderIdentity != "alice" {
		t.Errorf("setLeaseHolder changed its input")
	}
	renewed := renewLease(l, later)
	if *renewed.Spec.HolderIdentity != "alice" || !renewed.Spec.RenewTime.Time.Equal(later) || !renewed.Spec.AcquireTime.Time.Equal(testNow) {
		t.Errorf("renewLease = %+v", renewed.Spec)
	}

	cm := BuildConfigMap(testNS, "desk", baseSpec(2))
	if cm.Name != "corral-vdi-ctpool-desk" || cm.Labels[LabelPool] != "desk" || cm.Data[KeyStatus] != "" {
		t.Errorf("ConfigMap %s labels %v data %v", cm.Name, cm.Labels, cm.Data)
	}
	if s, err := ParseSpec(cm.Data[KeySpec]); err != nil || s.Size != 2 {
		t.Errorf("ConfigMap spec does not parse back: %v %+v", err, s)
	}
}

// A member that runs sleep infinity shares its Pod's PID namespace, so that
// sleep is not PID 1 and SIGTERM ends it; one with --init (its entrypoint is
// PID 1) and the microVM backends do not.
func TestBuildPodSharesPIDNamespaceForSleep(t *testing.T) {
	for _, tt := range []struct {
		name  string
		init  bool
		rt    *Runtime
		share bool
	}{
		{"sleep", false, nil, true},
		{"sleep with a runtime class", false, &Runtime{Backend: BackendStandard, RuntimeClassName: "kata"}, true},
		{"init", true, nil, false},
		{"sandboxd", false, &Runtime{Backend: BackendSandboxd, Template: "rt:24.04"}, false},
		{"cocoon", false, &Runtime{Backend: BackendCocoon, Image: "win11"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := Spec{Image: "desktop:1", Init: tt.init, Runtime: tt.rt}
			spec.Default()
			pod := BuildPod("ns", "desk", 1, spec)
			got := pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace
			if got != tt.share {
				t.Errorf("shareProcessNamespace = %v, want %v", got, tt.share)
			}
		})
	}
}
