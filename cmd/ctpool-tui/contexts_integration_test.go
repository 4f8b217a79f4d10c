//go:build integration

package main

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

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
		r      tui.OnceReport
		stderr string
	}
	once := func(t *testing.T, args ...string) result {
		t.Helper()
		start := time.Now()
		code, out, errOut := runCmd(t, append([]string{"--once", "-o", "json"}, args...)...)
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%v took %s", args, d)
		}
		var r tui.OnceReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: exit %d, %v\n%s\n%s", args, code, err, out, errOut)
		}
		return result{code, r, errOut}
	}
	pools := func(r tui.OnceReport) string {
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
	states := func(r tui.OnceReport) string {
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
