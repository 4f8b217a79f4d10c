package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

const kubeconfigMain = `apiVersion: v1
kind: Config
current-context: %s
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
users:
- name: u
  user:
    token: not-a-secret
contexts:
- name: with-ns
  context: {cluster: c, user: u, namespace: team-a}
- name: without-ns
  context: {cluster: c, user: u}
- name: other
  context: {cluster: c, user: u, namespace: team-d}
`

// The second file of a merged KUBECONFIG: its current-context loses to the first file's.
const kubeconfigSecond = `apiVersion: v1
kind: Config
current-context: second
clusters:
- name: c2
  cluster:
    server: https://127.0.0.2:6443
users:
- name: u2
  user:
    token: not-a-secret
contexts:
- name: second
  context: {cluster: c2, user: u2, namespace: team-second}
`

func writeKubeconfig(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOptionsNamespace(t *testing.T) {
	tests := []struct {
		name       string
		current    string // current-context of the main file; "" means no kubeconfig at all
		second     bool   // KUBECONFIG lists the second file too
		flagNS     string
		flagCtx    string
		flagKC     bool // pass the main file with --kubeconfig instead of KUBECONFIG
		podNS      string
		settings   map[string]string // the settings' namespaces of contexts
		want       string
		wantCtxNam string
	}{
		{name: "flag wins", current: "with-ns", flagNS: "from-flag", want: "from-flag", wantCtxNam: "with-ns"},
		{name: "flag wins over --context", current: "with-ns", flagNS: "from-flag", flagCtx: "other", want: "from-flag", wantCtxNam: "other"},
		{name: "current context namespace", current: "with-ns", want: "team-a", wantCtxNam: "with-ns"},
		{name: "context without namespace", current: "without-ns", want: DefaultNamespace, wantCtxNam: "without-ns"},
		{name: "--context selects another context", current: "with-ns", flagCtx: "other", want: "team-d", wantCtxNam: "other"},
		{name: "--context without namespace", current: "with-ns", flagCtx: "without-ns", want: DefaultNamespace, wantCtxNam: "without-ns"},
		{name: "--context that does not exist", current: "with-ns", flagCtx: "nope", want: DefaultNamespace, wantCtxNam: "nope"},
		{name: "--kubeconfig", current: "other", flagKC: true, want: "team-d", wantCtxNam: "other"},
		{name: "two files merged: first current-context wins", current: "second", second: true, want: "team-second", wantCtxNam: "second"},
		{name: "two files merged: --context from the first", current: "second", second: true, flagCtx: "with-ns", want: "team-a", wantCtxNam: "with-ns"},
		{name: "two files merged: main current-context", current: "without-ns", second: true, want: DefaultNamespace, wantCtxNam: "without-ns"},
		{name: "settings over the context's", current: "with-ns", settings: map[string]string{"with-ns": "vdi"}, want: "vdi", wantCtxNam: "with-ns"},
		{name: "settings for a context without one", current: "without-ns", settings: map[string]string{"without-ns": "vdi"}, want: "vdi", wantCtxNam: "without-ns"},
		{name: "settings of --context", current: "with-ns", flagCtx: "other", settings: map[string]string{"with-ns": "vdi", "other": "vdi-other"}, want: "vdi-other", wantCtxNam: "other"},
		{name: "settings of another context", current: "with-ns", settings: map[string]string{"other": "vdi"}, want: "team-a", wantCtxNam: "with-ns"},
		{name: "flag over settings", current: "with-ns", flagNS: "from-flag", settings: map[string]string{"with-ns": "vdi"}, want: "from-flag", wantCtxNam: "with-ns"},
		{name: "no kubeconfig, in a Pod", podNS: "pod-ns", want: "pod-ns"},
		{name: "no kubeconfig", want: DefaultNamespace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("HOME", dir) // no ~/.kube/config of the machine running the tests
			t.Setenv("POD_NAMESPACE", tt.podNS)
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			kc := filepath.Join(dir, "missing")
			if tt.current != "" {
				kc = writeKubeconfig(t, dir, "main", strings.Replace(kubeconfigMain, "%s", tt.current, 1))
			}
			env := kc
			if tt.second {
				env += string(os.PathListSeparator) + writeKubeconfig(t, dir, "second", kubeconfigSecond)
			}
			o := NewOptions()
			if tt.flagKC {
				*o.Flags.KubeConfig = kc
				env = filepath.Join(dir, "missing")
			}
			t.Setenv("KUBECONFIG", env)
			*o.Flags.Namespace = tt.flagNS
			*o.Flags.Context = tt.flagCtx
			o.ContextNamespaces = tt.settings
			if tt.flagCtx != "" {
				// A context of a fleet of contexts resolves the same way.
				if got, err := o.ForContext(tt.flagCtx).Namespace(); err != nil || got != tt.want {
					t.Errorf("ForContext(%q).Namespace() = %q, %v; want %q", tt.flagCtx, got, err, tt.want)
				}
			}

			got, err := o.Namespace()
			if err != nil || got != tt.want {
				t.Fatalf("Namespace() = %q, %v; want %q", got, err, tt.want)
			}
			if cn := o.ContextName(); cn != tt.wantCtxNam {
				t.Fatalf("ContextName() = %q, want %q", cn, tt.wantCtxNam)
			}
		})
	}
}

func TestOptionsFlagsAndRESTConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", writeKubeconfig(t, dir, "main", strings.Replace(kubeconfigMain, "%s", "with-ns", 1)))

	tests := []struct {
		name      string
		args      []string
		wantQPS   float32
		wantBurst int
		wantNS    string
		wantErr   string
	}{
		{name: "defaults", wantQPS: DefaultQPS, wantBurst: DefaultBurst, wantNS: "team-a"},
		{name: "flags", args: []string{"--qps", "5", "--burst", "7", "-n", "x", "--context", "other"}, wantQPS: 5, wantBurst: 7, wantNS: "x"},
		{name: "zero qps", args: []string{"--qps", "0"}, wantErr: "--qps and --burst must be greater than zero"},
		{name: "negative burst", args: []string{"--burst", "-1"}, wantErr: "--qps and --burst must be greater than zero"},
		{name: "unknown context", args: []string{"--context", "nope"}, wantErr: "load kubeconfig"},
		{name: "request timeout", args: []string{"--request-timeout", "5"}, wantQPS: DefaultQPS, wantBurst: DefaultBurst, wantNS: "team-a"},
		{name: "bad request timeout", args: []string{"--request-timeout", "soon"}, wantErr: "Invalid timeout value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := o.RESTConfig()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("RESTConfig = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.QPS != tt.wantQPS || cfg.Burst != tt.wantBurst || cfg.UserAgent != "ctpool-tui" || cfg.Host != "https://127.0.0.1:6443" {
				t.Fatalf("config qps %v burst %d agent %q host %q", cfg.QPS, cfg.Burst, cfg.UserAgent, cfg.Host)
			}
			// No client-wide timeout: it would cut every watch and followed log.
			if cfg.ContentType != "application/vnd.kubernetes.protobuf" || cfg.Timeout != 0 || cfg.WrapTransport == nil {
				t.Fatalf("content type %q timeout %v wrapped %v", cfg.ContentType, cfg.Timeout, cfg.WrapTransport != nil)
			}
			if ns, _ := o.Namespace(); ns != tt.wantNS {
				t.Fatalf("namespace %q, want %q", ns, tt.wantNS)
			}
			cs, _, err := o.Clientset()
			if err != nil || cs == nil {
				t.Fatalf("Clientset: %v", err)
			}
		})
	}
}

func TestOptionsForContext(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", writeKubeconfig(t, dir, "main", strings.Replace(kubeconfigMain, "%s", "with-ns", 1))+
		string(os.PathListSeparator)+writeKubeconfig(t, dir, "second", kubeconfigSecond))
	o := NewOptions()
	names, err := o.Contexts()
	if err != nil || strings.Join(names, ",") != "other,second,with-ns,without-ns" {
		t.Fatalf("Contexts() = %v, %v", names, err)
	}
	tests := []struct {
		context, flagNS, as string
		wantNS, wantHost    string
	}{
		{context: "other", wantNS: "team-d", wantHost: "https://127.0.0.1:6443"},
		{context: "second", wantNS: "team-second", wantHost: "https://127.0.0.2:6443"},
		{context: "without-ns", wantNS: DefaultNamespace, wantHost: "https://127.0.0.1:6443"},
		{context: "second", flagNS: "from-flag", as: "alice", wantNS: "from-flag", wantHost: "https://127.0.0.2:6443"},
	}
	for _, tt := range tests {
		t.Run(tt.context+"/"+tt.flagNS, func(t *testing.T) {
			*o.Flags.Namespace, *o.Flags.Impersonate = tt.flagNS, tt.as
			c := o.ForContext(tt.context)
			ns, err := c.Namespace()
			if err != nil || ns != tt.wantNS || c.ContextName() != tt.context {
				t.Fatalf("namespace %q, %v, context %q; want %q in %s", ns, err, c.ContextName(), tt.wantNS, tt.context)
			}
			cfg, err := c.RESTConfig()
			if err != nil || cfg.Host != tt.wantHost || cfg.Impersonate.UserName != tt.as || cfg.QPS != DefaultQPS {
				t.Fatalf("RESTConfig() host %q, as %q, qps %v, %v; want %s as %q", cfg.Host, cfg.Impersonate.UserName, cfg.QPS, err, tt.wantHost, tt.as)
			}
		})
	}
	if *o.Flags.Context != "" {
		t.Errorf("ForContext changed the original --context to %q", *o.Flags.Context)
	}
}

func TestParseContexts(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "prod", want: nil}, // one context: kubectl's own --context
		{in: "a,b", want: []string{"a", "b"}},
		{in: " a , b ,a,", want: []string{"a", "b"}},
		{in: "arn:aws:eks:eu-west-1:1:cluster/prod,lab", want: []string{"arn:aws:eks:eu-west-1:1:cluster/prod", "lab"}},
		{in: ",", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseContexts(tt.in)
		if (err != nil) != tt.wantErr || strings.Join(got, "|") != strings.Join(tt.want, "|") || (got == nil) != (tt.want == nil) {
			t.Errorf("ParseContexts(%q) = %q, %v; want %q (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
