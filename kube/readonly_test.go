package kube

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// countingServer answers every GET with an empty list of its kind and counts requests by method.
type countingServer struct {
	mu      sync.Mutex
	methods map[string]int
}

func (s *countingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.methods[r.Method]++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Pod", "apiVersion": "v1", "metadata": map[string]any{"name": "written"}})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "List", "apiVersion": "v1", "metadata": map[string]any{}, "items": []any{}})
}

func (s *countingServer) count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.methods[method]
}

func (s *countingServer) nonGET() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for m, c := range s.methods {
		if m != http.MethodGet {
			n += c
		}
	}
	return n
}

func TestReadOnly(t *testing.T) {
	srv := &countingServer{methods: map[string]int{}}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	base := &rest.Config{Host: ts.URL}
	wrapped := 0
	base.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { wrapped++; return rt }
	cfg, guard := ReadOnly(base)
	if base.WrapTransport == nil || cfg == base {
		t.Fatal("ReadOnly changed the config it was given")
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if wrapped == 0 {
		t.Fatal("the previous WrapTransport was dropped")
	}
	ctx := context.Background()

	if _, err := cs.CoreV1().Pods("vdi").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("List through the read-only config: %v", err)
	}
	if _, err := NewCluster(cs, "vdi").Snapshot(ctx, "desk"); err != nil {
		t.Fatalf("Snapshot through the read-only config: %v", err)
	}
	if guard.Refused() != 0 {
		t.Fatalf("reads were refused: %d", guard.Refused())
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	writes := []struct {
		name string
		do   func() error
	}{
		{"create", func() error { _, err := cs.CoreV1().Pods("vdi").Create(ctx, pod, metav1.CreateOptions{}); return err }},
		{"update", func() error { _, err := cs.CoreV1().Pods("vdi").Update(ctx, pod, metav1.UpdateOptions{}); return err }},
		{"patch", func() error {
			_, err := cs.CoreV1().Pods("vdi").Patch(ctx, "p", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
			return err
		}},
		{"delete", func() error { return cs.CoreV1().Pods("vdi").Delete(ctx, "p", metav1.DeleteOptions{}) }},
		{"delete collection", func() error {
			return cs.CoreV1().Pods("vdi").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		}},
		{"engine: create lease", func() error {
			_, err := NewCluster(cs, "vdi").CreateLease(ctx, engine.ClaimLease("vdi", "desk", "desk-1", "alice", clusterNow))
			return err
		}},
		{"engine: delete pod", func() error { return NewCluster(cs, "vdi").DeletePod(ctx, "desk-1", "") }},
	}
	for i, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			err := w.do()
			if !errors.Is(err, ErrReadOnly) {
				t.Fatalf("%s = %v, want ErrReadOnly", w.name, err)
			}
			if got := guard.Refused(); got != int64(i+1) {
				t.Fatalf("Refused() = %d, want %d", got, i+1)
			}
		})
	}
	if n := srv.nonGET(); n != 0 {
		t.Fatalf("the server saw %d non-GET requests", n)
	}
	if srv.count(http.MethodGet) < 1 {
		t.Fatal("the List did not reach the server")
	}

	// The original config still writes.
	rw, err := kubernetes.NewForConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	_ = rw.CoreV1().Pods("vdi").Delete(ctx, "p", metav1.DeleteOptions{})
	if srv.nonGET() != 1 {
		t.Fatalf("the writable config sent %d non-GET requests, want 1", srv.nonGET())
	}
}
