//go:build integration

package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
	"github.com/ctpool-tui/ctpool-tui/tui"
)

// contextsKubeconfig writes one kubeconfig of three contexts: "admin" (the
// fleet administrator, default namespace ns[0]), "team" (the viewer of
// ns[0] and ns[1], default namespace ns[1]), both on the plane's one API
// server, and "dead", an API server address where nothing listens.
func contextsKubeconfig(t *testing.T, p *fleetPlane) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	for ctxName, src := range map[string]string{"admin": p.clusterWide, "team": p.twoSpace} {
		c, err := clientcmd.LoadFromFile(src)
		if err != nil {
			t.Fatal(err)
		}
		for name, cl := range c.Clusters {
			kc.Clusters[name] = cl
		}
		for name, ai := range c.AuthInfos {
			kc.AuthInfos[name] = ai
		}
		cc := *c.Contexts[c.CurrentContext]
		kc.Contexts[ctxName] = &cc
	}
	kc.Contexts["team"].Namespace = p.namespaces[1]
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kc.Clusters["dead"] = &clientcmdapi.Cluster{Server: "https://" + addr, InsecureSkipTLSVerify: true}
	kc.AuthInfos["dead"] = &clientcmdapi.AuthInfo{Token: "not-a-secret"}
	kc.Contexts["dead"] = &clientcmdapi.Context{Cluster: "dead", AuthInfo: "dead", Namespace: p.namespaces[0]}
	kc.CurrentContext = "admin"
	path := filepath.Join(t.TempDir(), "contexts.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// --once over several contexts: two identities on the plane and one API
// server that does not answer. The live clusters are reported whole, the
// dead one is named (state, stderr) and the exit code is the worst, 1.
func TestIntegrationContextsOnce(t *testing.T) {
	p := newFleetPlane(t)
	ns := p.namespaces
	t.Setenv("KUBECONFIG", contextsKubeconfig(t, p))
	type result struct {
		code   int
		r      render.OnceReport
		stderr string
	}
	once := func(t *testing.T, args ...string) result {
		t.Helper()
		start := time.Now()
		code, out, errOut := runCmd(t, append([]string{"--once", "-o", "json"}, args...)...)
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%v took %s", args, d)
		}
		var r render.OnceReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: exit %d, %v\n%s\n%s", args, code, err, out, errOut)
		}
		return result{code, r, errOut}
	}
	pools := func(r render.OnceReport) string {
		var out []string
		for _, p := range r.Pools {
			for _, n := range ns {
				if p.Namespace == n {
					out = append(out, p.Context+":"+p.Namespace+"/"+p.Name)
				}
			}
		}
		return strings.Join(out, " ")
	}
	states := func(r render.OnceReport) string {
		var out []string
		for _, c := range r.Contexts {
			out = append(out, c.Context+"="+c.State)
		}
		return strings.Join(out, " ")
	}

	t.Run("one context unreachable", func(t *testing.T) {
		res := once(t, "--context", "admin,team,dead")
		if want := "admin:" + ns[0] + "/desk team:" + ns[1] + "/desk"; pools(res.r) != want {
			t.Errorf("pools %s, want %s", pools(res.r), want)
		}
		if got := states(res.r); got != "admin=live team=live dead=unreachable" {
			t.Errorf("states %s", got)
		}
		if res.code != exitError || !strings.Contains(res.stderr, "context dead: unreachable") ||
			!strings.Contains(res.stderr, "1 of 3 contexts could not be read: dead") || strings.Contains(res.stderr, "context admin") {
			t.Errorf("exit %d, stderr %q; want 1 naming dead alone", res.code, res.stderr)
		}
	})
	t.Run("every context", func(t *testing.T) {
		res := once(t, "--all-contexts")
		if got := states(res.r); got != "admin=live dead=unreachable team=live" || res.code != exitError {
			t.Errorf("--all-contexts: exit %d, states %s", res.code, got)
		}
	})
	t.Run("live contexts", func(t *testing.T) {
		res := once(t, "--context", "team,admin", "--pool", "desk")
		if want := "team:" + ns[1] + "/desk admin:" + ns[0] + "/desk"; pools(res.r) != want || res.code == exitError {
			t.Errorf("exit %d, pools %s, want %s; %s", res.code, pools(res.r), want, res.stderr)
		}
		for _, pl := range res.r.Pools {
			if pl.Name == "desk" && pl.Claimed != 1 {
				t.Errorf("%s:%s/desk claimed %d, want 1", pl.Context, pl.Namespace, pl.Claimed)
			}
		}
	})
	t.Run("forbidden in one", func(t *testing.T) {
		res := once(t, "--context", "admin,team", "--namespaces", ns[0]+","+ns[2])
		if want := "admin:" + ns[0] + "/desk admin:" + ns[2] + "/kiosk"; pools(res.r) != want {
			t.Errorf("pools %s, want %s", pools(res.r), want)
		}
		if got := states(res.r); got != "admin=live team=forbidden" || res.code != exitError ||
			!strings.Contains(res.stderr, "context team: forbidden") || !strings.Contains(res.stderr, "namespace "+ns[2]) {
			t.Errorf("exit %d, states %s, stderr %q", res.code, got, res.stderr)
		}
	})
	t.Run("table", func(t *testing.T) {
		code, out, errOut := runCmd(t, "--once", "--context", "admin,dead")
		if code != exitError || !strings.Contains(out, "CONTEXT  NAMESPACE") || !strings.Contains(out, "admin: "+ns[0]+"/desk (") ||
			!strings.Contains(out, "unreachable") {
			t.Errorf("exit %d\n%s%s", code, out, errOut)
		}
	})
}

// startContextsModel starts the dashboard of the contexts admin, team and
// dead of the fleet plane, wired as runContextsDashboard wires it, at the
// given size; it stops with the test.
func startContextsModel(t *testing.T, p *fleetPlane, readOnly bool, width, height int) (*modelDriver, *contextsSource) {
	t.Helper()
	t.Setenv("KUBECONFIG", contextsKubeconfig(t, p))
	e := &env{opts: kube.NewOptions(), stdout: io.Discard, stderr: io.Discard}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	names := []string{"admin", "team", "dead"}
	src, err := startContexts(ctx, e, dashFlags{}, names, readOnly)
	if err != nil {
		t.Fatal(err)
	}
	opts := contextsOptions(src, names, scope{}, readOnly)
	opts.Theme, opts.Renderer = themes.Dark(), themes.NoColorRenderer(io.Discard)
	m := tui.New(opts)
	d := &modelDriver{m: m, out: make(chan tea.Msg, 256), done: ctx.Done()}
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	d.run(m.Init())
	return d, src
}

// The dashboard of three contexts, wired as runContextsDashboard wires it:
// the dead one is shown unreachable while the two live ones show their
// pools; the team's viewer identity may not force-release in its cluster
// (marked ✗, nothing sent), and a force-release in the admin's cluster
// lands in its namespace, as its identity.
func TestIntegrationContextsDashboard(t *testing.T) {
	p := newFleetPlane(t)
	ns := p.namespaces
	d, _ := startContextsModel(t, p, false, 160, 50)
	row := func(s, kctx, namespace string) bool {
		for _, line := range strings.Split(s, "\n") {
			f := strings.Fields(strings.TrimLeft(line, "▸ "))
			if len(f) > 2 && f[0] == kctx && strings.HasPrefix(namespace, strings.TrimSuffix(f[1], "…")) && f[2] == "desk" {
				return true
			}
		}
		return false
	}
	d.until(t, 30*time.Second, "both live clusters' pools and the dead one unreachable", func(s string) bool {
		return strings.Contains(s, "CONTEXT") && row(s, "admin", ns[0]) && row(s, "team", ns[1]) &&
			strings.Contains(s, "admin ● live") && strings.Contains(s, "team ● live") && strings.Contains(s, "dead ✗ unreachable")
	})

	// The team's cluster: viewer there.
	for _, k := range []string{"/", "t", "e", "a", "m", "enter", "enter"} {
		d.key(k)
	}
	d.until(t, 20*time.Second, "team's desk, force-release marked ✗", func(s string) bool {
		return strings.Contains(s, "team/"+ns[1]+"/desk ·") && strings.Contains(s, "bob@example.com") && strings.Contains(s, "f/x force-release ✗")
	})
	d.key("f")
	if s := d.m.View(); !strings.Contains(s, "force-release is not allowed") {
		t.Fatalf("f in the team's cluster:\n%s", s)
	}

	// The admin's cluster.
	for _, k := range []string{"esc", "esc", "/", "a", "d", "m", "i", "n", "enter", "enter"} {
		if k == "esc" {
			_, cmd := d.m.Update(tea.KeyMsg{Type: tea.KeyEsc})
			d.run(cmd)
			continue
		}
		d.key(k)
	}
	d.until(t, 20*time.Second, "admin's desk", func(s string) bool {
		return strings.Contains(s, "admin/"+ns[0]+"/desk ·") && strings.Contains(s, "alice@example.com")
	})
	d.forceReleaseDeskOne(t, "alice@example.com")
	holder := func(namespace string) string { return p.deskOneHolder(t, namespace) }
	if h := holder(ns[0]); h == "alice@example.com" {
		t.Errorf("alice still holds %s/desk-1", ns[0])
	}
	if h := holder(ns[1]); h != "bob@example.com" {
		t.Errorf("%s/desk-1 is held by %q, want bob@example.com untouched", ns[1], h)
	}
	evs, err := p.env.Client.CoreV1().Events(ns[0]).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	by := ""
	for _, ev := range evs.Items {
		if strings.HasPrefix(ev.Message, "force-release by ") {
			by = ev.Message
		}
	}
	if want := "force-release by system:serviceaccount:" + ns[0] + ":fleet-admin"; !strings.HasPrefix(by, want) {
		t.Errorf("the audit Event in %s says %q, want it to start %q (the admin context's identity)", ns[0], by, want)
	}
	if s := d.m.View(); !strings.Contains(s, "dead ✗ unreachable") || !strings.Contains(s, "team ● live") {
		t.Errorf("the clusters' states changed:\n%s", s)
	}

	// The plane's API server stops: both of its contexts turn stale with
	// the age of their data, their pools stay on screen, the dead one stays
	// unreachable; back, they are live again.
	for range 2 { // back to the pools view, without the filter
		_, cmd := d.m.Update(tea.KeyMsg{Type: tea.KeyEsc})
		d.run(cmd)
	}
	d.until(t, 10*time.Second, "both pools on screen", func(s string) bool { return row(s, "admin", ns[0]) && row(s, "team", ns[1]) })
	stopped := time.Now()
	p.env.StopComponent(t, "kube-apiserver")
	restarted := false
	defer func() {
		if !restarted {
			p.env.StartPlane(t)
		}
	}()
	d.until(t, 60*time.Second, "admin and team stale", func(s string) bool {
		return strings.Contains(s, "admin ⚠ stale ") && strings.Contains(s, "team ⚠ stale ") &&
			strings.Contains(s, "dead ✗ unreachable") && row(s, "admin", ns[0]) && row(s, "team", ns[1])
	})
	t.Logf("stale %s after the API server stopped", time.Since(stopped).Round(time.Second))
	p.env.StartPlane(t)
	restarted = true
	back := time.Now()
	d.until(t, 90*time.Second, "admin and team live again", func(s string) bool {
		return strings.Contains(s, "admin ● live") && strings.Contains(s, "team ● live") && strings.Contains(s, "dead ✗ unreachable")
	})
	t.Logf("live %s after the API server was back", time.Since(back).Round(time.Second))
}

// The fleet's wall (--readonly over several contexts): a tile per pool with
// each cluster's state, the command line narrows it, and no key on any
// screen makes a write request to any cluster: each cluster's read-only
// guard refuses nothing because nothing is even tried.
func TestIntegrationContextsWallReadOnly(t *testing.T) {
	p := newFleetPlane(t)
	ns := p.namespaces
	d, src := startContextsModel(t, p, true, 200, 60)
	adminTile, teamTile := "┌ admin/"+ns[0]+"/desk ─", "┌ team/"+ns[1]+"/desk ─"
	d.until(t, 30*time.Second, "a tile per pool and each cluster's state on the wall", func(s string) bool {
		return strings.Contains(s, "READ-ONLY") && strings.Contains(s, adminTile) && strings.Contains(s, teamTile) &&
			strings.Contains(s, "admin ● live") && strings.Contains(s, "team ● live") && strings.Contains(s, "dead ✗ unreachable")
	})

	command := func(line string) {
		d.key(":")
		for _, r := range line {
			d.key(string(r))
		}
		d.key("enter")
	}
	command("ctx team")
	if s := d.m.View(); strings.Contains(s, adminTile) || !strings.Contains(s, teamTile) || !strings.Contains(s, "dead ✗ unreachable") {
		t.Fatalf("after :ctx team:\n%s", s)
	}
	command("ctx all")
	d.until(t, 10*time.Second, "both tiles again", func(s string) bool { return strings.Contains(s, adminTile) && strings.Contains(s, teamTile) })

	// Every key that writes elsewhere, on the wall, the table, the members
	// and a member's detail.
	writeKeys := []string{"r", "s", "D", "x", "f", "a", "c", "enter", "y", "tab"}
	for _, path := range [][]string{{}, {"tab"}, {"tab", "enter"}, {"tab", "enter", "enter"}} {
		for _, k := range writeKeys {
			for _, pk := range append(append([]string(nil), path...), k) {
				d.key(pk)
			}
			d.until(t, 5*time.Second, "the screen after "+k, func(string) bool { return true })
			for range 3 {
				_, cmd := d.m.Update(tea.KeyMsg{Type: tea.KeyEsc})
				d.run(cmd)
			}
			if _, cmd := d.m.Update(tea.KeyMsg{Type: tea.KeyTab}); cmd != nil { // back to the wall, or away from it
				d.run(cmd)
			}
			if !strings.Contains(d.m.View(), "VDI POOLS") {
				_, cmd := d.m.Update(tea.KeyMsg{Type: tea.KeyTab})
				d.run(cmd)
			}
		}
	}
	for _, c := range src.contexts {
		if c.conn == nil {
			continue // dead: not even a connection
		}
		if c.conn.readOnly == nil {
			t.Fatalf("context %s has no read-only guard", c.name)
		}
		if n := c.conn.readOnly.Refused(); n != 0 {
			t.Errorf("context %s: %d write requests were refused: the keys must not even try", c.name, n)
		}
	}
	for _, namespace := range ns[:2] {
		if h := p.deskOneHolder(t, namespace); h == "" {
			t.Errorf("%s/desk-1 lost its holder", namespace)
		}
	}
}
