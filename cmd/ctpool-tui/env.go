package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/config"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// env is what every command gets once the flags are parsed.
type env struct {
	opts   *kube.Options
	stdout io.Writer
	stderr io.Writer
	// log is the program's logger (set up from the logging flags before a
	// command runs); closeLog closes its file.
	logFlags logFlags
	log      *slog.Logger
	closeLog func()
	// settings is the settings file read before the command (nil: not
	// read; the defaults).
	settings *config.Config
}

// logger returns the program's logger, or one that logs nothing before the
// flags are parsed.
func (e *env) logger() *slog.Logger {
	if e.log == nil {
		return discardLogger()
	}
	return e.log
}

// engineFor connects to the cluster and returns an engine for the namespace
// whose writes are audited as the dashboard's are.
func (e *env) engineFor() (*engine.Engine, string, error) {
	cs, cfg, ns, err := e.clientFor()
	if err != nil {
		return nil, "", err
	}
	return kube.StampClocks(&engine.Engine{
		Cluster: kube.NewCluster(cs, ns), Namespace: ns, Now: time.Now, Audit: auditor(cs, ns).Record,
		// A force-release asks the API server first, as in the dashboard.
		Authorize: (&kube.Access{Client: cs, Namespace: ns}).Authorize,
	}, cfg), ns, nil
}

// clientFor resolves the namespace and connects: the clientset, the config
// it was built from and the namespace.
func (e *env) clientFor() (kubernetes.Interface, *rest.Config, string, error) {
	ns, err := e.opts.Namespace()
	if err != nil {
		return nil, nil, "", err
	}
	cs, cfg, err := e.opts.Clientset()
	if err != nil {
		return nil, nil, "", err
	}
	warning, err := e.checkServer(context.Background(), cs)
	if err != nil {
		return nil, nil, "", err
	}
	if warning != "" {
		fmt.Fprintln(e.stderr, "warning: "+oneLine(warning))
	}
	return cs, cfg, ns, nil
}

// versionCheckTimeout bounds the question for the API server's version: a
// server that does not answer in time gets no verdict, and the command's
// own requests report what is wrong.
const versionCheckTimeout = 5 * time.Second

// checkServer asks the API server for its version once: one older than
// ctpool-tui supports is an error (kube.ServerVersionError), one newer a
// warning, returned for the caller to show on stderr (a fleet of contexts
// shows none: its dashboard owns the terminal).
func (e *env) checkServer(ctx context.Context, cs kubernetes.Interface) (string, error) {
	vctx, cancel := context.WithTimeout(ctx, versionCheckTimeout)
	defer cancel()
	return kube.CheckServerVersion(vctx, discovery.ToServerVersionInterfaceWithContext(cs.Discovery()))
}

// auditor records audit Events in ns as the caller, whom it asks the API
// server about (SelfSubjectReview) on its first entry only.
func auditor(cs kubernetes.Interface, ns string) *kube.Auditor {
	return &kube.Auditor{Client: cs, Namespace: ns, Who: func(ctx context.Context) string {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		who, _ := kube.WhoAmI(wctx, cs)
		return who // "" is recorded as unknown
	}}
}

func kubernetesFor(cfg *rest.Config) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(cfg)
}
