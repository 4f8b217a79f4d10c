//go:build integration

package tui

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// requestCounter counts the requests a client sends, by kind, and the
// Forbidden answers it gets.
type requestCounter struct {
	mu        sync.Mutex
	writes    []string
	reads     atomic.Int64
	forbidden []string
}

// wrap installs the counter outside every other wrapper of cfg, so that it
// sees each request the program attempts, refused or not.
func (c *requestCounter) wrap(cfg *rest.Config) {
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
				c.reads.Add(1)
			default:
				c.mu.Lock()
				c.writes = append(c.writes, r.Method+" "+r.URL.Path)
				c.mu.Unlock()
			}
			resp, err := rt.RoundTrip(r)
			if err == nil && resp.StatusCode == http.StatusForbidden {
				c.mu.Lock()
				c.forbidden = append(c.forbidden, r.Method+" "+r.URL.Path)
				c.mu.Unlock()
			}
			return resp, err
		})
	}
}

func (c *requestCounter) snapshot() (writes, forbidden []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes...), append([]string(nil), c.forbidden...)
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// seedPool applies a pool with the admin client and gives member 1 a claim.
func seedPool(t *testing.T, env *kubetest.Env, pool, holder string) {
	t.Helper()
	ctx := t.Context()
	eng := &engine.Engine{Cluster: kube.NewCluster(env.Client, env.Namespace), Namespace: env.Namespace, Now: time.Now}
	spec := engine.Spec{Image: "registry.example/desktop:1", Size: 2, CPU: "100m", Memory: "128Mi", Disk: "1Gi"}
	spec.Default()
	if _, err := eng.Apply(ctx, pool, spec); err != nil {
		t.Fatalf("apply %s: %v", pool, err)
	}
	if holder != "" {
		l := engine.ClaimLease(env.Namespace, pool, engine.MemberName(pool, 1), holder, time.Now())
		if _, err := env.Client.CoordinationV1().Leases(env.Namespace).Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatalf("claim lease: %v", err)
		}
	}
}

// pump runs cmd and every Cmd its messages return, feeding each message to
// m.Update on this goroutine, until deadline. Cmds that have not answered by
// then (ticks, change waits) are abandoned. It reports whether any Update
// returned tea.Quit.
func pump(m *Model, cmd tea.Cmd, deadline time.Duration, depth int) (quit bool) {
	out := make(chan tea.Msg, 256)
	var pending atomic.Int64 // Cmds started and not answered
	var run func(c tea.Cmd)
	run = func(c tea.Cmd) {
		if c == nil {
			return
		}
		pending.Add(1)
		go func() {
			msg := c()
			if b, ok := msg.(tea.BatchMsg); ok {
				for _, c := range b {
					run(c)
				}
				msg = nil
			}
			out <- msg
		}()
	}
	run(cmd)
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for pending.Load() > 0 {
		select {
		case msg := <-out:
			pending.Add(-1)
			if _, ok := msg.(tea.QuitMsg); ok {
				return true
			}
			if msg == nil {
				continue
			}
			_, next := m.Update(msg)
			if depth > 0 {
				run(next)
			}
		case <-timer.C:
			return false
		}
	}
	return false
}

// load reads the watcher once, as the model's loadCmd does.
func load(m *Model, src DataSource) { m.Update(loadCmd(src, time.Now)()) }

// everyKey is every key of the keymap (and the keys other screens may add).
func everyKey(k keyMap) []string {
	var keys []string
	for _, col := range k.FullHelp() {
		for _, b := range col {
			keys = append(keys, b.Keys()...)
		}
	}
	keys = append(keys, k.Confirm.Keys()...)
	keys = append(keys, k.Cancel.Keys()...)
	keys = append(keys, k.NextButton.Keys()...)
	// Action and view keys bound elsewhere or only outside read-only mode.
	keys = append(keys, "r", "s", "D", "x", "f", "A", "c", "l", "a", "y", "n")
	return keys
}

// The wall display as the viewer: every key, every screen; no write is
// attempted, none is refused (the keys do not even try), nothing is
// Forbidden to the watcher but the optional nodes. --once as the viewer: only
// reads, and no Forbidden but one optional nodes list.
func TestIntegrationReadOnlyViewerMakesNoWrites(t *testing.T) {
	env := kubetest.Require(t)
	seedPool(t, env, "ro", "alice@example.com")

	// As cmd does for --readonly: the viewer's config behind the read-only guard.
	cfg, guard := kube.ReadOnly(env.ConfigAs(t, kubetest.Viewer))
	var count requestCounter
	count.wrap(cfg)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watcher := kube.NewWatcher(client, env.Namespace)
	if err := watcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	m := newModel(ctx, Options{
		Context: "viewer", Namespace: env.Namespace, ReadOnly: true, Theme: themes.Dark(),
		Renderer: themes.NoColorRenderer(io.Discard), Now: time.Now, Data: watcher,
		Nodes: &kube.Nodes{Client: client},
		// Access must never be asked in read-only mode.
		Resolver: &resolver{events: &kube.Events{Client: client}, access: accessFor(client, env.Namespace)},
	})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	pump(m, m.Init(), 2*time.Second, 1)
	env.WaitFor(t, 30*time.Second, "the seeded pool on the wall", func() (bool, error) {
		load(m, watcher)
		return strings.Contains(m.View(), "ro"), nil
	})

	keys := everyKey(m.keys)
	// Visit each screen: wall, pools, members, detail, and the help.
	for _, path := range [][]string{{}, {"tab"}, {"tab", "enter"}, {"tab", "enter", "enter"}, {"tab", "enter", "A"}} {
		for _, k := range keys {
			// Back to the start, then along the path, then the key.
			m.screen, m.showHelp, m.dialog = screenWall, false, nil
			m.members.audit.open = false
			m.members.filter.typing = false
			m.members.clearFilter()
			if k == "q" || k == "ctrl+c" {
				_, cmd := m.Update(keyMsg(k))
				if cmd == nil || cmd() != tea.Quit() {
					t.Errorf("%s does not quit", k)
				}
				continue
			}
			for _, p := range append(append([]string(nil), path...), k) {
				_, cmd := m.Update(keyMsg(p))
				if pump(m, cmd, 300*time.Millisecond, 1) {
					t.Fatalf("key %q after %v quit the program", p, path)
				}
			}
		}
	}
	writes, forbidden := count.snapshot()
	if len(writes) != 0 {
		t.Errorf("the read-only dashboard attempted %d writes: %v", len(writes), writes)
	}
	if n := guard.Refused(); n != 0 {
		t.Errorf("guard refused %d writes: the keys must not even try", n)
	}
	if at, err := watcher.LastWatchError(); err != nil {
		t.Errorf("watcher error at %s: %v", at, err)
	}
	nodeReads := 0
	for _, f := range forbidden {
		if !strings.HasSuffix(f, "/nodes") { // nodes are optional: Forbidden means "not readable"
			t.Errorf("Forbidden: %s", f)
		}
		nodeReads++
	}
	// Once by the node informer (which then stops for good), once by the
	// diagnosis's node list (which remembers the answer).
	if nodeReads > 2 {
		t.Errorf("nodes were asked %d times after a Forbidden answer", nodeReads)
	}
	t.Logf("dashboard as viewer: %d reads, 0 writes, %d keys on 5 screens; Forbidden (optional nodes): %v", count.reads.Load(), len(keys), forbidden)

	// --once: the same guard, kube.ListPools as the viewer.
	ocfg, oguard := kube.ReadOnly(env.ConfigAs(t, kubetest.Viewer))
	var ocount requestCounter
	ocount.wrap(ocfg)
	oclient, err := kubernetes.NewForConfig(ocfg)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := kube.ListPools(ctx, oclient, env.Namespace)
	if err != nil {
		t.Fatalf("ListPools as viewer: %v", err)
	}
	var b strings.Builder
	render.RenderOnce(&b, engine.ObserveAll(snaps, time.Now()), render.OnceOptions{Format: "json", Namespace: env.Namespace, Now: time.Now()})
	if !strings.Contains(b.String(), `"name": "ro"`) {
		t.Errorf("--once does not list the pool:\n%s", b.String())
	}
	writes, forbidden = ocount.snapshot()
	if len(writes) != 0 || oguard.Refused() != 0 {
		t.Errorf("--once as viewer: writes %v, refused %d", writes, oguard.Refused())
	}
	// The one-shot reader asks for the nodes once; Forbidden there means
	// "node health unknown", never a failure, and nothing else may be refused.
	if len(forbidden) > 1 || (len(forbidden) == 1 && !strings.HasSuffix(forbidden[0], "/nodes")) {
		t.Errorf("--once as viewer: Forbidden %v (only one optional nodes list may be)", forbidden)
	}
}

// accessFor is the dashboard's Access, as cmd wires it.
func accessFor(client kubernetes.Interface, ns string) Access {
	return &kube.Access{Client: client, Namespace: ns}
}

// The operator may reconcile and resize but not force-release: the
// dashboard says so with the missing permission, and a forced release is
// refused by the API server and leaves the claim alone.
func TestIntegrationOperatorForceRelease(t *testing.T) {
	env := kubetest.Require(t)
	seedPool(t, env, "op", "alice@example.com")
	client := env.ClientAs(t, kubetest.Operator)
	access := &kube.Access{Client: client, Namespace: env.Namespace}

	caps, err := access.Capabilities(t.Context(), ActionNames)
	if err != nil {
		t.Fatal(err)
	}
	by := map[engine.Action]engine.Capability{}
	for _, c := range caps {
		by[c.Action] = c
	}
	for _, a := range []engine.Action{engine.ActionReconcile, engine.ActionResize} {
		if !by[a].Allowed {
			t.Errorf("operator: %s unavailable (missing %v)", a, by[a].Missing)
		}
	}
	fr := by[engine.ActionForceRelease]
	if fr.Allowed || fr.Missing == nil || fr.Missing.String() != "force-release leases.coordination.k8s.io" {
		t.Fatalf("operator force-release: %+v (missing %v)", fr, fr.Missing)
	}

	// The dashboard, asked the same, refuses f with that permission.
	m := newModel(t.Context(), Options{Namespace: env.Namespace, Renderer: themes.NoColorRenderer(io.Discard), Now: time.Now,
		Data: newFakeData(nil), Resolver: &resolver{actions: &fakeActions{}, access: accessFor(client, env.Namespace)}})
	m.Update(waitMsg[capsMsg](t, capsCmd(t.Context(), wire(m).access)))
	if why := m.refusal(tableAction(t, "force-release"), poolRefIn(m, "desk")); !strings.Contains(why, "needs force-release leases.coordination.k8s.io") {
		t.Fatalf("dashboard refusal = %q", why)
	}
	if why := m.refusal(tableAction(t, "reconcile"), poolRefIn(m, "desk")); why != "" {
		t.Fatalf("reconcile refused: %q", why)
	}

	// Forced anyway: the API server's answer refuses it.
	eng := &engine.Engine{Cluster: kube.NewCluster(client, env.Namespace), Namespace: env.Namespace, Now: time.Now,
		Authorize: access.Authorize}
	member := engine.MemberName("op", 1)
	_, relErr := eng.ForceRelease(t.Context(), "op", member)
	if !errors.Is(relErr, engine.ErrForbidden) {
		t.Fatalf("forced release as operator: %v, want ErrForbidden", relErr)
	}
	l, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(t.Context(), engine.LeaseName(member), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the claim Lease is gone: %v", err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "alice@example.com" {
		t.Fatalf("the claim changed: holder %v", l.Spec.HolderIdentity)
	}
	t.Logf("operator, forced release: %v", relErr)
}

// An audit Event recorded by kube.Auditor shows in the pool's audit list,
// read as the viewer, sanitised; other Events of the ConfigMap do not.
func TestIntegrationAuditList(t *testing.T) {
	env := kubetest.Require(t)
	seedPool(t, env, "au", "")
	ctx := t.Context()
	aud := &kube.Auditor{Client: env.Client, Namespace: env.Namespace, Actor: "admin@example.com"}
	aud.Record(ctx, engine.AuditEntry{Pool: "au", Action: engine.ActionForceRelease, Member: "au-1",
		PreviousHolder: "\x1b]52;c;cm0gLXJmIH4=\x07bob\u202egnp.exe"})
	other := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: "other-", Namespace: env.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: env.Namespace, Name: engine.ConfigMapName("au")},
		Reason:         "Touched", Message: "not an audit event", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "someone-else"}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(),
	}
	if _, err := env.Client.CoreV1().Events(env.Namespace).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	viewer := env.ClientAs(t, kubetest.Viewer)
	watcher := kube.NewWatcher(viewer, env.Namespace)
	if err := watcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	m := newModel(ctx, Options{Namespace: env.Namespace, Renderer: themes.NoColorRenderer(io.Discard), Now: time.Now,
		Data: watcher, Resolver: &resolver{events: &kube.Events{Client: viewer}}})
	m.Update(tea.WindowSizeMsg{Width: 140, Height: 30})
	env.WaitFor(t, 30*time.Second, "the pool", func() (bool, error) {
		load(m, watcher)
		return m.pool(poolRefIn(m, "au")) != nil, nil
	})
	m.openMembers(poolRefIn(m, "au"))
	_, cmd := m.Update(keyMsg("A"))
	m.Update(waitMsg[auditMsg](t, cmd))
	v := m.View()
	if !strings.Contains(v, "force-release by admin@example.com: member au-1") || !strings.Contains(v, "previous holder") {
		t.Fatalf("audit list:\n%s", v)
	}
	if strings.Contains(v, "not an audit event") || strings.ContainsAny(v, "\x1b\x07\u202e") {
		t.Fatalf("audit list shows a foreign Event or a control character:\n%q", v)
	}
}
