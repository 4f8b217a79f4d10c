package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ctpool-tui/ctpool-tui/kube"
)

// fakeAPI is an API server that answers every list with nothing and holds
// every watch open, and records each request's method and path.
type fakeAPI struct {
	mu   sync.Mutex
	seen []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	if r.Method != http.MethodGet {
		http.Error(w, "this fake API server takes no write", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") == "true" {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	fmt.Fprint(w, `{"metadata":{"resourceVersion":"1"},"items":[]}`)
}

// writes are the requests that were not reads.
func (f *fakeAPI) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.seen {
		if !strings.HasPrefix(s, "GET ") {
			out = append(out, s)
		}
	}
	return out
}

// fakeClusters serves one fakeAPI per name, writes a kubeconfig with a
// context of each name (namespace vdi) whose current context is current,
// points KUBECONFIG at it and returns the APIs by name.
func fakeClusters(t *testing.T, names []string, current string) map[string]*fakeAPI {
	t.Helper()
	apis := map[string]*fakeAPI{}
	kc := clientcmdapi.NewConfig()
	for _, name := range names {
		api := &fakeAPI{}
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		apis[name] = api
		kc.Clusters[name] = &clientcmdapi.Cluster{Server: srv.URL}
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "token-" + name}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "vdi"}
	}
	kc.CurrentContext = current
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	return apis
}

// The dashboard of several contexts with --readonly builds one read-only
// client per cluster: a write through any of them is refused before it
// leaves the process and counted by that cluster's guard alone, and no
// action, capability question or console is wired.
func TestContextsReadOnlyPerCluster(t *testing.T) {
	names := []string{"east", "west"}
	apis := fakeClusters(t, names, names[0])
	e := &env{opts: kube.NewOptions(), stdout: io.Discard, stderr: io.Discard}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel() // before the servers close: the watches end with it

	src, err := startContexts(ctx, e, dashFlags{}, names, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range src.contexts {
		if c.conn == nil || c.w == nil || c.forbidden != nil {
			t.Fatalf("context %s: conn %v, watched %v, forbidden %v, err %v", c.name, c.conn != nil, c.w != nil, c.forbidden, c.err)
		}
		if c.conn.readOnly == nil {
			t.Fatalf("context %s has no read-only guard", c.name)
		}
	}

	opts := contextsOptions(src, names, scope{}, true)
	for _, name := range names {
		if r := opts.Resolver; r.Actions(name, "vdi") != nil || r.Access(name, "vdi") != nil || r.Console(name) != nil || !opts.ReadOnly {
			t.Errorf("read-only options wire writes in %s: %+v", name, opts)
		}
	}
	if !slices.Equal(opts.ContextNames, names) {
		t.Errorf("ContextNames %q, want %q (for :ctx)", opts.ContextNames, names)
	}

	// A write through the west cluster's client: refused there, counted
	// there only, never sent.
	west := src.contexts[1]
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "vdi"}}
	if _, err := west.conn.client.CoreV1().ConfigMaps("vdi").Create(ctx, cm, metav1.CreateOptions{}); !errors.Is(err, kube.ErrReadOnly) {
		t.Fatalf("create through west: %v, want %v", err, kube.ErrReadOnly)
	}
	if err := src.contexts[0].conn.client.CoreV1().Pods("vdi").Delete(ctx, "p", metav1.DeleteOptions{}); !errors.Is(err, kube.ErrReadOnly) {
		t.Fatalf("delete through east: %v, want %v", err, kube.ErrReadOnly)
	}
	if err := src.contexts[0].conn.client.CoreV1().Pods("vdi").Delete(ctx, "q", metav1.DeleteOptions{}); !errors.Is(err, kube.ErrReadOnly) {
		t.Fatalf("delete through east: %v, want %v", err, kube.ErrReadOnly)
	}
	if e, w := src.contexts[0].conn.readOnly.Refused(), west.conn.readOnly.Refused(); e != 2 || w != 1 {
		t.Errorf("refused: east %d, west %d; want 2 and 1", e, w)
	}
	for _, name := range names {
		if got := apis[name].writes(); len(got) != 0 {
			t.Errorf("the %s API server received writes: %v", name, got)
		}
	}
	var b strings.Builder
	src.reportRefused(&b)
	if want := "read-only: context east: 2 write requests were refused\nread-only: context west: 1 write requests were refused\n"; b.String() != want {
		t.Errorf("report %q, want %q", b.String(), want)
	}
}
