package demo

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Markers on every object the simulation seeds, so that nobody takes the
// demo cluster for a real one.
const (
	labelSimulated      = "ctpool-tui.dev/simulated"
	annotationSimulated = "ctpool-tui.dev/demo"
	simulatedNote       = "simulated by ctpool-tui --demo; there is no real machine or cluster behind this object"
)

// Names of the seeded storage.
const (
	storageClassName = "standard"
	provisionerName  = "sim.ctpool-tui.dev/hostpath"
)

// flavour is what runs the Pods of a node.
type flavour int

const (
	flavourKubelet flavour = iota // an ordinary node: pulls images, runs containers
	flavourSandbox                // vk-sandbox: claims a pre-booted microVM
	flavourCocoon                 // vk-cocoon: boots a microVM
)

// nodeInfo is what the simulation keeps about a node besides the Node object.
type nodeInfo struct {
	flavour   flavour
	component string // the event source of its kubelet
	address   string // its InternalIP
	podCIDR   string // first three octets of its Pod IPs
	nextIP    int
	images    map[string]bool // pulled images
}

type nodeSeed struct {
	name      string
	flavour   flavour
	labels    map[string]string
	taints    []corev1.Taint
	cpu, mem  string
	pods      string
	address   string
	podCIDR   string
	component string
	version   string
	osImage   string
	runtime   string
}

func nodeSeeds() []nodeSeed {
	provider := func(v string) []corev1.Taint {
		return []corev1.Taint{{Key: engine.ProviderTaintKey, Value: v, Effect: corev1.TaintEffectNoSchedule}}
	}
	return []nodeSeed{
		{
			name: "node-a", flavour: flavourKubelet, cpu: "8", mem: "16Gi", pods: "110",
			labels:  map[string]string{"topology.kubernetes.io/zone": "sim-1", "node.kubernetes.io/instance-type": "sim.2xlarge"},
			address: "192.168.77.11", podCIDR: "10.244.1", component: "kubelet", version: "v1.37.2",
			osImage: "Ubuntu 24.04 LTS (simulated)", runtime: "containerd://2.1.4",
		},
		{
			name: "node-b", flavour: flavourKubelet, cpu: "8", mem: "16Gi", pods: "110",
			labels:  map[string]string{"topology.kubernetes.io/zone": "sim-2", "node.kubernetes.io/instance-type": "sim.2xlarge"},
			address: "192.168.77.12", podCIDR: "10.244.2", component: "kubelet", version: "v1.37.2",
			osImage: "Ubuntu 24.04 LTS (simulated)", runtime: "containerd://2.1.4",
		},
		{
			name: "vk-sandbox-0", flavour: flavourSandbox, cpu: "32", mem: "64Gi", pods: "110",
			labels:  map[string]string{engine.SandboxdNodeLabel: "sandboxd", "type": "virtual-kubelet", "kubernetes.io/role": "agent"},
			taints:  provider("sandboxd"),
			address: "192.168.77.21", podCIDR: "10.250.0", component: "vk-sandbox", version: "v1.37.2-vk-sandbox",
			osImage: "sandboxd microVM pool (simulated)", runtime: "sandboxd://simulated",
		},
		{
			name: "vk-cocoon-0", flavour: flavourCocoon, cpu: "64", mem: "256Gi", pods: "110",
			labels:  map[string]string{engine.CocoonNodeLabel: engine.CocoonDefaultPool, "type": "virtual-kubelet", "kubernetes.io/role": "agent"},
			taints:  provider("cocoon"),
			address: "192.168.77.31", podCIDR: "10.251.0", component: "vk-cocoon", version: "v1.37.2-vk-cocoon",
			osImage: "Cocoon microVMs (simulated)", runtime: "cocoon://simulated",
		},
	}
}

// seedCluster creates the namespace, the nodes and the default StorageClass.
func (s *Sim) seedCluster(ctx context.Context) error {
	marks := func() (map[string]string, map[string]string) {
		return map[string]string{labelSimulated: "true"}, map[string]string{annotationSimulated: simulatedNote}
	}
	for _, name := range s.Namespaces() {
		l, a := marks()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: a}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
		if _, err := s.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, n := range nodeSeeds() {
		l, a := marks()
		for k, v := range n.labels {
			l[k] = v
		}
		l[corev1.LabelHostname] = n.name
		l[corev1.LabelOSStable] = "linux"
		l[corev1.LabelArchStable] = "amd64"
		res := corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse(n.cpu),
			corev1.ResourceMemory:           resource.MustParse(n.mem),
			corev1.ResourcePods:             resource.MustParse(n.pods),
			corev1.ResourceEphemeralStorage: resource.MustParse("200Gi"),
		}
		now := metav1.NewTime(s.now)
		cond := func(t corev1.NodeConditionType, st corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
			return corev1.NodeCondition{Type: t, Status: st, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: l, Annotations: a},
			Spec:       corev1.NodeSpec{Taints: n.taints, PodCIDR: n.podCIDR + ".0/24"},
			Status: corev1.NodeStatus{
				Capacity: res, Allocatable: res.DeepCopy(),
				Phase: corev1.NodeRunning,
				Conditions: []corev1.NodeCondition{
					cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
					cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
					cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
					cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
				},
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.address}, {Type: corev1.NodeHostName, Address: n.name}},
				NodeInfo: corev1.NodeSystemInfo{
					KubeletVersion: n.version, OSImage: n.osImage, ContainerRuntimeVersion: n.runtime,
					KernelVersion: "6.8.0-sim", OperatingSystem: "linux", Architecture: "amd64",
				},
			},
		}
		if _, err := s.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return err
		}
		s.nodes[n.name] = &nodeInfo{flavour: n.flavour, component: n.component, address: n.address, podCIDR: n.podCIDR, nextIP: 2, images: map[string]bool{}}
	}
	l, a := marks()
	a["storageclass.kubernetes.io/is-default-class"] = "true"
	del := corev1.PersistentVolumeReclaimDelete
	mode := storagev1.VolumeBindingImmediate
	yes := true
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: storageClassName, Labels: l, Annotations: a},
		Provisioner:          provisionerName,
		ReclaimPolicy:        &del,
		VolumeBindingMode:    &mode,
		AllowVolumeExpansion: &yes,
	}
	_, err := s.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	return err
}

// demoPools are the pools a new simulation starts with.
func demoPools() []struct {
	name string
	spec engine.Spec
} {
	return []struct {
		name string
		spec engine.Spec
	}{
		{"desk", engine.Spec{Image: "ghcr.io/example/desktop:1", CPU: "1", Memory: "2Gi", Size: 5}},
		{"gpu", engine.Spec{
			// 12Gi each: five fit on vk-sandbox-0 (64Gi), the others are
			// Unschedulable with the scheduler's message.
			Image: "ghcr.io/example/cad:7", CPU: "4", Memory: "12Gi", Disk: "20Gi", Size: 8,
			Runtime: &engine.Runtime{Backend: engine.BackendSandboxd, Template: "ghcr.io/example/cad:7", Net: "none", Size: "large"},
		}},
		{"kiosk", engine.Spec{
			Image: "ubuntu-dev-base", CPU: "1", Memory: "2Gi", Size: 12,
			Runtime: &engine.Runtime{Backend: engine.BackendCocoon, Image: "ubuntu-dev-base"},
		}},
	}
}

// fleetPools are the pools of the other namespaces of a fleet demo
// (Options.Fleet): a team's desks and a floor's kiosks, kept by the
// reconciler only (the users and the trouble stay in the main namespace).
func fleetPools() []struct {
	namespace, name string
	spec            engine.Spec
} {
	return []struct {
		namespace, name string
		spec            engine.Spec
	}{
		{FleetNamespaces[0], "desk", engine.Spec{Image: "ghcr.io/example/cad-desktop:3", CPU: "1", Memory: "2Gi", Size: 3}},
		{FleetNamespaces[0], "render", engine.Spec{Image: "ghcr.io/example/render:1", CPU: "2", Memory: "4Gi", Size: 2}},
		{FleetNamespaces[1], "lobby", engine.Spec{Image: "ghcr.io/example/kiosk:3", CPU: "500m", Memory: "1Gi", Size: 4}},
	}
}

// seedPools applies the demo pools through the engine.
func (s *Sim) seedPools(ctx context.Context) error {
	for _, p := range demoPools() {
		if _, err := s.eng.Apply(ctx, p.name, p.spec); err != nil {
			return fmt.Errorf("apply %s: %w", p.name, err)
		}
	}
	if !s.opts.Fleet {
		return nil
	}
	for _, p := range fleetPools() {
		if _, err := s.engineIn(p.namespace).Apply(ctx, p.name, p.spec); err != nil {
			return fmt.Errorf("apply %s/%s: %w", p.namespace, p.name, err)
		}
	}
	return nil
}

// admit defaults a new object as the API server's defaulting and admission
// plugins would (DefaultStorageClass, DefaultTolerationSeconds, Pod defaults).
func admit(gvr schema.GroupVersionResource, obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		admitPod(o)
	case *corev1.PersistentVolumeClaim:
		if o.Spec.StorageClassName == nil {
			sc := storageClassName
			o.Spec.StorageClassName = &sc
		}
		if o.Spec.VolumeMode == nil {
			fs := corev1.PersistentVolumeFilesystem
			o.Spec.VolumeMode = &fs
		}
		o.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
	}
	_ = gvr
}

func admitPod(p *corev1.Pod) {
	sp := &p.Spec
	if sp.SchedulerName == "" {
		sp.SchedulerName = corev1.DefaultSchedulerName
	}
	if sp.DNSPolicy == "" {
		sp.DNSPolicy = corev1.DNSClusterFirst
	}
	if sp.ServiceAccountName == "" {
		sp.ServiceAccountName = "default"
	}
	if sp.RestartPolicy == "" {
		sp.RestartPolicy = corev1.RestartPolicyAlways
	}
	if sp.Priority == nil {
		zero := int32(0)
		sp.Priority = &zero
	}
	if sp.PreemptionPolicy == nil {
		pl := corev1.PreemptLowerPriority
		sp.PreemptionPolicy = &pl
	}
	if sp.SecurityContext == nil {
		sp.SecurityContext = &corev1.PodSecurityContext{}
	}
	for _, list := range [][]corev1.Container{sp.InitContainers, sp.Containers} {
		for i := range list {
			c := &list[i]
			if c.TerminationMessagePath == "" {
				c.TerminationMessagePath = corev1.TerminationMessagePathDefault
			}
			if c.TerminationMessagePolicy == "" {
				c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
			}
			if c.ImagePullPolicy == "" {
				c.ImagePullPolicy = corev1.PullIfNotPresent
				if ref := c.Image[strings.LastIndex(c.Image, "/")+1:]; !strings.Contains(ref, ":") || strings.HasSuffix(ref, ":latest") {
					c.ImagePullPolicy = corev1.PullAlways
				}
			}
		}
	}
	secs := int64(300)
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		found := false
		for _, t := range sp.Tolerations {
			if t.Key == key {
				found = true
			}
		}
		if !found {
			sp.Tolerations = append(sp.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs})
		}
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(p)}
}

// qosClass is Guaranteed when every container's requests equal its limits
// for cpu and memory, BestEffort without any, Burstable otherwise.
func qosClass(p *corev1.Pod) corev1.PodQOSClass {
	any, guaranteed := false, true
	for _, c := range p.Spec.Containers {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if hasReq || hasLim {
				any = true
			}
			if !hasLim || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
