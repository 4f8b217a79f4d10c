package kube

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// DefaultNamespace is used when neither the flag nor the kubeconfig context names one.
const DefaultNamespace = "corral"

// Client defaults: far above client-go's 5 QPS / 10 burst and above what an
// API server takes from one client (a 2-core control plane accepts about 500
// writes a second), so that a reconcile is paced by the API server, whose
// priority and fairness protect it, and never by a client-side token bucket.
// The engine's bounded concurrency (48 requests in flight per reconcile
// step) limits the load.
const (
	DefaultQPS   = 1000
	DefaultBurst = 2000
)

// Options are the connection flags, kubectl's (--kubeconfig, --context,
// -n/--namespace, --request-timeout, --as, ...) plus --qps and --burst.
type Options struct {
	Flags     *genericclioptions.ConfigFlags
	QPS       float32
	Burst     int
	UserAgent string
	// ContextNamespaces are the default namespaces of kubeconfig contexts
	// that the settings file names: before the kubeconfig context's own,
	// after -n.
	ContextNamespaces map[string]string
}

// NewOptions returns Options with the defaults.
func NewOptions() *Options {
	f := genericclioptions.NewConfigFlags(true)
	timeout := "0"
	f.Timeout = &timeout
	return &Options{Flags: f, QPS: DefaultQPS, Burst: DefaultBurst, UserAgent: "ctpool-tui"}
}

// AddFlags registers the flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Flags.AddFlags(fs)
	if f := fs.Lookup("request-timeout"); f != nil {
		f.Usage = "bound of each ordinary API request (e.g. 10s, 1m; 0: the built-in " + DefaultRequestBound.String() +
			"). Watches, followed logs and console sessions are never cut by it"
	}
	fs.Float32Var(&o.QPS, "qps", o.QPS, "client-side limit of API requests per second")
	fs.IntVar(&o.Burst, "burst", o.Burst, "client-side burst of API requests")
}

// RESTConfig loads the client configuration with kubectl's rules
// (--kubeconfig, KUBECONFIG with several files merged, --context, in-cluster).
func (o *Options) RESTConfig() (*rest.Config, error) {
	if err := o.checkConfigured(); err != nil {
		return nil, err
	}
	cfg, err := o.Flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	if o.QPS <= 0 || o.Burst <= 0 {
		return nil, fmt.Errorf("--qps and --burst must be greater than zero")
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	cfg.UserAgent = o.UserAgent
	// --request-timeout bounds ordinary requests only. client-go would make
	// it the http.Client's timeout, which also cuts every watch, informer
	// and followed log after that long; those are never bounded here.
	bound, err := o.RequestTimeout()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 0
	cfg.Wrap(BoundOrdinaryRequests(bound))
	rereadTokenFileOn401(cfg)
	watchServerClock(cfg)
	// Built-in types speak protobuf: smaller and faster to decode than JSON.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return cfg, nil
}

// rereadTokenFileOn401 makes a kubeconfig's tokenFile be read again after
// the API server answers 401, not only once a minute as client-go does for
// a tokenFile: a wall display whose token was rotated and the old one
// revoked at once is refused for one request, not for up to a minute. The
// file is still read again each minute (client-go's cached file source).
func rereadTokenFileOn401(cfg *rest.Config) {
	if cfg.BearerTokenFile == "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		return
	}
	ts := transport.NewCachedFileTokenSource(cfg.BearerTokenFile)
	cfg.BearerToken, cfg.BearerTokenFile = "", ""
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &tokenFileTransport{src: ts, rt: rt} })
}

// tokenFileTransport sets the token of a file on each request that has no
// Authorization header, and forgets it after a 401 so that the next request
// reads the file again.
type tokenFileTransport struct {
	src transport.ResettableTokenSource
	rt  http.RoundTripper
}

func (t *tokenFileTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" {
		return t.rt.RoundTrip(req)
	}
	tok, err := t.src.Token()
	if err != nil {
		return nil, fmt.Errorf("read the kubeconfig's tokenFile: %w", err)
	}
	req = utilnet.CloneRequest(req)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := t.rt.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		t.src.ResetTokenOlderThan(time.Now()) // the next request reads the file
	}
	return resp, err
}

// WrappedRoundTripper lets client-go reach the transport below.
func (t *tokenFileTransport) WrappedRoundTripper() http.RoundTripper { return t.rt }

// ErrNoKubeconfig is returned when no cluster is configured at all. The
// binary adds what its build offers instead (a release binary's --demo).
var ErrNoKubeconfig = errors.New("no cluster configured: KUBECONFIG is unset, ~/.kube/config does not exist, --kubeconfig and --server were not given, and this is not a Pod in a cluster")

// checkConfigured refuses to fall back to client-go's localhost:8080 default
// when nothing names a cluster.
func (o *Options) checkConfigured() error {
	if o.Flags.APIServer != nil && *o.Flags.APIServer != "" {
		return nil
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return nil
	}
	raw, err := o.Flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil // let the loader report its own error
	}
	if len(raw.Clusters) == 0 && len(raw.Contexts) == 0 {
		return ErrNoKubeconfig
	}
	return nil
}

// Clientset returns a clientset and the config it was built from.
func (o *Options) Clientset() (kubernetes.Interface, *rest.Config, error) {
	cfg, err := o.RESTConfig()
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cs, cfg, nil
}

// Namespace resolves the namespace: the flag, else the settings' namespace
// of the context (ContextNamespaces), else the kubeconfig context's
// namespace when it names one, else the in-cluster namespace, else "corral".
func (o *Options) Namespace() (string, error) {
	if o.Flags.Namespace != nil && *o.Flags.Namespace != "" {
		return *o.Flags.Namespace, nil
	}
	loader := o.Flags.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err == nil {
		name := raw.CurrentContext
		if o.Flags.Context != nil && *o.Flags.Context != "" {
			name = *o.Flags.Context
		}
		if ns := o.ContextNamespaces[name]; ns != "" && name != "" {
			return ns, nil
		}
		if c, ok := raw.Contexts[name]; ok && c.Namespace != "" {
			return c.Namespace, nil
		}
		if len(raw.Contexts) > 0 {
			return DefaultNamespace, nil
		}
	}
	// No kubeconfig: inside a Pod, use the Pod's namespace.
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns, nil
		}
	}
	return DefaultNamespace, nil
}

// ContextName is the kubeconfig context in use ("in-cluster" or "" when none).
func (o *Options) ContextName() string {
	if o.Flags.Context != nil && *o.Flags.Context != "" {
		return *o.Flags.Context
	}
	raw, err := o.Flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil || raw.CurrentContext == "" {
		if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
			return "in-cluster"
		}
		return ""
	}
	return raw.CurrentContext
}

// ForContext returns Options that connect through the kubeconfig context
// name, with every other connection flag as o's (--kubeconfig, -n, --as,
// --request-timeout, --qps, ...): one cluster of a fleet of contexts.
func (o *Options) ForContext(name string) *Options {
	f := genericclioptions.NewConfigFlags(true)
	src := o.Flags
	f.KubeConfig, f.ClusterName, f.AuthInfoName, f.Namespace = src.KubeConfig, src.ClusterName, src.AuthInfoName, src.Namespace
	f.APIServer, f.TLSServerName, f.Insecure, f.CertFile = src.APIServer, src.TLSServerName, src.Insecure, src.CertFile
	f.KeyFile, f.CAFile, f.BearerToken, f.Impersonate = src.KeyFile, src.CAFile, src.BearerToken, src.Impersonate
	f.ImpersonateUID, f.ImpersonateGroup, f.Username, f.Password = src.ImpersonateUID, src.ImpersonateGroup, src.Username, src.Password
	f.Timeout, f.DisableCompression = src.Timeout, src.DisableCompression
	f.Context = &name
	return &Options{Flags: f, QPS: o.QPS, Burst: o.Burst, UserAgent: o.UserAgent, ContextNamespaces: o.ContextNamespaces}
}

// Contexts returns the names of the kubeconfig's contexts, sorted.
func (o *Options) Contexts() ([]string, error) {
	raw, err := o.Flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	names := make([]string, 0, len(raw.Contexts))
	for name := range raw.Contexts {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, errors.New("the kubeconfig has no contexts")
	}
	return names, nil
}

// ParseContexts splits the value of --context a,b,c: trimmed, without
// duplicates, in the order given. A value without a comma is one context
// (nil: the caller keeps kubectl's single-context behaviour).
func ParseContexts(v string) ([]string, error) {
	if !strings.Contains(v, ",") {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range strings.Split(v, ",") {
		c = strings.TrimSpace(c)
		if c == "" || seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("--context needs at least one context name (a,b,c)")
	}
	return out, nil
}
