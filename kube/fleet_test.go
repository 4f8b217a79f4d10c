package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// poolIn is a pool of n members in namespace (member 1 claimed).
func poolIn(namespace, pool string, n int) []runtime.Object {
	spec := engine.Spec{Image: "ghcr.io/example/desktop:1", Size: n}
	spec.Default()
	objs := []runtime.Object{engine.BuildConfigMap(namespace, pool, spec)}
	for i := 1; i <= n; i++ {
		objs = append(objs, engine.BuildPod(namespace, pool, i, spec), engine.BuildPVC(namespace, pool, i, spec))
	}
	return append(objs, engine.ClaimLease(namespace, pool, engine.MemberName(pool, 1), "alice@example.com", t0))
}

// fleetObjects: a pool desk in vdi-eng (2 members) and in vdi-cad (1), a
// pool kiosk in kiosk (3), and an unlabelled ConfigMap.
func fleetObjects() []runtime.Object {
	objs := append(poolIn("vdi-eng", "desk", 2), poolIn("vdi-cad", "desk", 1)...)
	objs = append(objs, poolIn("kiosk", "kiosk", 3)...)
	return append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: "vdi-eng"}})
}

// fleetSummary names each snapshot "namespace/pool:pods" in order.
func fleetSummary(snaps []engine.Snapshot) string {
	var parts []string
	for _, s := range snaps {
		cm := ""
		if s.ConfigMap == nil || s.ConfigMap.Namespace != s.Namespace {
			cm = "!cm"
		}
		for _, p := range s.Pods {
			if p.Namespace != s.Namespace {
				cm += "!pod"
			}
		}
		parts = append(parts, fmt.Sprintf("%s/%s:%d%s", s.Namespace, s.Pool, len(s.Pods), cm))
	}
	return strings.Join(parts, " ")
}

func TestFleetWatcherMergesNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces []string
		want       string
	}{
		{"all namespaces", nil, "kiosk/kiosk:3 vdi-cad/desk:1 vdi-eng/desk:2"},
		{"two namespaces", []string{"vdi-eng", "kiosk"}, "kiosk/kiosk:3 vdi-eng/desk:2"},
		{"a namespace without pools", []string{"vdi-cad", "empty"}, "vdi-cad/desk:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(fleetObjects()...)
			w := NewFleetWatcher(client, tc.namespaces, withClock(func() time.Time { return t0 }))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if !w.WaitForSync(ctx) {
				t.Fatal("caches did not sync within 10s")
			}
			if !w.Fleet() {
				t.Fatal("Fleet() is false")
			}
			if got := fleetSummary(w.Snapshots()); got != tc.want {
				t.Errorf("Snapshots = %s, want %s", got, tc.want)
			}
			listed, err := ListFleet(ctx, client, tc.namespaces)
			if err != nil {
				t.Fatal(err)
			}
			if got := fleetSummary(listed); got != tc.want {
				t.Errorf("ListFleet = %s, want %s", got, tc.want)
			}
			// The cache serves each namespace's pool to the engine by namespace.
			for _, snap := range w.Snapshots() {
				one, err := w.In(snap.Namespace).Snapshot(ctx, snap.Pool)
				if err != nil || one.Namespace != snap.Namespace || len(one.Pods) != len(snap.Pods) {
					t.Errorf("In(%s).Snapshot(%s) = %s, %v; want %d pods", snap.Namespace, snap.Pool, fleetSummary([]engine.Snapshot{one}), err, len(snap.Pods))
				}
			}
			if _, err := w.Snapshot(ctx, "desk"); err == nil {
				t.Error("Snapshot without a namespace on a fleet cache: no error")
			}
			if tc.namespaces != nil {
				if _, err := w.In("elsewhere").Snapshot(ctx, "desk"); err == nil {
					t.Error("In a namespace the fleet does not watch: no error")
				}
			}
		})
	}
}

// denyLists refuses List calls in the namespaces for which deny is true
// ("" is a cluster-wide List), as an API server refuses an identity
// without the RoleBinding.
func denyLists(client *fake.Clientset, deny func(ns string) bool) {
	client.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !deny(a.GetNamespace()) {
			return false, nil, nil
		}
		gr := schema.GroupResource{Group: a.GetResource().Group, Resource: a.GetResource().Resource}
		return true, nil, apierrors.NewForbidden(gr, "", errors.New("RBAC: access denied"))
	})
}

func TestCheckListable(t *testing.T) {
	allowed := map[string]bool{"vdi-eng": true, "kiosk": true}
	for _, tc := range []struct {
		name       string
		namespaces []string
		wantNS     string // the namespace the refusal names; "-" when allowed
		wantWords  []string
	}{
		{"cluster-wide refused", nil, "", []string{"all namespaces", "-n NAMESPACE", "--namespaces a,b,c"}},
		{"allowed namespaces", []string{"vdi-eng", "kiosk"}, "-", nil},
		{"one namespace refused", []string{"vdi-eng", "vdi-cad"}, "vdi-cad", []string{"namespace vdi-cad", "--namespaces"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(fleetObjects()...)
			denyLists(client, func(ns string) bool { return !allowed[ns] })
			err := CheckListable(context.Background(), client, tc.namespaces)
			if tc.wantNS == "-" {
				if err != nil {
					t.Fatalf("CheckListable = %v, want nil", err)
				}
				return
			}
			var lf *ListForbiddenError
			if !errors.As(err, &lf) || lf.Namespace != tc.wantNS {
				t.Fatalf("CheckListable = %v, want a ListForbiddenError for namespace %q", err, tc.wantNS)
			}
			if !errors.Is(err, engine.ErrForbidden) {
				t.Error("the refusal does not match engine.ErrForbidden")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("the hint is not one line: %q", msg)
			}
			for _, w := range tc.wantWords {
				if !strings.Contains(msg, w) {
					t.Errorf("hint %q lacks %q", msg, w)
				}
			}
			// The one-shot read fails the same way.
			if _, err := ListFleet(context.Background(), client, tc.namespaces); !errors.As(err, &lf) {
				t.Errorf("ListFleet = %v, want a ListForbiddenError", err)
			}
		})
	}
}

func TestParseNamespaces(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"a,b,c", "a b c", false},
		{" a , b,,a ", "a b", false},
		{"", "", true},
		{",", "", true},
		{"a,B_c", "", true},
	} {
		got, err := ParseNamespaces(tc.in)
		if (err != nil) != tc.wantErr || strings.Join(got, " ") != tc.want {
			t.Errorf("ParseNamespaces(%q) = %v, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
