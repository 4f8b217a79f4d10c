package kube

import (
	"context"
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"sort"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	krand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// BenchmarkInformerCacheBytes measures the heap that the Watcher's informer
// caches hold for realistic pool objects, with and without StripForCache.
//
// The objects are what a live cluster returns for a member: a Pod as the
// API server defaults it and a kubelet reports it (managedFields of four
// managers, conditions and containerStatuses, kubectl's last-applied
// annotation and a CNI plugin's annotations), its PVC as the PV controller
// binds it, one claim Lease per four members, and the pool ConfigMap. They
// reach the informers as they do from the API server: decoded from protobuf
// for every List, so that nothing in the cache shares memory with the test.
// The heap is measured after a forced GC before the informers start and
// after their caches synced; bytes/member is the difference per member.
func BenchmarkInformerCacheBytes(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		wire := encodePool(b, n)
		for _, mode := range []string{"raw", "transformed"} {
			b.Run(fmt.Sprintf("members=%d/%s", n, mode), func(b *testing.B) {
				var total float64
				for b.Loop() {
					total += cacheBytes(b, wire, mode == "transformed")
				}
				b.ReportMetric(total/float64(b.N)/float64(n), "bytes/member")
			})
		}
	}
}

// wirePool is one pool's objects as protobuf List bodies.
type wirePool struct {
	members                int
	cms, pods, pvcs, lease []byte
}

func encodePool(tb testing.TB, n int) wirePool {
	tb.Helper()
	spec := engine.Spec{Image: "ghcr.io/example/desktop:2", Size: n}
	spec.Default()
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	cms := &corev1.ConfigMapList{Items: []corev1.ConfigMap{*engine.BuildConfigMap(ns, "desk", spec)}}
	pods := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "90000000"}}
	pvcs := &corev1.PersistentVolumeClaimList{ListMeta: metav1.ListMeta{ResourceVersion: "90000000"}}
	leases := &coordinationv1.LeaseList{ListMeta: metav1.ListMeta{ResourceVersion: "90000000"}}
	for i := 1; i <= n; i++ {
		pods.Items = append(pods.Items, *kubeletPod(i, spec, now))
		pvcs.Items = append(pvcs.Items, *boundPVC(i, spec, now))
		if i%4 == 0 {
			leases.Items = append(leases.Items, *claimLease(i, now))
		}
	}
	w := wirePool{members: n}
	var err error
	for _, e := range []struct {
		out *[]byte
		m   interface{ Marshal() ([]byte, error) }
	}{{&w.cms, cms}, {&w.pods, pods}, {&w.pvcs, pvcs}, {&w.lease, leases}} {
		if *e.out, err = e.m.Marshal(); err != nil {
			tb.Fatal(err)
		}
	}
	return w
}

// cacheBytes starts the Watcher's four informers (with or without the
// transform) on a client that decodes the wire lists, and returns the heap
// their caches hold once synced.
func cacheBytes(b *testing.B, w wirePool, transform bool) float64 {
	b.Helper()
	client := fake.NewClientset()
	list := func(resource string, body []byte, into interface{ Unmarshal([]byte) error }) {
		client.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
			obj := into.(runtime.Object).DeepCopyObject() // a fresh, empty list of the type
			if err := obj.(interface{ Unmarshal([]byte) error }).Unmarshal(body); err != nil {
				return true, nil, err
			}
			return true, obj, nil
		})
	}
	list("configmaps", w.cms, &corev1.ConfigMapList{})
	list("pods", w.pods, &corev1.PodList{})
	list("persistentvolumeclaims", w.pvcs, &corev1.PersistentVolumeClaimList{})
	list("leases", w.lease, &coordinationv1.LeaseList{})

	// The factory exactly as NewWatcher builds it, but for the transform.
	opts := []informers.SharedInformerOption{
		informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = engine.LabelPool }),
	}
	if transform {
		opts = append(opts, informers.WithTransform(StripForCache))
	}
	before := heapInUse()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	core := factory.Core().V1()
	infs := []cache.SharedIndexInformer{core.ConfigMaps().Informer(), core.Pods().Informer(),
		core.PersistentVolumeClaims().Informer(), factory.Coordination().V1().Leases().Informer()}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	for _, inf := range infs {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			b.Fatal("caches did not sync")
		}
	}
	if got := len(infs[1].GetStore().List()); got != w.members {
		b.Fatalf("%d Pods in the cache, want %d", got, w.members)
	}
	after := heapInUse()
	goruntime.KeepAlive(infs)
	cancel()
	factory.Shutdown()
	return float64(after - before)
}

func heapInUse() uint64 {
	var ms goruntime.MemStats
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// kubeletPod is member i's Pod as a live cluster stores it: created with
// kubectl apply from the engine's manifest, defaulted by the API server,
// bound by the scheduler, annotated by a CNI plugin and reported on by the
// kubelet.
func kubeletPod(i int, spec engine.Spec, now time.Time) *corev1.Pod {
	p := engine.BuildPod(ns, "desk", i, spec)
	applied, _ := json.Marshal(p)
	created := now.Add(-time.Duration(i) * time.Second)
	node := fmt.Sprintf("worker-%02d.example.internal", i%40)
	hostIP := fmt.Sprintf("10.0.%d.%d", i%40, 10+i%200)
	podIP := fmt.Sprintf("10.244.%d.%d", i%40, i%250)
	p.UID = types.UID(uuidFor("pod", i))
	p.ResourceVersion = fmt.Sprint(80000000 + i)
	p.Generation = 1
	p.CreationTimestamp = metav1.NewTime(created)
	p.Annotations = map[string]string{
		lastAppliedAnnotation:               string(applied),
		"cni.projectcalico.org/containerID": krand.String(64),
		"cni.projectcalico.org/podIP":       podIP + "/32",
		"cni.projectcalico.org/podIPs":      podIP + "/32",
	}
	// API server defaults.
	s := &p.Spec
	s.DNSPolicy = corev1.DNSClusterFirst
	s.SchedulerName = corev1.DefaultSchedulerName
	s.ServiceAccountName = "default"
	s.DeprecatedServiceAccount = "default"
	s.SecurityContext = &corev1.PodSecurityContext{}
	s.Priority = new(int32)
	pp := corev1.PreemptLowerPriority
	s.PreemptionPolicy = &pp
	secs := int64(300)
	s.Tolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
	}
	s.NodeName = node
	for j := range s.Containers {
		c := &s.Containers[j]
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		c.ImagePullPolicy = corev1.PullIfNotPresent
	}
	// The kubelet's status.
	t := func(d time.Duration) metav1.Time { return metav1.NewTime(created.Add(d)) }
	started := true
	st := &p.Status
	st.Phase = corev1.PodRunning
	st.ObservedGeneration = 1
	st.QOSClass = corev1.PodQOSGuaranteed
	st.HostIP, st.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	st.PodIP, st.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
	start := t(time.Second)
	st.StartTime = &start
	for _, c := range []struct {
		typ corev1.PodConditionType
		at  time.Duration
	}{{"PodReadyToStartContainers", 3 * time.Second}, {corev1.PodInitialized, time.Second}, {corev1.PodReady, 4 * time.Second},
		{corev1.ContainersReady, 4 * time.Second}, {corev1.PodScheduled, 0}} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: c.typ, Status: corev1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: t(c.at)})
	}
	res := s.Containers[0].Resources
	st.ContainerStatuses = []corev1.ContainerStatus{{
		Name:        engine.ContainerName,
		State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t(3 * time.Second)}},
		Ready:       true,
		Image:       spec.Image,
		ImageID:     "ghcr.io/example/desktop@sha256:" + krand.String(64),
		ContainerID: "containerd://" + krand.String(64),
		Started:     &started,
		AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: res.Requests[corev1.ResourceCPU],
			corev1.ResourceMemory: res.Requests[corev1.ResourceMemory]},
		Resources:    res.DeepCopy(),
		VolumeMounts: []corev1.VolumeMountStatus{{Name: engine.DataVolume, MountPath: "/data"}},
		User: &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{
			SupplementalGroups: []int64{0, 1, 2, 3, 4, 6, 10, 11, 20, 26, 27}}},
	}}

	p.ManagedFields = []metav1.ManagedFieldsEntry{
		managed("kubectl-client-side-apply", "", created, map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{lastAppliedAnnotation: ""}, "labels": p.Labels},
			"spec":     toJSONMap(s),
		}),
		managed("calico", "status", created.Add(2*time.Second), map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{
				"cni.projectcalico.org/containerID": "", "cni.projectcalico.org/podIP": "", "cni.projectcalico.org/podIPs": ""}},
		}),
		managed("kubelet", "status", created.Add(4*time.Second), map[string]any{"status": toJSONMap(st)}),
	}
	return p
}

// boundPVC is member i's PVC after the PV controller bound it.
func boundPVC(i int, spec engine.Spec, now time.Time) *corev1.PersistentVolumeClaim {
	c := engine.BuildPVC(ns, "desk", i, spec)
	created := now.Add(-time.Duration(i) * time.Second)
	c.UID = types.UID(uuidFor("pvc", i))
	c.ResourceVersion = fmt.Sprint(70000000 + i)
	c.CreationTimestamp = metav1.NewTime(created)
	c.Finalizers = []string{"kubernetes.io/pvc-protection"}
	c.Annotations = map[string]string{
		"pv.kubernetes.io/bind-completed":               "yes",
		"pv.kubernetes.io/bound-by-controller":          "yes",
		"volume.beta.kubernetes.io/storage-provisioner": "ebs.csi.aws.com",
		"volume.kubernetes.io/storage-provisioner":      "ebs.csi.aws.com",
		"volume.kubernetes.io/selected-node":            fmt.Sprintf("worker-%02d.example.internal", i%40),
	}
	sc := "gp3"
	fs := corev1.PersistentVolumeFilesystem
	c.Spec.StorageClassName, c.Spec.VolumeMode = &sc, &fs
	c.Spec.VolumeName = "pvc-" + uuidFor("pv", i)
	c.Status = corev1.PersistentVolumeClaimStatus{
		Phase:       corev1.ClaimBound,
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(spec.Disk)},
	}
	c.ManagedFields = []metav1.ManagedFieldsEntry{
		managed("ctpool-tui", "", created, map[string]any{"metadata": map[string]any{"labels": c.Labels}, "spec": map[string]any{
			"accessModes": nil, "resources": map[string]any{"requests": map[string]any{"storage": ""}}, "volumeMode": ""}}),
		managed("kube-scheduler", "", created.Add(time.Second), map[string]any{"metadata": map[string]any{"annotations": map[string]any{
			"volume.kubernetes.io/selected-node": ""}}}),
		managed("kube-controller-manager", "", created.Add(2*time.Second), map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"pv.kubernetes.io/bind-completed": "", "pv.kubernetes.io/bound-by-controller": "",
				"volume.beta.kubernetes.io/storage-provisioner": "", "volume.kubernetes.io/storage-provisioner": ""}},
			"spec": map[string]any{"volumeName": ""}}),
		managed("kube-controller-manager", "status", created.Add(2*time.Second), map[string]any{"status": toJSONMap(&c.Status)}),
	}
	return c
}

func claimLease(i int, now time.Time) *coordinationv1.Lease {
	member := engine.MemberName("desk", i)
	l := engine.ClaimLease(ns, "desk", member, fmt.Sprintf("user%d@example.com", i), now.Add(-time.Duration(i)*time.Second))
	l.UID = types.UID(uuidFor("lease", i))
	l.ResourceVersion = fmt.Sprint(60000000 + i)
	l.CreationTimestamp = metav1.NewTime(l.Spec.AcquireTime.Time)
	l.ManagedFields = []metav1.ManagedFieldsEntry{managed("ctpool-tui", "", l.CreationTimestamp.Time, map[string]any{
		"metadata": map[string]any{"labels": l.Labels}, "spec": toJSONMap(&l.Spec)})}
	return l
}

func uuidFor(kind string, i int) string {
	h := fmt.Sprintf("%08x", i) + fmt.Sprintf("%x", kind+"-uuid-padding-padding")
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func toJSONMap(v any) map[string]any {
	raw, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// managed returns a managedFields entry that owns the fields of owned, in
// the FieldsV1 form the API server writes (f:<field>, k:{...} for keyed list
// items, "." for an item itself).
func managed(manager, subresource string, at time.Time, owned map[string]any) metav1.ManagedFieldsEntry {
	raw, _ := json.Marshal(fieldSet("", owned))
	t := metav1.NewTime(at)
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: &t, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}, Subresource: subresource}
}

// listKeys are the merge keys of the keyed lists (the others are atomic).
var listKeys = map[string]string{"containers": "name", "volumes": "name", "volumeMounts": "mountPath",
	"conditions": "type", "podIPs": "ip", "hostIPs": "ip", "topologySpreadConstraints": "topologyKey"}

func fieldSet(field string, v any) map[string]any {
	out := map[string]any{}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out["f:"+k] = fieldSet(k, x[k])
		}
	case map[string]string:
		for k := range x {
			out["f:"+k] = map[string]any{}
		}
	case []any:
		key, ok := listKeys[field]
		if !ok {
			return out
		}
		for _, item := range x {
			m, _ := item.(map[string]any)
			id, _ := json.Marshal(map[string]any{key: m[key]})
			child := fieldSet("", m)
			child["."] = map[string]any{}
			out["k:"+string(id)] = child
		}
	}
	return out
}
