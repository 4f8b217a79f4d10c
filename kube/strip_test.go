package kube

import (
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// stripped runs StripForCache on a copy.
func stripped[T any, PT interface {
	*T
	DeepCopy() PT
}](tb testing.TB, o PT) PT {
	tb.Helper()
	out, err := StripForCache(o.DeepCopy())
	if err != nil {
		tb.Fatal(err)
	}
	return out.(PT)
}

// TestStripKeepsWhatIsRead checks that the engine and the dashboard see the
// same pool through a stripped cache: Observe and Diagnose give the same
// answers, and each field the dashboard shows is kept, for members in every
// state the decision table knows.
func TestStripKeepsWhatIsRead(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	spec := engine.Spec{Image: "ghcr.io/example/desktop:2", Size: 8}
	spec.Default()
	crash := func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s"}}
		p.Status.ContainerStatuses[0].RestartCount = 7
	}
	unschedulable := func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/4 nodes are available: 4 Insufficient cpu."}}}
	}
	failed := func(p *corev1.Pod) {
		p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "ProviderCreateFailed", "no warm capacity"
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	terminating := func(p *corev1.Pod) {
		ts := metav1.NewTime(now.Add(-time.Minute))
		p.DeletionTimestamp = &ts
		p.Finalizers = []string{"example.com/hold"}
	}
	sandboxd := func(p *corev1.Pod) {
		p.Annotations[engine.SandboxdAnnotationTemplate] = "desktop"
		p.Annotations[engine.SandboxdAnnotationClaimID] = "c-123"
		p.Spec.NodeSelector = map[string]string{engine.SandboxdNodeLabel: "sandboxd"}
		p.Spec.NodeName = "vk-sandbox-0"
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: engine.ProviderTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		p.Status.Phase = corev1.PodPending // starting on the virtual node, which it tolerates
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}
	}
	initWaiting := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "rootfs", Image: spec.Image, Command: []string{"sh"}}}
		p.Status.Phase = corev1.PodPending
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "rootfs", Image: spec.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not found"}}}}
	}
	mutations := []func(*corev1.Pod){nil, crash, unschedulable, failed, terminating, sandboxd, initWaiting}

	snap := engine.Snapshot{Namespace: ns, Pool: "desk", ConfigMap: engine.BuildConfigMap(ns, "desk", spec)}
	cached := snap
	for i, mutate := range mutations {
		n := i + 1
		p := kubeletPod(n, spec, now)
		if mutate != nil {
			mutate(p)
		}
		c := boundPVC(n, spec, now)
		if n == 2 {
			who := "alice@example.com"
			c.Annotations[engine.AnnotationAssignedTo] = who
			snap.Leases = append(snap.Leases, claimLease(n, now))
		}
		if n == 3 {
			c.Annotations[engine.AnnotationReleased] = "true"
			c.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending} // no capacity yet
		}
		snap.Pods = append(snap.Pods, p)
		snap.PVCs = append(snap.PVCs, c)
	}
	for _, p := range snap.Pods {
		cached.Pods = append(cached.Pods, stripped(t, p))
	}
	for _, c := range snap.PVCs {
		cached.PVCs = append(cached.PVCs, stripped(t, c))
	}
	for _, l := range snap.Leases {
		cached.Leases = append(cached.Leases, stripped(t, l))
	}
	cached.ConfigMap = stripped(t, snap.ConfigMap)

	want, got := engine.Observe(snap, now), engine.Observe(cached, now)
	if !reflect.DeepEqual(want.Status, got.Status) {
		t.Fatalf("status through the cache\n got %+v\nwant %+v", got.Status, want.Status)
	}
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "vk-sandbox-0", Labels: map[string]string{engine.SandboxdNodeLabel: "sandboxd"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: engine.ProviderTaintKey, Value: "sandboxd", Effect: corev1.TaintEffectNoSchedule}}}}}
	for i := range want.Members {
		w, g := &want.Members[i], &got.Members[i]
		if w.State != g.State || w.Message != g.Message || w.Drift != g.Drift || w.Free != g.Free || w.Node != g.Node ||
			!w.Created.Equal(g.Created) || !reflect.DeepEqual(w.Problems, g.Problems) || !reflect.DeepEqual(w.Claim, g.Claim) {
			t.Errorf("%s through the cache:\n got %+v\nwant %+v", w.Name, g, w)
		}
		if dw, dg := engine.Diagnose(w, nil, nodes, nil), engine.Diagnose(g, nil, nodes, nil); !reflect.DeepEqual(dw, dg) {
			t.Errorf("%s diagnosis through the cache:\n got %+v\nwant %+v", w.Name, dg, dw)
		}
		if w.Pod == nil { // the Missing member
			continue
		}
		// What the detail pane shows of the Pod and the PVC.
		wp, gp := w.Pod, g.Pod
		if !reflect.DeepEqual(wp.Status.Conditions, gp.Status.Conditions) || wp.Status.Phase != gp.Status.Phase ||
			wp.Spec.Containers[0].Image != gp.Spec.Containers[0].Image || wp.DeletionTimestamp != gp.DeletionTimestamp && !wp.DeletionTimestamp.Equal(gp.DeletionTimestamp) {
			t.Errorf("%s: the Pod's phase, conditions, image or deletion changed", w.Name)
		}
		for j, cs := range wp.Status.ContainerStatuses {
			gs := gp.Status.ContainerStatuses[j]
			if cs.Name != gs.Name || cs.Ready != gs.Ready || cs.RestartCount != gs.RestartCount || cs.Image != gs.Image || !reflect.DeepEqual(cs.State, gs.State) {
				t.Errorf("%s: container status %+v became %+v", w.Name, cs, gs)
			}
		}
		wc, gc := w.PVC, g.PVC
		if wc.Name != gc.Name || wc.UID != gc.UID || wc.Status.Phase != gc.Status.Phase || *wc.Spec.StorageClassName != *gc.Spec.StorageClassName ||
			wc.Annotations[engine.AnnotationAssignedTo] != gc.Annotations[engine.AnnotationAssignedTo] {
			t.Errorf("%s: the PVC's name, UID, phase, class or assignment changed", w.Name)
		}
		if q, ok := wc.Status.Capacity[corev1.ResourceStorage]; ok {
			if g := gc.Status.Capacity[corev1.ResourceStorage]; g.Cmp(q) != 0 {
				t.Errorf("%s: capacity %v became %v", w.Name, q, g)
			}
		} else if q, g := wc.Spec.Resources.Requests[corev1.ResourceStorage], gc.Spec.Resources.Requests[corev1.ResourceStorage]; g.Cmp(q) != 0 {
			t.Errorf("%s: request %v became %v", w.Name, q, g)
		}
	}
}

// TestStripDropsBulk checks what goes: managed fields everywhere; from Pods
// and PVCs the bookkeeping annotations and the spec and status nobody reads.
// Other annotations stay.
func TestStripDropsBulk(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	spec := engine.Spec{Image: "ghcr.io/example/desktop:2", Size: 1}
	spec.Default()
	p := kubeletPod(1, spec, now)
	p.Annotations["example.com/keep"] = "yes"
	sp := stripped(t, p)
	if sp.ManagedFields != nil {
		t.Error("Pod managedFields kept")
	}
	if want := map[string]string{"example.com/keep": "yes"}; !reflect.DeepEqual(sp.Annotations, want) {
		t.Errorf("Pod annotations %v, want %v", sp.Annotations, want)
	}
	if len(sp.Spec.Volumes) != 0 || len(sp.Spec.TopologySpreadConstraints) != 0 || sp.Spec.Containers[0].Resources.Requests != nil ||
		sp.Spec.Containers[0].Command != nil || len(sp.Spec.Containers[0].VolumeMounts) != 0 || sp.Spec.SecurityContext != nil {
		t.Errorf("Pod spec kept unread fields: %+v", sp.Spec)
	}
	cs := sp.Status.ContainerStatuses[0]
	if cs.ImageID != "" || cs.ContainerID != "" || cs.AllocatedResources != nil || cs.Resources != nil || cs.User != nil ||
		cs.VolumeMounts != nil || sp.Status.PodIPs != nil || sp.Status.HostIPs != nil || sp.Status.StartTime != nil {
		t.Errorf("Pod status kept unread fields: %+v", sp.Status)
	}
	if sp.Name != p.Name || sp.UID != p.UID || sp.ResourceVersion != p.ResourceVersion || !reflect.DeepEqual(sp.Labels, p.Labels) {
		t.Error("Pod identity or labels changed")
	}

	c := boundPVC(1, spec, now)
	sc := stripped(t, c)
	if sc.ManagedFields != nil || sc.Annotations != nil || sc.Spec.VolumeName != "" || sc.Spec.AccessModes != nil ||
		sc.Spec.Resources.Requests != nil || sc.Status.AccessModes != nil {
		t.Errorf("PVC kept unread fields: %+v", sc)
	}
	if !reflect.DeepEqual(sc.Finalizers, c.Finalizers) || sc.Status.Capacity.Storage().Cmp(resource.MustParse(spec.Disk)) != 0 {
		t.Errorf("PVC lost its finalizers or capacity: %+v", sc)
	}

	// Leases and ConfigMaps are updated from cached copies: all but the
	// managed fields stays, the last-applied annotation too; each keeps the
	// time of its last write, the latest of its managed fields'.
	l := claimLease(4, now)
	l.Annotations = map[string]string{lastAppliedAnnotation: "{}"}
	later := metav1.NewTime(l.CreationTimestamp.Add(90 * time.Second))
	l.ManagedFields = append(l.ManagedFields, metav1.ManagedFieldsEntry{Manager: "broker", Operation: metav1.ManagedFieldsOperationUpdate, Time: &later})
	sl := stripped(t, l)
	wantLease := l.DeepCopy()
	wantLease.ManagedFields = []metav1.ManagedFieldsEntry{{Time: &later}}
	if !reflect.DeepEqual(sl, wantLease) {
		t.Errorf("Lease changed beyond its managedFields:\n got %+v\nwant %+v", sl, wantLease)
	}
	if w := engine.LeaseWritten(sl); !w.Equal(later.Time) {
		t.Errorf("a cached Lease was last written at %s, want %s", w, later.Time)
	}
	noTime := claimLease(5, now)
	noTime.ManagedFields = nil
	if sl := stripped(t, noTime); sl.ManagedFields != nil {
		t.Errorf("a Lease with no managed fields gained some: %+v", sl.ManagedFields)
	}
	cm := engine.BuildConfigMap(ns, "desk", spec)
	cm.Annotations = map[string]string{lastAppliedAnnotation: "{}"}
	cm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}, {Manager: "ctpool-tui", Time: &later}}
	scm := stripped(t, cm)
	wantCM := cm.DeepCopy()
	wantCM.ManagedFields = []metav1.ManagedFieldsEntry{{Time: &later}}
	if !reflect.DeepEqual(scm, wantCM) {
		t.Errorf("ConfigMap changed beyond its managedFields:\n got %+v\nwant %+v", scm, wantCM)
	}
	if w := engine.Written(scm); !w.Equal(later.Time) {
		t.Errorf("a cached ConfigMap was last written at %s, want %s (a rollout starts then)", w, later.Time)
	}

	// Stripping twice changes nothing more; a tombstone's object is stripped.
	if again := stripped(t, sp); !reflect.DeepEqual(again, sp) {
		t.Error("a second strip changed the Pod")
	}
	out, err := StripForCache(cache.DeletedFinalStateUnknown{Key: "vdi/desk-1-data", Obj: c.DeepCopy()})
	if err != nil {
		t.Fatal(err)
	}
	if tc := out.(cache.DeletedFinalStateUnknown).Obj.(*corev1.PersistentVolumeClaim); tc.Annotations != nil || tc.ManagedFields != nil {
		t.Error("the tombstone's PVC was not stripped")
	}
	var _ *coordinationv1.Lease = sl
}
