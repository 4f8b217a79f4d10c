package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// streamPods is a list of n member Pods in full, as the API server sends
// them: managed fields, a spec and a status the cache strips.
func streamPods(n int) *corev1.PodList {
	spec := engine.Spec{Image: "ghcr.io/example/desktop:2", Size: n}
	spec.Default()
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "4711"}}
	for i := 1; i <= n; i++ {
		p := engine.BuildPod("vdi", "desk", i, spec)
		p.TypeMeta = metav1.TypeMeta{}
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", HostIP: "127.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		l.Items = append(l.Items, *p)
	}
	return l
}

func protobufBytes(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decodePods decodes a protobuf Pod list as streamedPods.List does.
func decodePods(b []byte) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := decodeList(bufio.NewReader(bytes.NewReader(b)), &out.ListMeta, func(b []byte) error {
		var p corev1.Pod
		if err := p.Unmarshal(b); err != nil {
			return err
		}
		_, err := StripForCache(&p)
		out.Items = append(out.Items, p)
		return err
	})
	return out, err
}

// strippedList is what the cache keeps of each item of l, once sent (in
// protobuf, which has no empty map or slice apart from a nil one).
func strippedList(t *testing.T, l *corev1.PodList) *corev1.PodList {
	out := &corev1.PodList{ListMeta: l.ListMeta}
	for i := range l.Items {
		b, err := l.Items[i].Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var sent corev1.Pod
		if err := sent.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		out.Items = append(out.Items, *stripped(t, &sent))
	}
	return out
}

// differ reports whether two lists differ, naming the first item that does.
func differ[T any](got, want []T, gotMeta, wantMeta metav1.ListMeta) string {
	if !reflect.DeepEqual(gotMeta, wantMeta) {
		return fmt.Sprintf("list metadata %+v, want %+v", gotMeta, wantMeta)
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d items, want %d", len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			return fmt.Sprintf("item %d:\n%+v\nwant\n%+v", i, got[i], want[i])
		}
	}
	return ""
}

func TestDecodeList(t *testing.T) {
	full := streamPods(3)
	whole := protobufBytes(t, full)
	for _, tc := range []struct {
		name  string
		in    []byte
		want  *corev1.PodList
		error string
	}{
		{name: "three Pods", in: whole, want: strippedList(t, full)},
		{name: "no Pods", in: protobufBytes(t, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}}),
			want: &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}}},
		{name: "content type after the list", in: append(append([]byte(nil), whole...), 0x22, 3, 'a', 'b', 'c'), want: strippedList(t, full)},
		{name: "cut in an item", in: whole[:len(whole)-10], error: "unexpected EOF"},
		{name: "cut in the magic", in: whole[:2], error: "unexpected EOF"},
		{name: "JSON", in: []byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`), error: "not a protobuf object"},
		{name: "no list", in: []byte{0x6b, 0x38, 0x73, 0x00}, error: "no object"},
		{name: "an item's length past the list", in: []byte{0x6b, 0x38, 0x73, 0x00, 0x12, 3, 0x12, 9, 0}, error: "a field of 9 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodePods(tc.in)
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("error %v, want one with %q", err, tc.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := differ(got.Items, tc.want.Items, got.ListMeta, tc.want.ListMeta); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// apiServer answers the lists of Pods and PVCs of namespace vdi in the
// format asked for, unless answer says otherwise, and counts the requests.
type apiServer struct {
	pods     *corev1.PodList
	pvcs     *corev1.PersistentVolumeClaimList
	answer   string // "" as asked, "json" always JSON, "forbidden"
	requests atomic.Int64
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.requests.Add(1)
	var obj runtime.Object
	switch r.URL.Path {
	case "/api/v1/namespaces/vdi/pods":
		obj = a.pods
	case "/api/v1/namespaces/vdi/persistentvolumeclaims":
		obj = a.pvcs
	default:
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("labelSelector") != engine.LabelPool {
		http.Error(w, "want the pool label selector, got "+r.URL.RawQuery, http.StatusBadRequest)
		return
	}
	if a.answer == "forbidden" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(&apierrors.NewForbidden(corev1.Resource("pods"), "", nil).ErrStatus)
		return
	}
	if a.answer == "" && strings.HasPrefix(r.Header.Get("Accept"), protobufType) {
		w.Header().Set("Content-Type", protobufType)
		_ = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	gvks, _, _ := scheme.Scheme.ObjectKinds(obj)
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	_ = json.NewEncoder(w).Encode(obj)
}

func TestStreamedLists(t *testing.T) {
	pods := streamPods(4)
	pvc := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "desk-1-data", Namespace: "vdi",
		Labels:      map[string]string{engine.LabelPool: "desk"},
		Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", "note": "kept"}},
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	pvcs := &corev1.PersistentVolumeClaimList{ListMeta: metav1.ListMeta{ResourceVersion: "4711"}, Items: []corev1.PersistentVolumeClaim{pvc}}
	wantPVC := *stripped(t, &pvc)
	for _, tc := range []struct {
		name         string
		answer       string
		protobuf     bool // the client asks for protobuf
		wantStripped bool // decoded here, stripped
		wantRequests int64
		wantError    func(error) bool
	}{
		{name: "protobuf, decoded as it arrives", protobuf: true, wantStripped: true, wantRequests: 2},
		{name: "a client of JSON: protobuf asked all the same", protobuf: false, wantStripped: true, wantRequests: 2},
		{name: "JSON answered: client-go's List", answer: "json", protobuf: true, wantRequests: 4},
		{name: "refused: client-go's error", answer: "forbidden", protobuf: true, wantRequests: 4, wantError: apierrors.IsForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &apiServer{pods: pods, pvcs: pvcs, answer: tc.answer}
			srv := httptest.NewServer(api)
			defer srv.Close()
			cfg := &rest.Config{Host: srv.URL}
			if tc.protobuf {
				cfg.ContentType = protobufType
				cfg.AcceptContentTypes = protobufType + ",application/json"
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := streamedLists{cs}
			opts := metav1.ListOptions{LabelSelector: engine.LabelPool, ResourceVersion: "0", Limit: 500}
			gotPods, errPods := c.CoreV1().Pods("vdi").List(context.Background(), opts)
			gotPVCs, errPVCs := c.CoreV1().PersistentVolumeClaims("vdi").List(context.Background(), opts)
			if got := api.requests.Load(); got != tc.wantRequests {
				t.Errorf("%d requests, want %d", got, tc.wantRequests)
			}
			if tc.wantError != nil {
				if !tc.wantError(errPods) || !tc.wantError(errPVCs) {
					t.Fatalf("errors %v, %v", errPods, errPVCs)
				}
				return
			}
			if errPods != nil || errPVCs != nil {
				t.Fatalf("errors %v, %v", errPods, errPVCs)
			}
			if !tc.wantStripped { // client-go's List: every item, whole
				if len(gotPods.Items) != len(pods.Items) || len(gotPods.Items[0].ManagedFields) == 0 ||
					len(gotPVCs.Items) != 1 || gotPVCs.Items[0].Spec.VolumeName != pvc.Spec.VolumeName {
					t.Errorf("lists %+v and %+v, want them whole", gotPods, gotPVCs)
				}
				return
			}
			wantPods := strippedList(t, pods)
			wantPVCs := &corev1.PersistentVolumeClaimList{ListMeta: pvcs.ListMeta, Items: []corev1.PersistentVolumeClaim{wantPVC}}
			if d := differ(gotPods.Items, wantPods.Items, gotPods.ListMeta, wantPods.ListMeta); d != "" {
				t.Errorf("Pods: %s", d)
			}
			if d := differ(gotPVCs.Items, wantPVCs.Items, gotPVCs.ListMeta, wantPVCs.ListMeta); d != "" {
				t.Errorf("PVCs: %s", d)
			}
		})
	}
}

// A client without a REST client of its own (a fake) lists its own way.
func TestStreamedListsFake(t *testing.T) {
	p := streamPods(1).Items[0]
	c := streamedLists{fake.NewClientset(&p)}
	got, err := c.CoreV1().Pods("vdi").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(got.Items) != 1 || !reflect.DeepEqual(got.Items[0], p) {
		t.Fatalf("List = %+v, %v; want the Pod unchanged", got, err)
	}
}
