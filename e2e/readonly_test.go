//go:build e2e

package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// --readonly as the viewer: every key of every screen, and no write request
// reaches the API server (a proxy in front of it sees only reads), none is
// refused by the binary's guard either, and the pool's objects keep their
// resourceVersions.
func TestE2EReadOnlyViewer(t *testing.T) {
	env := setupPool(t)
	ns := env.Namespace
	before := resourceVersions(t, env)
	proxy := newRecordingProxy(t, env.ConfigAs(t, kubetest.Viewer))

	term := start(t, 120, 30, []string{"KUBECONFIG=" + proxy.kubeconfig, "TERM=xterm-256color"}, "-n", ns, "--readonly")
	// A wall display first; tab to the table.
	term.waitText(startTimeout, "VDI POOLS · "+ns, "READ-ONLY", "desk", "1/2 claimed")
	term.send("\t")
	term.waitText(keyTimeout, "ns: "+ns, "desk", "enter members")
	// Every action key on the pools list, the members list (a claimed and a
	// free member) and the detail pane: none may open a dialog or act.
	actionKeys := []string{"r", "s", "D", "a", "f", "x", "c"}
	tryKeys := func(where string) {
		t.Helper()
		term.send(strings.Join(actionKeys, "\x00") + "\x00")
		term.syncKeys(where)
	}
	tryKeys("the pools list")
	term.send("\r")
	term.waitScreen("the members of desk", keyTimeout, func(rows []string) bool { return rowWith(rows, "▸ desk-1 ", "alice@example.com") >= 0 })
	tryKeys("the members list on desk-1")
	term.send("j")
	term.waitScreen("desk-2 selected", keyTimeout, func(rows []string) bool { return rowWith(rows, "▸ desk-2 ") >= 0 })
	tryKeys("the members list on desk-2")
	term.send("\r")
	term.waitText(keyTimeout, "desk-2 · Ready", "Lease    none")
	tryKeys("the detail of desk-2")
	term.send("\x1b")
	term.waitScreen("the members list, desk-2 selected", keyTimeout, func(rows []string) bool {
		return rowWith(rows, "▸ desk-2 ") >= 0 && rowWith(rows, "MEMBER", "STATE") >= 0
	})
	term.send("q")
	if err := term.wait(exitTimeout); err != nil {
		t.Fatalf("the dashboard ended with %v; screen:\n%s", err, dump(term.screen()))
	}
	checkRestored(t, term)

	if writes, reads := proxy.requests(); len(writes) > 0 {
		t.Errorf("--readonly sent %d write requests (and %d reads): %v", len(writes), reads, writes)
	} else if reads == 0 {
		t.Fatal("the proxy saw no request at all: the dashboard did not go through it")
	}
	if out := string(term.rawSince(0)); strings.Contains(out, "write requests were refused") {
		t.Errorf("the read-only guard refused writes the dashboard attempted: %q", out[strings.LastIndex(out, "read-only:"):])
	}
	after := resourceVersions(t, env)
	for name, rv := range before {
		if after[name] != rv {
			t.Errorf("%s: resourceVersion %s, after the read-only session %q", name, rv, after[name])
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s appeared during the read-only session", name)
		}
	}
}

// resourceVersions maps the pool's objects (kind/name) in the test's namespace
// to their resourceVersions, with the Events ctpool-tui wrote (its audit
// trail: the claim of setupPool has one).
func resourceVersions(t *testing.T, env *kubetest.Env) map[string]string {
	t.Helper()
	ctx, ns, c := t.Context(), env.Namespace, env.Client
	rvs := map[string]string{}
	add := func(kind string, items []metav1.Object) {
		for _, o := range items {
			rvs[kind+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	opts := metav1.ListOptions{}
	cms, err := c.CoreV1().ConfigMaps(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	pvcs, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := c.CoreV1().Services(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	leases, err := c.CoordinationV1().Leases(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := c.CoreV1().Events(ns).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var objs []metav1.Object
	for i := range cms.Items {
		objs = append(objs, &cms.Items[i])
	}
	add("configmap", objs)
	objs = objs[:0]
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	add("pod", objs)
	objs = objs[:0]
	for i := range pvcs.Items {
		objs = append(objs, &pvcs.Items[i])
	}
	add("pvc", objs)
	objs = objs[:0]
	for i := range svcs.Items {
		objs = append(objs, &svcs.Items[i])
	}
	add("service", objs)
	objs = objs[:0]
	for i := range leases.Items {
		objs = append(objs, &leases.Items[i])
	}
	add("lease", objs)
	objs = objs[:0]
	for i := range evs.Items {
		if ev := &evs.Items[i]; ev.ReportingController != kube.AuditComponent && ev.Annotations[kube.AuditAnnotation] == "" {
			continue // the control plane's (scheduler, volume controllers): late ones may come
		}
		objs = append(objs, &evs.Items[i])
	}
	add("event", objs)
	if len(pods.Items) == 0 || len(leases.Items) == 0 {
		t.Fatalf("the pool's objects are missing: %v", rvs)
	}
	return rvs
}

// recordingProxy stands between the binary and the API server with the
// credentials of cfg: the binary's kubeconfig points at it, and it records
// the method and path of every request.
type recordingProxy struct {
	kubeconfig string

	mu     sync.Mutex
	writes []string
	reads  int
}

func newRecordingProxy(t *testing.T, cfg *rest.Config) *recordingProxy {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1, // watches stream
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			p.reads++
		default:
			p.writes = append(p.writes, r.Method+" "+r.URL.Path)
		}
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.kubeconfig = filepath.Join(t.TempDir(), "viewer-via-proxy.kubeconfig")
	kc := "apiVersion: v1\nkind: Config\n" +
		"clusters:\n- name: plane\n  cluster:\n    server: " + srv.URL + "\n" +
		"users:\n- name: viewer\n  user: {}\n" +
		"contexts:\n- name: viewer\n  context:\n    cluster: plane\n    user: viewer\n" +
		"current-context: viewer\n"
	if err := os.WriteFile(p.kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *recordingProxy) requests() (writes []string, reads int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.writes...), p.reads
}
