package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

// goModVersion reads a requirement's version from the module's go.mod, a
// source independent of the build information the binary reads.
func goModVersion(t *testing.T, module string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + `\s+(v\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("go.mod requires no %s", module)
	}
	return string(m[1])
}

// setLinkVersion sets the values the Makefile passes with -ldflags -X.
func setLinkVersion(t *testing.T, v, c, d string) {
	t.Helper()
	ov, oc, od := version, commit, date
	version, commit, date = v, c, d
	t.Cleanup(func() { version, commit, date = ov, oc, od })
}

func TestBuildVersion(t *testing.T) {
	clientGo := &debug.Module{Path: "k8s.io/client-go", Version: "v0.37.2"}
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}
	cases := []struct {
		name                      string
		info                      *debug.BuildInfo
		ldVersion, ldCommit, ldDt string
		want                      versionInfo
	}{
		{"no build information", nil, "", "", "",
			versionInfo{Version: "(devel)", Commit: "unknown", Date: "unknown", ClientGo: "unknown"}},
		{"a build in a checkout without VCS stamp", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Deps: []*debug.Module{clientGo}}, "", "", "",
			versionInfo{Version: "(devel)", Commit: "unknown", Date: "unknown", ClientGo: "v0.37.2"}},
		{"go install module@version", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Deps: []*debug.Module{{Path: "k8s.io/api", Version: "v0.37.2"}, clientGo}}, "", "", "",
			versionInfo{Version: "v1.4.0", Commit: "unknown", Date: "unknown", ClientGo: "v0.37.2"}},
		{"VCS stamp", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260102030405-0123abcd+dirty"}, Settings: vcs, Deps: []*debug.Module{clientGo}}, "", "", "",
			versionInfo{Version: "v0.0.0-20260102030405-0123abcd+dirty", Commit: "0123abcd", Modified: true, Date: "2026-01-02T03:04:05Z", ClientGo: "v0.37.2"}},
		{"link-time values win", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs[:2], Deps: []*debug.Module{clientGo}}, "v1.5.0-2-gfeed", "feedbeef", "2026-03-01T00:00:00Z",
			versionInfo{Version: "v1.5.0-2-gfeed", Commit: "feedbeef", Date: "2026-03-01T00:00:00Z", ClientGo: "v0.37.2"}},
		{"a dirty git describe is modified", nil, "v1.5.0-dirty", "feedbeef", "",
			versionInfo{Version: "v1.5.0-dirty", Commit: "feedbeef", Modified: true, Date: "unknown", ClientGo: "unknown"}},
		{"a replaced client-go", &debug.BuildInfo{Deps: []*debug.Module{{Path: "k8s.io/client-go", Version: "v0.37.2", Replace: &debug.Module{Path: "../client-go", Version: "v0.37.3-fork"}}}}, "", "", "",
			versionInfo{Version: "(devel)", Commit: "unknown", Date: "unknown", ClientGo: "v0.37.3-fork"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := buildVersion(tc.info, tc.ldVersion, tc.ldCommit, tc.ldDt)
			tc.want.Go, tc.want.Platform = runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestUserAgentToken(t *testing.T) {
	cases := []struct{ in, want string }{
		{"v1.2.0", "v1.2.0"},
		{"(devel)", "devel"},
		{"v0.0.0-20260102030405-0123abcd+dirty", "v0.0.0-20260102030405-0123abcd+dirty"},
		{"v1 (x)/y", "v1xy"},
		{"()", "unknown"},
		{"vé1", "v1"},
	}
	for _, tc := range cases {
		if got := uaToken(tc.in); got != tc.want {
			t.Errorf("uaToken(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	clientGo := goModVersion(t, "k8s.io/client-go")
	cases := []struct {
		name                string
		ldV, ldC, ldD       string
		wantFirst           string
		wantCommit, wantDay string
	}{
		{"built by go build", "", "", "", "ctpool-tui (devel)", "unknown", "unknown"},
		{"built by make", "v1.5.0-2-gfeed", "feedbeef", "2026-03-01T00:00:00Z", "ctpool-tui v1.5.0-2-gfeed", "feedbeef", "2026-03-01T00:00:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setLinkVersion(t, tc.ldV, tc.ldC, tc.ldD)
			code, out, errOut := runCmd(t, "version")
			if code != exitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if lines[0] != tc.wantFirst {
				t.Errorf("first line %q, want %q", lines[0], tc.wantFirst)
			}
			for _, want := range []string{
				"  commit     " + tc.wantCommit + "\n",
				"  built      " + tc.wantDay + "\n",
				"  go         " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n",
				"  client-go  " + clientGo + "\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("version lacks %q:\n%s", want, out)
				}
			}
			// --version prints the same, as does the plugin.
			if code, flagOut, _ := runCmd(t, "--version"); code != exitOK || flagOut != out {
				t.Errorf("--version: exit %d\n%s\nwant\n%s", code, flagOut, out)
			}
			if code, pluginOut, _ := runPlugin(t, "version"); code != exitOK || pluginOut != out {
				t.Errorf("kubectl ctpool version: exit %d\n%s", code, pluginOut)
			}

			code, out, _ = runCmd(t, "version", "-o", "json")
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil {
				t.Fatalf("version -o json: exit %d, %v\n%s", code, err, out)
			}
			if v["clientGoVersion"] != clientGo || v["commit"] != tc.wantCommit || v["date"] != tc.wantDay || v["goVersion"] != runtime.Version() {
				t.Errorf("version -o json: %v", v)
			}
		})
	}
}

// Every API request names the program, its version, the platform and the
// Kubernetes client version, as kubectl's User-Agent does.
func TestUserAgentCarriesTheVersion(t *testing.T) {
	setLinkVersion(t, "v1.5.0", "feedbeef", "")
	var mu sync.Mutex
	var agents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.UserAgent())
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer srv.Close()
	kc := filepath.Join(t.TempDir(), "config")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"" + srv.URL + "\"}\nusers:\n- name: u\n  user: {token: x}\ncontexts:\n- name: c\n  context: {cluster: c, user: u, namespace: vdi}\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	runCmd(t, "status", "desk")
	want := "ctpool-tui/v1.5.0 (" + runtime.GOOS + "/" + runtime.GOARCH + ") kubernetes/" + goModVersion(t, "k8s.io/client-go")
	mu.Lock()
	defer mu.Unlock()
	if len(agents) == 0 {
		t.Fatal("no request reached the server")
	}
	for _, a := range agents {
		if a != want {
			t.Errorf("User-Agent %q, want %q", a, want)
		}
	}
}
