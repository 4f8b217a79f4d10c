//go:build integration

package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// wallAccount is the ServiceAccount the wall runs as, bound to the viewer
// Role that `ctpool-tui rbac` generates.
const wallAccount = "wall"

// Env of the test binary run as an exec credential plugin.
const (
	execTokenFileEnv = "CTPOOL_TEST_EXEC_TOKEN_FILE"
	execTTLEnv       = "CTPOOL_TEST_EXEC_TTL"
)

// TestExecCredentialPluginProcess is not a test: run by client-go as the
// exec credential plugin of TestIntegrationWallExecPluginRotation, it
// prints an ExecCredential with the token in the file its env names,
// expiring a few seconds ahead.
func TestExecCredentialPluginProcess(t *testing.T) {
	path := os.Getenv(execTokenFileEnv)
	if path == "" {
		t.Skip("run by the exec credential test only")
	}
	ttl, err := time.ParseDuration(os.Getenv(execTTLEnv))
	tok, rerr := os.ReadFile(path)
	if err != nil || rerr != nil {
		fmt.Fprintln(os.Stderr, "exec plugin:", err, rerr)
		os.Exit(1)
	}
	exp := metav1.NewTime(time.Now().Add(ttl))
	out, _ := json.Marshal(map[string]any{
		"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
		"status": map[string]any{"token": strings.TrimSpace(string(tok)), "expirationTimestamp": exp},
	})
	os.Stdout.Write(append(out, '\n'))
	os.Exit(0)
}

// credsPlane is the ServiceAccount's side of the plane: bound tokens, each
// revoked by deleting the Secret it is bound to.
type credsPlane struct {
	t      *testing.T
	env    *kubetest.Env
	file   string // where the current token is written
	n      int
	secret string // the Secret of the token last minted
}

func newCredsPlane(t *testing.T, env *kubetest.Env) *credsPlane {
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: wallAccount}}
	if _, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role, binding, err := kube.RoleObjects("viewer", env.Namespace, "ServiceAccount:"+wallAccount)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.RbacV1().Roles(env.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.RbacV1().RoleBindings(env.Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &credsPlane{t: t, env: env, file: filepath.Join(t.TempDir(), "token")}
}

// mint creates a Secret and a token bound to it, and returns the token and
// the Secret's name.
func (p *credsPlane) mint() (token, secret string) {
	p.t.Helper()
	ctx := p.t.Context()
	p.n++
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("wall-token-%d", p.n)}}
	s, err := p.env.Client.CoreV1().Secrets(p.env.Namespace).Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		p.t.Fatal(err)
	}
	exp := int64(600) // the API server's minimum
	tr, err := p.env.Client.CoreV1().ServiceAccounts(p.env.Namespace).CreateToken(ctx, wallAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp, BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Secret", APIVersion: "v1", Name: s.Name, UID: s.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		p.t.Fatal(err)
	}
	return tr.Status.Token, s.Name
}

// revoke deletes a token's Secret: the API server refuses the token from then on.
func (p *credsPlane) revoke(secret string) {
	p.t.Helper()
	if err := p.env.Client.CoreV1().Secrets(p.env.Namespace).Delete(p.t.Context(), secret, metav1.DeleteOptions{}); err != nil {
		p.t.Fatal(err)
	}
}

// write replaces the token file at once (a rename, as a rotating agent does).
func (p *credsPlane) write(token string) {
	p.t.Helper()
	tmp := p.file + ".new"
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Rename(tmp, p.file); err != nil {
		p.t.Fatal(err)
	}
}

// rotate writes a new good token, then revokes the one before it.
func (p *credsPlane) rotate() string {
	tok, secret := p.mint()
	p.write(tok)
	if p.secret != "" {
		p.revoke(p.secret)
	}
	p.secret = secret
	return tok
}

// kubeconfig writes a kubeconfig for the plane's API server whose user is
// user, and returns its path.
func (p *credsPlane) kubeconfig(user *clientcmdapi.AuthInfo) string {
	p.t.Helper()
	cfg := p.env.Config
	c := clientcmdapi.NewConfig()
	c.Clusters["plane"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos[wallAccount] = user
	c.Contexts["wall"] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: wallAccount, Namespace: p.env.Namespace}
	c.CurrentContext = "wall"
	path := filepath.Join(p.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// acceptedTokens records the bearer tokens the API server answered
// without a 401.
type acceptedTokens struct {
	mu sync.Mutex
	ok map[string]bool
}

func (a *acceptedTokens) accepted(tok string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ok[tok]
}

// wallClient loads the kubeconfig as the program does (kube.Options) and
// records the tokens accepted.
func wallClient(t *testing.T, path string) (kubernetes.Interface, *acceptedTokens) {
	t.Helper()
	o := kube.NewOptions()
	o.Flags.KubeConfig = &path
	cfg, err := o.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	acc := &acceptedTokens{ok: map[string]bool{}}
	// Innermost, so that it sees the Authorization header the token
	// file's or the exec plugin's wrapper sets.
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(base http.RoundTripper) http.RoundTripper {
		var rt http.RoundTripper = roundTrip(func(r *http.Request) (*http.Response, error) {
			resp, err := base.RoundTrip(r)
			if err == nil && resp.StatusCode != http.StatusUnauthorized {
				acc.mu.Lock()
				acc.ok[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] = true
				acc.mu.Unlock()
			}
			return resp, err
		})
		if prev != nil {
			rt = prev(rt)
		}
		return rt
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, acc
}

// runWallRotation runs the read-only wall on the ServiceAccount's
// credentials across three rotations, a refused token and its recovery.
func runWallRotation(t *testing.T, env *kubetest.Env, p *credsPlane, path string) {
	seedPool(t, env, "wall", "")
	start := time.Now()
	client, acc := wallClient(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watcher := kube.NewWatcher(client, env.Namespace)
	if err := watcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	m := newModel(ctx, Options{
		Context: "wall", Namespace: env.Namespace, ReadOnly: true, Theme: themes.Dark(), Renderer: themes.NoColorRenderer(io.Discard),
		Now: time.Now, Data: watcher, Resolver: &resolver{events: &kube.Events{Client: client}},
	})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	pc := newPaced(m, watcher, 250*time.Millisecond)
	live := func(v string) bool { return strings.Contains(v, "live · data") && !strings.Contains(v, "refused") }
	load(m, watcher)
	pc.until(t, "live wall with the pool", 30*time.Second, func(v string) bool { return live(v) && strings.Contains(v, "wall") })

	for i := 1; i <= 3; i++ {
		tok := p.rotate()
		pool := fmt.Sprintf("rot%d", i)
		seedPool(t, env, pool, "")
		took := pc.until(t, pool+" on a live wall with rotated token "+fmt.Sprint(i), 20*time.Second, func(v string) bool {
			return live(v) && strings.Contains(v, pool) && acc.accepted(tok)
		})
		t.Logf("rotation %d: %s shown live on the new token %s after the rotation", i, pool, took.Round(time.Millisecond))
	}

	// The token in use is revoked and the file holds a revoked one too.
	bad, badSecret := p.mint()
	p.revoke(badSecret)
	p.write(bad)
	p.revoke(p.secret)
	p.secret = ""
	took := pc.until(t, "credentials refused", 20*time.Second, func(v string) bool {
		return strings.Contains(v, "credentials refused · data ") && !strings.Contains(v, "live")
	})
	t.Logf("credentials refused shown %s after the revocation", took.Round(time.Millisecond))
	for range 4 { // it stays, whatever the open watches deliver
		pc.step()
	}
	if v := m.View(); !strings.Contains(v, "credentials refused") {
		t.Fatalf("the refusal did not stay:\n%s", v)
	}

	tok := p.rotate()
	took = pc.until(t, "live wall after a good token", 20*time.Second, func(v string) bool { return live(v) && acc.accepted(tok) })
	t.Logf("live again %s after a good token was written", took.Round(time.Millisecond))
	seedPool(t, env, "recov1", "")
	pc.until(t, "a change after the recovery", 20*time.Second, func(v string) bool { return live(v) && strings.Contains(v, "recov1") })
	if pc.quit {
		t.Fatal("the model returned tea.Quit")
	}
	t.Logf("the wall ran %s", time.Since(start).Round(time.Millisecond))
}

// A wall whose kubeconfig names a ServiceAccount token in a tokenFile
// keeps updating across rotations of the file, says "credentials refused"
// when the token in it is refused and recovers when a good one is written,
// without a restart. client-go reads the file again every minute and after
// a 401.
func TestIntegrationWallTokenFileRotation(t *testing.T) {
	env := kubetest.Require(t)
	p := newCredsPlane(t, env)
	p.rotate()
	path := p.kubeconfig(&clientcmdapi.AuthInfo{TokenFile: p.file})
	runWallRotation(t, env, p, path)
}

// The same with an exec credential plugin (client.authentication.k8s.io/v1)
// whose credentials expire 3s after each run: client-go runs it again on
// expiry and after a 401.
func TestIntegrationWallExecPluginRotation(t *testing.T) {
	env := kubetest.Require(t)
	p := newCredsPlane(t, env)
	p.rotate()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := p.kubeconfig(&clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: self,
		Args:            []string{"-test.run=^TestExecCredentialPluginProcess$"},
		Env:             []clientcmdapi.ExecEnvVar{{Name: execTokenFileEnv, Value: p.file}, {Name: execTTLEnv, Value: "3s"}},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}})
	runWallRotation(t, env, p, path)
}
