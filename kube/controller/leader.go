package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaseName is the Lease the reconcilers elect their leader on. It is never
// a member Lease: those are named corral-vdi-ct-<pool>-<n> and carry the
// pool label, this one carries neither.
const LeaseName = "ctpool-tui-reconciler"

// Leader election defaults (those of the Kubernetes control plane).
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// ErrLeadershipLost is returned by Run when this instance could not renew its
// Lease in time: it has stopped writing; the process should exit non-zero and
// be restarted (it then stands by as a candidate again).
var ErrLeadershipLost = errors.New("leadership lost: the election Lease could not be renewed in time")

// LeaderElection configures the election of the one instance that writes.
type LeaderElection struct {
	// Client writes the election Lease (default: the controller's client).
	Client kubernetes.Interface
	// Namespace of the Lease (default: the controller's namespace).
	Namespace string
	// Name of the Lease (default LeaseName).
	Name string
	// Identity of this instance (default DefaultIdentity()).
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

func (le *LeaderElection) complete(o Options) error {
	if le.Client == nil {
		le.Client = o.Client
	}
	if le.Namespace == "" {
		le.Namespace = o.Namespace
	}
	if le.Namespace == "" {
		return errors.New("leader election: no namespace for the Lease (with all namespaces, give --leader-elect-namespace)")
	}
	if le.Name == "" {
		le.Name = LeaseName
	}
	if le.Identity == "" {
		le.Identity = DefaultIdentity()
	}
	if le.LeaseDuration <= 0 {
		le.LeaseDuration = DefaultLeaseDuration
	}
	if le.RenewDeadline <= 0 {
		le.RenewDeadline = DefaultRenewDeadline
	}
	if le.RetryPeriod <= 0 {
		le.RetryPeriod = DefaultRetryPeriod
	}
	if !(le.RetryPeriod < le.RenewDeadline && le.RenewDeadline < le.LeaseDuration) {
		return fmt.Errorf("leader election: want retry period (%s) < renew deadline (%s) < lease duration (%s)", le.RetryPeriod, le.RenewDeadline, le.LeaseDuration)
	}
	return nil
}

// DefaultIdentity is POD_NAME when set (the downward API), else the host
// name with a random suffix, so that two processes on one host differ.
func DefaultIdentity() string {
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "ctpool-tui"
	}
	return h + "_" + utilrand.String(8)
}

// LeaderElectionRules are the permissions the election needs on its own
// Lease, from what client-go's LeaseLock does: it gets the Lease, creates it
// when missing, and updates it to renew, take over or release. RBAC cannot
// restrict a create by name, so create is granted on Leases in general.
func LeaderElectionRules(leaseName string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{leaseName}, Verbs: []string{"get", "update"}},
	}
}

// runElected campaigns for the Lease and runs the workers while leading.
//
// On ctx's end (SIGTERM) the workers stop first and finish or abandon their
// reconcile; only then is the Lease released (ReleaseOnCancel), so that no
// successor starts while this instance still writes; Run returns nil. When
// the Lease cannot be renewed, the workers' context is cancelled at once and
// Run returns ErrLeadershipLost after they stopped: this instance does not
// campaign again in-process; the process exits non-zero and is restarted.
func (c *Controller) runElected(ctx context.Context) error {
	cfg := c.opts.LeaderElection
	// The election outlives ctx until the workers have stopped.
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()
	leading := make(chan context.Context, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
			Client:     cfg.Client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
			Labels:     map[string]string{"app.kubernetes.io/name": "ctpool-tui"},
		},
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) { leading <- lctx },
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id == cfg.Identity {
					c.opts.Logger.Info("leading", "identity", id, "lease", cfg.Namespace+"/"+cfg.Name)
				} else {
					c.opts.Logger.Info("standing by", "identity", cfg.Identity, "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	c.elector.Store(elector)
	c.opts.Logger.Info("campaigning", "identity", cfg.Identity, "lease", cfg.Namespace+"/"+cfg.Name)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		elector.Run(leCtx)
	}()
	select {
	case <-ctx.Done(): // stopped while standing by
		leCancel()
		<-ran
		return nil
	case <-ran: // only when leCtx ends, which it does not before ctx
		return nil
	case lctx := <-leading:
		wctx, cancel := context.WithCancel(lctx)
		stop := context.AfterFunc(ctx, cancel)
		c.runWorkers(wctx)
		stop()
		cancel()
		leCancel() // release the Lease now that nothing writes
		<-ran
		if ctx.Err() != nil {
			c.opts.Logger.Info("stopped leading; Lease released", "lease", cfg.Namespace+"/"+cfg.Name)
			return nil
		}
		c.opts.Logger.Error("leadership lost", "identity", cfg.Identity, "lease", cfg.Namespace+"/"+cfg.Name)
		return ErrLeadershipLost
	}
}

// leaderHealthy is the election's part of /readyz: a leader whose Lease
// expired more than the renew deadline ago is not healthy; a candidate
// standing by is.
func (c *Controller) leaderHealthy() error {
	e := c.elector.Load()
	if e == nil {
		return nil
	}
	return e.Check(c.opts.LeaderElection.RenewDeadline)
}
