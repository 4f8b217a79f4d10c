//go:build integration

package kube

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// The real API server's protobuf lists of Pods and PVCs, read one object at
// a time (streamedLists), equal client-go's lists of the same objects once
// stripped for the cache, read at the same resourceVersion, with the same
// label selection; and the answer is read as a stream, not left to client-go.
func TestIntegrationStreamedListsEqualTheClientsLists(t *testing.T) {
	env := kubetest.Require(t)
	ctx := t.Context()
	ns := env.Namespace
	spec := engine.Spec{Image: "registry.example/desktop:1", CPU: "1m", Memory: "1Mi", Disk: "1Gi", Size: 4}
	spec.Default()
	for _, pool := range []string{"desk", "art"} {
		for i := 1; i <= 4; i++ {
			if _, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, engine.BuildPVC(ns, pool, i, spec), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, engine.BuildPod(ns, pool, i, spec), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rc, ok := env.Client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok {
		t.Fatalf("the client's REST client is a %T", env.Client.CoreV1().RESTClient())
	}
	streamed := streamedLists{env.Client}.CoreV1()
	for _, tc := range []struct {
		name     string
		selector string
		want     int
	}{
		{"all", "", 8},
		{"one pool", engine.LabelPool + "=desk", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Both read at one resourceVersion (the plane's scheduler and
			// kwok keep changing the Pods), as of a first list.
			first, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: tc.selector})
			if err != nil {
				t.Fatal(err)
			}
			opts := metav1.ListOptions{LabelSelector: tc.selector, ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact}
			// Read as a stream: the answer is protobuf and decoded here.
			var meta metav1.ListMeta
			items := 0
			handled, err := streamList(ctx, rc, ns, "pods", opts, &meta, func([]byte) error { items++; return nil })
			if !handled || err != nil {
				t.Fatalf("streamList: handled %v, err %v", handled, err)
			}
			if items != tc.want || meta.ResourceVersion == "" {
				t.Fatalf("streamList: %d items, list resourceVersion %q; want %d and one", items, meta.ResourceVersion, tc.want)
			}

			gotPods, err := streamed.Pods(ns).List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			wantPods, err := env.Client.CoreV1().Pods(ns).List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			comparePods(t, gotPods.Items, wantPods.Items, tc.want)

			gotPVCs, err := streamed.PersistentVolumeClaims(ns).List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			wantPVCs, err := env.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(gotPVCs.Items) != tc.want || len(wantPVCs.Items) != tc.want {
				t.Fatalf("%d PVCs streamed, %d listed; want %d", len(gotPVCs.Items), len(wantPVCs.Items), tc.want)
			}
			for i := range wantPVCs.Items {
				w := wantPVCs.Items[i].DeepCopy()
				if _, err := StripForCache(w); err != nil {
					t.Fatal(err)
				}
				if g := gotPVCs.Items[i]; !reflect.DeepEqual(&g, w) {
					t.Errorf("PVC %s streamed differs from the client's, stripped:\n%+v\n%+v", w.Name, g, *w)
				}
			}
		})
	}
}

// comparePods checks that got (streamed) equals want (client-go's) once
// stripped, item by item in the API server's order.
func comparePods(t *testing.T, got, want []corev1.Pod, n int) {
	t.Helper()
	if len(got) != n || len(want) != n {
		t.Fatalf("%d Pods streamed, %d listed; want %d", len(got), len(want), n)
	}
	names := func(ps []corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	if !slices.Equal(names(got), names(want)) {
		t.Fatalf("streamed %v, listed %v", names(got), names(want))
	}
	for i := range want {
		w := want[i].DeepCopy()
		if _, err := StripForCache(w); err != nil {
			t.Fatal(err)
		}
		if g := got[i]; !reflect.DeepEqual(&g, w) {
			t.Errorf("Pod %s streamed differs from the client's, stripped:\n%+v\n%+v", w.Name, g, *w)
		}
	}
}
