package kube

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// TestFleetSnapshotsIgnoreUnlabelledObjects: a client that ignores label
// selectors fills the fleet's caches with objects of no pool; the
// snapshots hold only the pools' objects, as GroupByNamespace groups them.
func TestFleetSnapshotsIgnoreUnlabelledObjects(t *testing.T) {
	pool := poolIn("vdi-eng", "desk", 2)
	unlabelledPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "vdi-eng"}}
	emptyLabelPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "vdi-eng",
		Labels: map[string]string{engine.LabelPool: ""}}}
	unlabelledCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: "vdi-cad"}}
	// Labelled for pool desk, but not its definition (another name).
	notDefinition := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "desk-notes", Namespace: "vdi-eng",
		Labels: map[string]string{engine.LabelPool: "desk"}}}

	client := fake.NewClientset()
	lists := map[string]func() runtime.Object{
		"pods":                   func() runtime.Object { return &corev1.PodList{} },
		"configmaps":             func() runtime.Object { return &corev1.ConfigMapList{} },
		"persistentvolumeclaims": func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
	}
	extra := []runtime.Object{unlabelledPod, emptyLabelPod, unlabelledCM, notDefinition}
	all := append(append([]runtime.Object{}, pool...), extra...)
	for resource, newList := range lists {
		client.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
			l := newList()
			switch l := l.(type) {
			case *corev1.PodList:
				for _, o := range all {
					if p, ok := o.(*corev1.Pod); ok {
						l.Items = append(l.Items, *p)
					}
				}
			case *corev1.ConfigMapList:
				for _, o := range all {
					if c, ok := o.(*corev1.ConfigMap); ok {
						l.Items = append(l.Items, *c)
					}
				}
			case *corev1.PersistentVolumeClaimList:
				for _, o := range all {
					if c, ok := o.(*corev1.PersistentVolumeClaim); ok {
						l.Items = append(l.Items, *c)
					}
				}
			}
			return true, l, nil
		})
	}

	w := NewFleetWatcher(client, nil, withClock(func() time.Time { return t0 }), withProbeInterval(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !w.WaitForSync(ctx) {
		t.Fatal("caches did not sync within 10s")
	}
	// The caches hold objects of no pool (the client ignored the selector).
	if _, ok, _ := w.fleet[0].Pods.GetStore().GetByKey("vdi-eng/web-2"); !ok {
		t.Fatal("the Pod with an empty pool label is not in the cache")
	}
	if _, ok, _ := w.fleet[0].ConfigMaps.GetStore().GetByKey("vdi-eng/desk-notes"); !ok {
		t.Fatal("the labelled ConfigMap that is no definition is not in the cache")
	}
	snaps := w.Snapshots()
	if got, want := fleetSummary(snaps), "vdi-eng/desk:2"; got != want {
		t.Errorf("Snapshots = %s, want %s", got, want)
	}
	if len(snaps) == 1 && snaps[0].ConfigMap.Name != engine.ConfigMapName("desk") {
		t.Errorf("the pool's definition is %s", snaps[0].ConfigMap.Name)
	}
}
