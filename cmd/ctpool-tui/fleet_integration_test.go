//go:build integration

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
	"github.com/ctpool-tui/ctpool-tui/tui"
)

// fleetPlane is a test's three namespaces with pools: desk in the first two
// (member 1 claimed by alice and bob), kiosk in the third, and two
// identities: one with the admin role in every namespace (a ClusterRole),
// one with the viewer role in the first two namespaces only.
type fleetPlane struct {
	env                   *kubetest.Env
	namespaces            []string
	clusterWide, twoSpace string // kubeconfig paths
	clusterWideCfg        *rest.Config
}

func newFleetPlane(t *testing.T) *fleetPlane {
	t.Helper()
	env := kubetest.Require(t)
	ctx := t.Context()
	p := &fleetPlane{env: env, namespaces: []string{env.Namespace, env.Namespace + "-b", env.Namespace + "-c"}}
	for _, ns := range p.namespaces[1:] {
		if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: ns, Labels: map[string]string{kubetest.NamespaceLabel: "true"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
		env.WaitFor(t, 30*time.Second, "the default ServiceAccount of "+ns, func() (bool, error) {
			_, err := env.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
	}
	spec := engine.Spec{Image: "registry.example/desktop:1", Size: 2, CPU: "10m", Memory: "32Mi", Disk: "1Gi"}
	spec.Default()
	for i, pool := range []string{"desk", "desk", "kiosk"} {
		ns := p.namespaces[i]
		eng := &engine.Engine{Cluster: kube.NewCluster(env.Client, ns), Namespace: ns, Now: time.Now}
		if _, err := eng.Apply(ctx, pool, spec); err != nil {
			t.Fatalf("apply %s/%s: %v", ns, pool, err)
		}
		holder := []string{"alice@example.com", "bob@example.com", ""}[i]
		if holder == "" {
			continue
		}
		l := engine.ClaimLease(ns, pool, engine.MemberName(pool, 1), holder, time.Now())
		if _, err := env.Client.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The fleet administrator: `rbac --role admin --cluster-wide`, under a
	// name of this test's own (cluster-scoped objects are shared).
	cr, cb, err := kube.ClusterRoleObjects("admin", env.Namespace, "ServiceAccount:"+env.Namespace+"/fleet-admin")
	if err != nil {
		t.Fatal(err)
	}
	cr.Name, cb.Name, cb.RoleRef.Name = env.Namespace+"-fleet-admin", env.Namespace+"-fleet-admin", env.Namespace+"-fleet-admin"
	cr.Rules = append(cr.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}})
	if _, err := env.Client.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, cb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), cb.Name, metav1.DeleteOptions{})
		_ = env.Client.RbacV1().ClusterRoles().Delete(context.Background(), cr.Name, metav1.DeleteOptions{})
	})
	p.clusterWide, p.clusterWideCfg = p.serviceAccount(t, "fleet-admin")

	// The team viewer: `rbac --role viewer` in two namespaces.
	for _, ns := range p.namespaces[:2] {
		r, b, err := kube.RoleObjects("viewer", ns, "ServiceAccount:"+env.Namespace+"/team-viewer")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Client.RbacV1().Roles(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Client.RbacV1().RoleBindings(ns).Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p.twoSpace, _ = p.serviceAccount(t, "team-viewer")
	return p
}

// serviceAccount makes a ServiceAccount in the first namespace and writes a
// kubeconfig with its token (context namespace: the first namespace).
func (p *fleetPlane) serviceAccount(t *testing.T, name string) (string, *rest.Config) {
	t.Helper()
	ctx, env, ns := t.Context(), p.env, p.env.Namespace
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["plane"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: name, Namespace: ns}
	kc.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return path, cfg
}

// poolsIn lists the report's pools of these namespaces as namespace/pool.
func poolsIn(r render.OnceReport, namespaces []string) []string {
	var out []string
	for _, p := range r.Pools {
		for _, ns := range namespaces {
			if p.Namespace == ns {
				out = append(out, p.Namespace+"/"+p.Name)
			}
		}
	}
	return out
}

func TestIntegrationFleetOnceStatusAndHint(t *testing.T) {
	p := newFleetPlane(t)
	ns := p.namespaces
	once := func(t *testing.T, args ...string) (int, render.OnceReport, string) {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"--once", "-o", "json"}, args...)...)
		var r render.OnceReport
		if code != exitError {
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%v: %v\n%s\n%s", args, err, out, errOut)
			}
		}
		return code, r, errOut
	}
	t.Run("cluster-wide identity", func(t *testing.T) {
		t.Setenv("KUBECONFIG", p.clusterWide)
		code, r, errOut := once(t, "-A")
		want := ns[0] + "/desk " + ns[1] + "/desk " + ns[2] + "/kiosk"
		if code == exitError || !r.AllNamespaces || strings.Join(poolsIn(r, ns), " ") != want {
			t.Fatalf("--once -A: exit %d, allNamespaces %v, pools %v (want %s); %s", code, r.AllNamespaces, poolsIn(r, ns), want, errOut)
		}
		code, out, errOut := runCmd(t, "status", "desk", "-A")
		if code != exitOK || !strings.Contains(out, "NAMESPACE") || !strings.Contains(out, ns[0]+"/desk (") ||
			!strings.Contains(out, ns[1]+"/desk (") || strings.Contains(out, ns[2]) {
			t.Fatalf("status desk -A: exit %d\n%s%s", code, out, errOut)
		}
	})
	t.Run("identity of two namespaces", func(t *testing.T) {
		t.Setenv("KUBECONFIG", p.twoSpace)
		for _, args := range [][]string{{"--once", "-A"}, {"status", "desk", "-A"}} {
			code, out, errOut := runCmd(t, args...)
			line := strings.TrimSpace(errOut)
			if code != exitError || out != "" || strings.Contains(line, "\n") ||
				!strings.Contains(line, "in all namespaces") || !strings.Contains(line, "-n NAMESPACE") || !strings.Contains(line, "--namespaces a,b,c") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and the one-line hint", args, code, out, errOut)
			}
		}
		code, r, errOut := once(t, "--namespaces", ns[0]+","+ns[1])
		if want := ns[0] + "/desk " + ns[1] + "/desk"; code == exitError || strings.Join(poolsIn(r, ns), " ") != want || strings.Join(r.Namespaces, ",") != ns[0]+","+ns[1] {
			t.Fatalf("--namespaces: exit %d, pools %v (want %s), namespaces %v; %s", code, poolsIn(r, ns), want, r.Namespaces, errOut)
		}
		code, _, errOut = once(t, "--namespaces", ns[0]+","+ns[2])
		if code != exitError || !strings.Contains(errOut, "namespace "+ns[2]) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("--namespaces with one it may not read: exit %d, stderr %q", code, errOut)
		}
		// The dashboard asks before its informers start.
		cfg, err := clientcmd.BuildConfigFromFlags("", p.twoSpace)
		if err != nil {
			t.Fatal(err)
		}
		client := kubernetes.NewForConfigOrDie(cfg)
		var lf *kube.ListForbiddenError
		if err := checkFleet(t.Context(), &connection{client: client, scope: scope{fleet: true}, host: cfg.Host}); !errors.As(err, &lf) || lf.Namespace != "" {
			t.Errorf("checkFleet -A = %v, want the cluster-wide refusal", err)
		}
		if err := checkFleet(t.Context(), &connection{client: client, scope: scope{fleet: true, namespaces: ns[:2]}, host: cfg.Host}); err != nil {
			t.Errorf("checkFleet --namespaces = %v", err)
		}
		// Its cache: one informer set per namespace, each allowed.
		w := kube.NewFleetWatcher(client, ns[:2])
		wctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := w.Start(wctx); err != nil {
			t.Fatal(err)
		}
		if !w.WaitForSync(wctx) {
			t.Fatal("the --namespaces cache did not sync within 30s")
		}
		var got []string
		for _, s := range w.Snapshots() {
			got = append(got, s.Namespace+"/"+s.Pool)
		}
		if want := ns[0] + "/desk " + ns[1] + "/desk"; strings.Join(got, " ") != want {
			t.Errorf("the --namespaces cache holds %v, want %s", got, want)
		}
		if _, err := w.LastWatchError(); err != nil {
			t.Errorf("a watch error: %v", err)
		}
	})
}

// modelDriver runs a dashboard model as bubbletea would, on the test's
// goroutine: every Cmd in its own goroutine, every message to Update.
type modelDriver struct {
	m    tea.Model
	out  chan tea.Msg
	done <-chan struct{}
}

func (d *modelDriver) run(c tea.Cmd) {
	if c == nil {
		return
	}
	go func() {
		msg := c()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				d.run(c)
			}
			return
		}
		if msg == nil {
			return
		}
		select {
		case d.out <- msg:
		case <-d.done:
		}
	}()
}

func (d *modelDriver) key(k string) {
	msg := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
	switch k {
	case "enter":
		msg = tea.KeyMsg{Type: tea.KeyEnter}
	case "tab":
		msg = tea.KeyMsg{Type: tea.KeyTab}
	}
	_, cmd := d.m.Update(msg)
	d.run(cmd)
}

// until feeds messages until the screen satisfies cond.
func (d *modelDriver) until(t *testing.T, timeout time.Duration, what string, cond func(screen string) bool) {
	t.Helper()
	deadline := time.After(timeout)
	for !cond(d.m.View()) {
		select {
		case msg := <-d.out:
			if _, quit := msg.(tea.QuitMsg); quit {
				t.Fatalf("the dashboard quit while waiting for %s", what)
			}
			_, cmd := d.m.Update(msg)
			d.run(cmd)
		case <-deadline:
			t.Fatalf("timed out after %v waiting for %s; screen:\n%s", timeout, what, d.m.View())
		}
	}
}

// A force-release from the -A view, wired as the dashboard wires it,
// releases the member of the selected pool's namespace and no other: both
// namespaces have a pool desk whose desk-1 is claimed.
// forceReleaseDeskOne force-releases desk-1 of the open pool, held by holder,
// with confirmation, and waits for its outcome.
func (d *modelDriver) forceReleaseDeskOne(t *testing.T, holder string) {
	t.Helper()
	d.key("f")
	d.until(t, 10*time.Second, "the force-release dialog", func(s string) bool { return strings.Contains(s, holder) && strings.Contains(s, "Force") })
	d.key("tab")
	d.key("enter")
	d.until(t, 3*time.Minute, "the force-release to finish", func(s string) bool {
		return strings.Contains(s, "✓ force-release desk-1") || strings.Contains(s, "✗ force-release desk-1")
	})
	if s := d.m.View(); !strings.Contains(s, "✓ force-release desk-1 ("+holder+")") {
		t.Fatalf("the force-release failed:\n%s", s)
	}
}

// deskOneHolder is the holder of desk-1's Lease in namespace ("" for none).
func (p *fleetPlane) deskOneHolder(t *testing.T, namespace string) string {
	t.Helper()
	l, err := p.env.Client.CoordinationV1().Leases(namespace).Get(t.Context(), engine.LeaseName(engine.MemberName("desk", 1)), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestIntegrationFleetForceReleaseLandsInItsNamespace(t *testing.T) {
	p := newFleetPlane(t)
	ns := p.namespaces
	client := kubernetes.NewForConfigOrDie(p.clusterWideCfg)
	conn := &connection{client: client, scope: scope{fleet: true}, host: p.clusterWideCfg.Host, cfg: p.clusterWideCfg}
	if err := checkFleet(t.Context(), conn); err != nil {
		t.Fatal(err)
	}
	w := kube.NewFleetWatcher(client, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	opts := fleetOptions(conn, w, false)
	opts.Theme, opts.Renderer = themes.Dark(), themes.NoColorRenderer(io.Discard)
	m := tui.New(opts)
	d := &modelDriver{m: m, out: make(chan tea.Msg, 256), done: ctx.Done()}
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
	d.run(m.Init())
	// Only the second namespace's pools (the plane is shared): the first
	// row is its desk.
	d.key("/")
	for _, r := range ns[1] {
		d.key(string(r))
	}
	d.key("enter")
	d.until(t, 30*time.Second, ns[1]+"/desk selected", func(s string) bool {
		return strings.Contains(s, "NAMESPACE") && strings.Contains(s, "▸ "+ns[1]+"/desk: ")
	})
	d.key("enter")
	d.until(t, 10*time.Second, "the members of "+ns[1]+"/desk", func(s string) bool {
		return strings.Contains(s, ns[1]+"/desk ·") && strings.Contains(s, "bob@example.com")
	})
	d.forceReleaseDeskOne(t, "bob@example.com")
	holder := func(namespace string) string { return p.deskOneHolder(t, namespace) }
	if h := holder(ns[1]); h == "bob@example.com" {
		t.Errorf("bob still holds %s/desk-1", ns[1])
	}
	if h := holder(ns[0]); h != "alice@example.com" {
		t.Errorf("%s/desk-1 is held by %q, want alice@example.com untouched", ns[0], h)
	}
	// The audit Event is on the pool of the member's own namespace.
	evs, err := p.env.Client.CoreV1().Events(ns[1]).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs.Items {
		found = found || (ev.InvolvedObject.Name == engine.ConfigMapName("desk") && strings.Contains(ev.Message, "force-release"))
	}
	if !found {
		t.Errorf("no force-release audit Event in %s", ns[1])
	}
	if evs, err := p.env.Client.CoreV1().Events(ns[0]).List(t.Context(), metav1.ListOptions{}); err == nil {
		for _, ev := range evs.Items {
			if strings.Contains(ev.Message, "force-release") {
				t.Errorf("a force-release audit Event in %s: %s", ns[0], ev.Message)
			}
		}
	}
}

// `:ns` as the dashboard wires it, for an identity of two namespaces:
// `:ns all` is refused in one line and the screen stays; `:ns` of its other
// namespace shows that namespace's pools.
func TestIntegrationFleetCommandSwitches(t *testing.T) {
	p := newFleetPlane(t)
	ns := p.namespaces
	cfg, err := clientcmd.BuildConfigFromFlags("", p.twoSpace)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ = kube.ReadOnly(cfg)
	client := kubernetes.NewForConfigOrDie(cfg)
	conn := &connection{client: client, namespace: ns[0], host: cfg.Host, cfg: cfg}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	opts, err := scopeOptions(sctx, conn, true)
	if err != nil {
		t.Fatal(err)
	}
	opts.StopData, opts.Scoper = stop, dashScoper{conn: conn, readOnly: true}
	opts.Theme, opts.Renderer = themes.Dark(), themes.NoColorRenderer(io.Discard)
	m := tui.New(opts)
	d := &modelDriver{m: m, out: make(chan tea.Msg, 256), done: ctx.Done()}
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
	d.run(m.Init())
	d.key("tab") // the read-only dashboard opens on the wall: the table
	d.until(t, 30*time.Second, "the pools of "+ns[0], func(s string) bool {
		return strings.Contains(s, "ns: "+ns[0]) && strings.Contains(s, "▸ desk: ")
	})
	command := func(line string) {
		d.key(":")
		for _, r := range line {
			d.key(string(r))
		}
		d.key("enter")
	}
	command("ns all")
	d.until(t, 30*time.Second, "the refusal of :ns all", func(s string) bool {
		return strings.Contains(s, "may not list") && strings.Contains(s, "in all namespaces")
	})
	if s := d.m.View(); !strings.Contains(s, "ns: "+ns[0]) {
		t.Fatalf("a refused :ns all left the namespace:\n%s", s)
	}
	command("ns " + ns[1])
	d.until(t, 30*time.Second, "the pools of "+ns[1], func(s string) bool {
		return strings.Contains(s, "ns: "+ns[1]) && strings.Contains(s, "▸ desk: ") && strings.Contains(s, "1 claimed")
	})
	if sctx.Err() == nil {
		t.Error("the first namespace's informers still run after the switch")
	}
}

// --namespaces completes its last namespace, after the ones typed.
func TestIntegrationFleetNamespacesCompletion(t *testing.T) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	ns := env.Namespace
	for _, args := range [][]string{{"--namespaces", "default," + ns[:len(ns)-2]}, {"status", "desk", "--namespaces", "default," + ns[:len(ns)-2]}} {
		got, dir := complete(t, args...)
		found := false
		for _, c := range got {
			name, _, _ := strings.Cut(c, "\t")
			found = found || name == "default,"+ns
		}
		d, err := strconv.Atoi(strings.TrimPrefix(dir, ":"))
		if !found || err != nil || cobra.ShellCompDirective(d)&cobra.ShellCompDirectiveNoSpace == 0 {
			t.Errorf("%v: candidates %q, directive %s; want default,%s without a space", args, got, dir, ns)
		}
	}
}
