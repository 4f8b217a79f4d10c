package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// These tests use the client-go fake clientset. It does not enforce
// resourceVersion compare-and-swap or delete preconditions, so those
// semantics are tested on the engine's in-memory fake (engine/fake_test.go)
// and on a real API server (the integration tests). Here we check what the
// kube layer sends and how it maps what comes back.

const clusterNS = "corral-test"

var clusterNow = time.Date(2026, 1, 10, 8, 0, 0, 0, time.UTC)

func clusterSpec(size int) engine.Spec {
	s := engine.Spec{Image: "ghcr.io/example/desktop:1", Size: size}
	s.Default()
	return s
}

// poolObjs returns the definition, members and a claim of a pool in clusterNS.
func poolObjs(pool string, members int) []runtime.Object {
	spec := clusterSpec(members)
	objs := []runtime.Object{engine.BuildConfigMap(clusterNS, pool, spec)}
	for n := 1; n <= members; n++ {
		objs = append(objs, engine.BuildPod(clusterNS, pool, n, spec), engine.BuildPVC(clusterNS, pool, n, spec))
	}
	return append(objs, engine.ClaimLease(clusterNS, pool, engine.MemberName(pool, 1), "alice", clusterNow))
}

// writeActions are the recorded actions that are not reads.
func writeActions(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		name := ""
		if n, ok := a.(interface{ GetName() string }); ok {
			name = n.GetName()
		}
		if cr, ok := a.(k8stesting.CreateAction); ok {
			if m, ok := cr.GetObject().(metav1.Object); ok {
				name = m.GetName()
			}
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+" "+name)
	}
	return out
}

func TestSnapshotSelectsThePool(t *testing.T) {
	objs := append(poolObjs("desk", 2), poolObjs("art", 3)...)
	objs = append(objs,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "desk-9", Namespace: clusterNS}}, // no label
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "scratch", Namespace: clusterNS}},
		// A Lease named for desk-9 is its claim, labelled or not; one
		// named for desk-2-1 is pool desk-2's, not desk's; the others are
		// no claim.
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "corral-vdi-ct-desk-9", Namespace: clusterNS}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "corral-vdi-ct-desk-2-1", Namespace: clusterNS}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: clusterNS}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: clusterNS}},
		// the same pool in another namespace
		engine.BuildPod("elsewhere", "desk", 3, clusterSpec(3)),
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "corral-vdi-ct-desk-2", Namespace: "elsewhere"}},
	)
	c := NewCluster(fake.NewClientset(objs...), clusterNS)

	tests := []struct {
		pool                       string
		wantCM                     bool
		wantPods, wantPVCs, wantLs []string
	}{
		{"desk", true, []string{"desk-1", "desk-2"}, []string{"desk-1-data", "desk-2-data"}, []string{"corral-vdi-ct-desk-1", "corral-vdi-ct-desk-9"}},
		{"desk-2", false, nil, nil, []string{"corral-vdi-ct-desk-2-1"}},
		{"art", true, []string{"art-1", "art-2", "art-3"}, []string{"art-1-data", "art-2-data", "art-3-data"}, []string{"corral-vdi-ct-art-1"}},
		{"none", false, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.pool, func(t *testing.T) {
			s, err := c.Snapshot(context.Background(), tt.pool)
			if err != nil {
				t.Fatalf("Snapshot: %v", err)
			}
			if s.Pool != tt.pool || s.Namespace != clusterNS || (s.ConfigMap != nil) != tt.wantCM {
				t.Fatalf("snapshot %s/%s, ConfigMap %v", s.Namespace, s.Pool, s.ConfigMap != nil)
			}
			if tt.wantCM && s.ConfigMap.Name != engine.ConfigMapName(tt.pool) {
				t.Fatalf("ConfigMap %s", s.ConfigMap.Name)
			}
			var pods, pvcs, leases []string
			for _, p := range s.Pods {
				pods = append(pods, p.Name)
			}
			for _, p := range s.PVCs {
				pvcs = append(pvcs, p.Name)
			}
			for _, l := range s.Leases {
				leases = append(leases, l.Name)
			}
			for _, l := range [][]string{pods, pvcs, leases} {
				sort.Strings(l)
			}
			if fmt.Sprint(pods, pvcs, leases) != fmt.Sprint(tt.wantPods, tt.wantPVCs, tt.wantLs) {
				t.Fatalf("got %v %v %v, want %v %v %v", pods, pvcs, leases, tt.wantPods, tt.wantPVCs, tt.wantLs)
			}
		})
	}
}

func TestSnapshotMapsErrors(t *testing.T) {
	tests := []struct {
		name, verb, resource string
		err                  error
		want                 error
	}{
		{"forbidden ConfigMap", "get", "configmaps", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no")), engine.ErrForbidden},
		{"forbidden Pods", "list", "pods", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")), engine.ErrForbidden},
		{"PVCs fail", "list", "persistentvolumeclaims", errors.New("connection refused"), nil},
		{"Leases forbidden", "list", "leases", apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", errors.New("no")), engine.ErrForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(poolObjs("desk", 1)...)
			cs.PrependReactor(tt.verb, tt.resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tt.err })
			_, err := NewCluster(cs, clusterNS).Snapshot(context.Background(), "desk")
			if err == nil || !errors.Is(err, tt.err) {
				t.Fatalf("Snapshot = %v, want %v", err, tt.err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Snapshot = %v, not mapped to %v", err, tt.want)
			}
		})
	}
}

func TestMapError(t *testing.T) {
	gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	plain := errors.New("connection reset")
	tests := []struct {
		name string
		err  error
		want error // nil: returned unchanged
	}{
		{"conflict", apierrors.NewConflict(gr, "l", errors.New("rv")), engine.ErrConflict},
		{"already exists", apierrors.NewAlreadyExists(gr, "l"), engine.ErrAlreadyExists},
		{"not found", apierrors.NewNotFound(gr, "l"), engine.ErrNotFound},
		{"forbidden", apierrors.NewForbidden(gr, "l", errors.New("rbac")), engine.ErrForbidden},
		{"wrapped conflict", fmt.Errorf("update: %w", apierrors.NewConflict(gr, "l", errors.New("rv"))), engine.ErrConflict},
		{"other API error", apierrors.NewInternalError(errors.New("etcd")), nil},
		{"bad request", apierrors.NewBadRequest("no"), nil},
		{"plain error", plain, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MapError(tt.err)
			if !errors.Is(got, tt.err) {
				t.Fatalf("MapError(%v) lost the original", tt.err)
			}
			if got.Error() != tt.err.Error() {
				t.Fatalf("message %q, want %q", got.Error(), tt.err.Error())
			}
			if tt.want == nil {
				if got != tt.err {
					t.Fatalf("MapError changed an unmapped error: %#v", got)
				}
				for _, s := range []error{engine.ErrConflict, engine.ErrAlreadyExists, engine.ErrNotFound, engine.ErrForbidden} {
					if errors.Is(got, s) {
						t.Fatalf("matches %v", s)
					}
				}
				return
			}
			if !errors.Is(got, tt.want) {
				t.Fatalf("MapError(%v) does not match %v", tt.err, tt.want)
			}
			// apierrors' own predicates still work on the mapped error.
			if apierrors.ReasonForError(got) != apierrors.ReasonForError(tt.err) {
				t.Fatalf("reason %q, want %q", apierrors.ReasonForError(got), apierrors.ReasonForError(tt.err))
			}
			if again := MapError(got); again != got {
				t.Fatal("mapping twice wraps again")
			}
		})
	}
	if MapError(nil) != nil {
		t.Fatal("MapError(nil) != nil")
	}
}

func TestClusterWrites(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(poolObjs("desk", 1)...)
	c := NewCluster(cs, clusterNS)

	t.Run("CreateLease twice", func(t *testing.T) {
		l := engine.ReconcilerLease(clusterNS, "desk", "desk-2", clusterNow)
		if _, err := c.CreateLease(ctx, l); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateLease(ctx, l); !errors.Is(err, engine.ErrAlreadyExists) {
			t.Fatalf("second CreateLease = %v", err)
		}
	})

	t.Run("Create of existing Pod and PVC", func(t *testing.T) {
		if _, err := c.CreatePod(ctx, engine.BuildPod(clusterNS, "desk", 1, clusterSpec(1))); !errors.Is(err, engine.ErrAlreadyExists) {
			t.Fatalf("CreatePod = %v", err)
		}
		if _, err := c.CreatePVC(ctx, engine.BuildPVC(clusterNS, "desk", 1, clusterSpec(1))); !errors.Is(err, engine.ErrAlreadyExists) {
			t.Fatalf("CreatePVC = %v", err)
		}
	})

	t.Run("deletes of missing objects succeed", func(t *testing.T) {
		for name, del := range map[string]func() error{
			"Pod":       func() error { return c.DeletePod(ctx, "desk-7", "uid") },
			"PVC":       func() error { return c.DeletePVC(ctx, "desk-7-data", "") },
			"Lease":     func() error { return c.DeleteLease(ctx, "corral-vdi-ct-desk-7", "5") },
			"Service":   func() error { return c.DeleteService(ctx, "desk-7-console") },
			"ConfigMap": func() error { return c.DeleteConfigMap(ctx, "corral-vdi-ctpool-nope", "") },
		} {
			if err := del(); err != nil {
				t.Errorf("delete missing %s: %v", name, err)
			}
		}
	})

	t.Run("AnnotatePVC set and remove", func(t *testing.T) {
		v := "alice"
		if err := c.AnnotatePVC(ctx, "desk-1-data", engine.AnnotationAssignedTo, &v); err != nil {
			t.Fatal(err)
		}
		pvc, _ := cs.CoreV1().PersistentVolumeClaims(clusterNS).Get(ctx, "desk-1-data", metav1.GetOptions{})
		if pvc.Annotations[engine.AnnotationAssignedTo] != "alice" || pvc.Labels[engine.LabelPool] != "desk" {
			t.Fatalf("annotations %v labels %v", pvc.Annotations, pvc.Labels)
		}
		if err := c.AnnotatePVC(ctx, "desk-1-data", engine.AnnotationAssignedTo, nil); err != nil {
			t.Fatal(err)
		}
		pvc, _ = cs.CoreV1().PersistentVolumeClaims(clusterNS).Get(ctx, "desk-1-data", metav1.GetOptions{})
		if _, ok := pvc.Annotations[engine.AnnotationAssignedTo]; ok {
			t.Fatalf("annotation not removed: %v", pvc.Annotations)
		}
		if err := c.AnnotatePVC(ctx, "desk-8-data", engine.AnnotationAssignedTo, &v); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("AnnotatePVC of a missing PVC = %v", err)
		}
	})

	t.Run("PatchConfigMapData keeps the spec", func(t *testing.T) {
		name := engine.ConfigMapName("desk")
		before, _ := cs.CoreV1().ConfigMaps(clusterNS).Get(ctx, name, metav1.GetOptions{})
		if err := c.PatchConfigMapData(ctx, name, engine.KeyStatus, "desired: 1\n"); err != nil {
			t.Fatal(err)
		}
		after, _ := cs.CoreV1().ConfigMaps(clusterNS).Get(ctx, name, metav1.GetOptions{})
		if after.Data[engine.KeySpec] != before.Data[engine.KeySpec] || after.Data[engine.KeyStatus] != "desired: 1\n" {
			t.Fatalf("data %v", after.Data)
		}
		if err := c.PatchConfigMapData(ctx, "corral-vdi-ctpool-nope", engine.KeyStatus, "x"); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("patch of a missing ConfigMap = %v", err)
		}
	})

	t.Run("updates need a resourceVersion", func(t *testing.T) {
		l := engine.ClaimLease(clusterNS, "desk", "desk-1", "alice", clusterNow)
		if _, err := c.UpdateLease(ctx, l); err == nil || !strings.Contains(err.Error(), "no resourceVersion to compare with") {
			t.Fatalf("UpdateLease without rv = %v", err)
		}
		if err := c.PatchConfigMap(ctx, engine.ConfigMapName("desk"), "", nil, map[string]string{engine.KeySpec: "x"}); err == nil || !strings.Contains(err.Error(), "no resourceVersion to compare with") {
			t.Fatalf("PatchConfigMap without rv = %v", err)
		}
	})
}

// The preconditions and the CAS are sent to the API server; its answers are mapped.
func TestClusterSendsPreconditions(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(poolObjs("desk", 1)...)
	var deletes []metav1.DeleteOptions
	cs.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		deletes = append(deletes, a.(k8stesting.DeleteAction).GetDeleteOptions())
		return false, nil, nil
	})
	cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "corral-vdi-ct-desk-1", errors.New("the object has been modified"))
	})
	c := NewCluster(cs, clusterNS)

	if err := c.DeletePod(ctx, "desk-1", "uid-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteLease(ctx, "corral-vdi-ct-desk-1", "42"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeletePVC(ctx, "desk-1-data", ""); err != nil {
		t.Fatal(err)
	}
	if len(deletes) != 3 {
		t.Fatalf("%d deletes", len(deletes))
	}
	if p := deletes[0].Preconditions; p == nil || p.UID == nil || *p.UID != "uid-1" || p.ResourceVersion != nil {
		t.Fatalf("Pod delete preconditions %+v", p)
	}
	if p := deletes[1].Preconditions; p == nil || p.ResourceVersion == nil || *p.ResourceVersion != "42" || p.UID != nil {
		t.Fatalf("Lease delete preconditions %+v", p)
	}
	if deletes[2].Preconditions != nil {
		t.Fatalf("PVC delete without uid sent preconditions %+v", deletes[2].Preconditions)
	}

	l := engine.ClaimLease(clusterNS, "desk", "desk-1", "alice", clusterNow)
	l.ResourceVersion = "7"
	if _, err := c.UpdateLease(ctx, l); !errors.Is(err, engine.ErrConflict) || !apierrors.IsConflict(err) {
		t.Fatalf("UpdateLease = %v, want ErrConflict", err)
	}

	// The definition is written with a merge patch that carries the
	// resourceVersion read (the API server's compare-and-swap), not an update.
	var patch string
	cs.PrependReactor("patch", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		if pa.GetPatchType() != types.MergePatchType {
			t.Errorf("patch type %s", pa.GetPatchType())
		}
		patch = string(pa.GetPatch())
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, pa.GetName(), errors.New("the object has been modified"))
	})
	err := c.PatchConfigMap(ctx, engine.ConfigMapName("desk"), "41", map[string]string{engine.LabelPool: "desk"}, map[string]string{engine.KeySpec: "image: x\n"})
	if !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("PatchConfigMap = %v, want ErrConflict", err)
	}
	want := `{"data":{"spec":"image: x\n"},"metadata":{"labels":{"corral.dev/vdi-ct-pool":"desk"},"resourceVersion":"41"}}`
	if patch != want {
		t.Fatalf("patch\n got %s\nwant %s", patch, want)
	}
}

func TestWaitGone(t *testing.T) {
	spec := clusterSpec(1)
	pod := engine.BuildPod(clusterNS, "desk", 1, spec)
	pod.UID = "uid-1"

	t.Run("already gone", func(t *testing.T) {
		c := NewCluster(fake.NewClientset(), clusterNS)
		if err := c.WaitGone(context.Background(), engine.KindPVC, "desk-1-data", ""); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("replaced by another UID", func(t *testing.T) {
		c := NewCluster(fake.NewClientset(pod), clusterNS)
		if err := c.WaitGone(context.Background(), engine.KindPod, "desk-1", "uid-0"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("deleted while waiting", func(t *testing.T) {
		other := engine.BuildPod(clusterNS, "desk", 2, spec)
		cs := fake.NewClientset(pod, other)
		watching := make(chan struct{})
		cs.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
			w, err := cs.Tracker().Watch(a.GetResource(), a.GetNamespace(), a.(k8stesting.WatchActionImpl).ListOptions)
			close(watching)
			return true, w, err
		})
		c := NewCluster(cs, clusterNS)
		done := make(chan error, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		go func() { done <- c.WaitGone(ctx, engine.KindPod, "desk-1", "uid-1") }()
		<-watching
		// A delete of another Pod does not end the wait.
		if err := cs.CoreV1().Pods(clusterNS).Delete(ctx, "desk-2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Fatalf("WaitGone returned %v after another Pod was deleted", err)
		default:
		}
		if err := cs.CoreV1().Pods(clusterNS).Delete(ctx, "desk-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("WaitGone = %v", err)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		c := NewCluster(fake.NewClientset(pod), clusterNS)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if err := c.WaitGone(ctx, engine.KindPod, "desk-1", "uid-1"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitGone = %v", err)
		}
	})

	t.Run("without watch permission: polls, does not spin", func(t *testing.T) {
		old := watchRetryInterval
		watchRetryInterval = 30 * time.Millisecond
		defer func() { watchRetryInterval = old }()
		cs := fake.NewClientset(pod)
		var gets, watches atomic.Int64
		cs.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			gets.Add(1)
			return false, nil, nil
		})
		forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("cannot watch"))
		cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			watches.Add(1)
			return true, nil, forbidden
		})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := NewCluster(cs, clusterNS).WaitGone(ctx, engine.KindPod, "desk-1", "uid-1"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitGone = %v", err)
		}
		if g := gets.Load(); g < 2 || g > 5 {
			t.Fatalf("%d Gets in 100ms with a 30ms retry interval", g)
		}

		// The delete is still seen, by the next Get.
		cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			if err := cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), clusterNS, "desk-1"); err != nil {
				return true, nil, err
			}
			return true, nil, forbidden
		})
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		if err := NewCluster(cs, clusterNS).WaitGone(ctx2, engine.KindPod, "desk-1", "uid-1"); err != nil {
			t.Fatalf("WaitGone after the delete = %v", err)
		}
	})

	t.Run("unknown kind", func(t *testing.T) {
		c := NewCluster(fake.NewClientset(), clusterNS)
		if err := c.WaitGone(context.Background(), engine.Kind("Secret"), "x", ""); err == nil {
			t.Fatal("no error for an unknown kind")
		}
	})
}

// The whole engine over kube.Cluster on the fake clientset.
func TestEngineOverFakeClientset(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	e := &engine.Engine{Cluster: NewCluster(cs, clusterNS), Namespace: clusterNS, Now: func() time.Time { return clusterNow }}

	res, err := e.Apply(ctx, "desk", engine.Spec{Image: "ghcr.io/example/desktop:1", Size: 3})
	if err != nil || !res.Created || res.Reconcile.Done() != 3 {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	pods, _ := cs.CoreV1().Pods(clusterNS).List(ctx, metav1.ListOptions{})
	pvcs, _ := cs.CoreV1().PersistentVolumeClaims(clusterNS).List(ctx, metav1.ListOptions{})
	leases, _ := cs.CoordinationV1().Leases(clusterNS).List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 3 || len(pvcs.Items) != 3 || len(leases.Items) != 0 {
		t.Fatalf("%d pods, %d pvcs, %d leases; want 3, 3, 0", len(pods.Items), len(pvcs.Items), len(leases.Items))
	}
	w := writeActions(cs)
	if w[0] != "create configmaps corral-vdi-ctpool-desk" || w[len(w)-1] != "patch configmaps corral-vdi-ctpool-desk" {
		t.Fatalf("writes %v", w)
	}
	if n := strings.Count(strings.Join(w, "\n"), "create leases"); n != 3 {
		t.Fatalf("%d reconciler Leases taken, want 3: %v", n, w)
	}

	cs.ClearActions()
	rr, err := e.Reconcile(ctx, "desk")
	if err != nil {
		t.Fatalf("second Reconcile: %v", err)
	}
	if w := writeActions(cs); len(w) != 0 || rr.StatusWritten {
		t.Fatalf("second reconcile wrote: %v", w)
	}

	// A claim over the clientset: the first writer creates the Lease.
	cl, err := e.Claim(ctx, "desk", "alice@example.com")
	if err != nil || cl.Member == "" {
		t.Fatalf("Claim = %+v, %v", cl, err)
	}
	l, err := cs.CoordinationV1().Leases(clusterNS).Get(ctx, engine.LeaseName(cl.Member), metav1.GetOptions{})
	if err != nil || *l.Spec.HolderIdentity != "alice@example.com" || l.Labels[engine.LabelPool] != "desk" {
		t.Fatalf("claim Lease %+v, %v", l, err)
	}
	if _, err := e.Claim(ctx, "desk", "bob"); err != nil {
		t.Fatalf("second identity: %v", err)
	}
	v := engine.Observe(mustSnapshot(t, e), clusterNow)
	if v.Status.Claimed != 2 || v.Status.Free != 1 {
		t.Fatalf("status after claims %+v", v.Status)
	}

	// Deleting a pool that does not exist succeeds.
	if _, err := e.Delete(ctx, "empty"); err != nil {
		t.Fatalf("Delete of a missing pool: %v", err)
	}
}

func mustSnapshot(t *testing.T, e *engine.Engine) engine.Snapshot {
	t.Helper()
	s, err := e.Cluster.Snapshot(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A Cluster with a Reader answers Snapshot from it and makes no request.
func TestSnapshotFromReader(t *testing.T) {
	cs := fake.NewClientset()
	want := engine.Snapshot{Namespace: clusterNS, Pool: "desk", Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "desk-1"}}}}
	c := &Cluster{Client: cs, Namespace: clusterNS, Reader: readerFunc(func(context.Context, string) (engine.Snapshot, error) { return want, nil })}
	got, err := c.Snapshot(context.Background(), "desk")
	if err != nil || len(got.Pods) != 1 || len(cs.Actions()) != 0 {
		t.Fatalf("Snapshot = %+v, %v; %d requests", got, err, len(cs.Actions()))
	}
	if PoolSelector("desk") != "corral.dev/vdi-ct-pool=desk" {
		t.Fatalf("selector %q", PoolSelector("desk"))
	}
}

type readerFunc func(context.Context, string) (engine.Snapshot, error)

func (f readerFunc) Snapshot(ctx context.Context, pool string) (engine.Snapshot, error) {
	return f(ctx, pool)
}

// A cached Lease carries its write time in a managed-fields entry of its
// own (StripForCache); an update from it sends no managed fields, which the
// API server reads as "keep them".
func TestUpdateLeaseSendsNoManagedFields(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	l := engine.ReconcilerLease(clusterNS, "desk", "desk-1", now)
	l.ResourceVersion = "7"
	at := metav1.NewTime(now)
	l.ManagedFields = []metav1.ManagedFieldsEntry{{Time: &at}}
	cs := fake.NewClientset(l.DeepCopy())
	var sent []metav1.ManagedFieldsEntry
	cs.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sent = a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).ManagedFields
		return false, nil, nil
	})
	if _, err := NewCluster(cs, clusterNS).UpdateLease(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if sent != nil {
		t.Fatalf("the update sent managed fields %+v", sent)
	}
	if len(l.ManagedFields) != 1 {
		t.Fatalf("the caller's Lease lost its managed fields: %+v", l.ManagedFields)
	}
}
