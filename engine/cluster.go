package engine

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Reader reads one pool's objects: fresh from the API server (the commands)
// or from an informer cache (the dashboard). A stale read is safe: every write
// the engine makes is guarded by a Lease, a resourceVersion or a UID.
type Reader interface {
	Snapshot(ctx context.Context, pool string) (Snapshot, error)
}

// Kind names the kinds of object the engine waits on.
type Kind string

// Kinds of member objects.
const (
	KindPod Kind = "Pod"
	KindPVC Kind = "PersistentVolumeClaim"
	// KindService is a member's console Service. The contract grants only
	// its delete, so an implementation may wait for it with deletes alone
	// (a delete that answers NotFound: gone).
	KindService Kind = "Service"
)

// Writer is every write the engine makes, in the namespace it is bound to.
// Implementations map API errors onto ErrConflict, ErrAlreadyExists,
// ErrNotFound and ErrForbidden (wrapped with %w).
type Writer interface {
	CreateConfigMap(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error)
	// PatchConfigMap merge-patches labels and data keys of a ConfigMap. The
	// patch carries resourceVersion rv, so it is a compare-and-swap: it fails
	// with ErrConflict when the ConfigMap changed since rv was read. (A patch,
	// not an update, so that the contract's ConfigMap verbs are enough.)
	PatchConfigMap(ctx context.Context, name, rv string, labels, data map[string]string) error
	// PatchConfigMapData merge-patches one key of a ConfigMap's data.
	PatchConfigMapData(ctx context.Context, name, key, value string) error
	// DeleteConfigMap deletes with a UID precondition when uid is set.
	DeleteConfigMap(ctx context.Context, name string, uid types.UID) error

	// CreatePod and CreatePVC return the object created (nil on error).
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	CreatePVC(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error)
	// DeletePod and DeletePVC succeed when the object is already gone and
	// apply a UID precondition when uid is set.
	DeletePod(ctx context.Context, name string, uid types.UID) error
	DeletePVC(ctx context.Context, name string, uid types.UID) error
	// AnnotatePVC sets (or, with nil, removes) one annotation.
	AnnotatePVC(ctx context.Context, name, key string, value *string) error
	// DeleteService succeeds when the Service does not exist.
	DeleteService(ctx context.Context, name string) error

	// GetConfigMap reads one ConfigMap fresh from the API server
	// (ErrNotFound when there is none): a claim reads its pool's definition
	// and recorded status by name.
	GetConfigMap(ctx context.Context, name string) (*corev1.ConfigMap, error)
	// ListLabelledLeases reads fresh the Leases labelled with the pool and,
	// when holder is not empty, with LabelHolder's value of that holder
	// (HolderLabel). It does not see a Lease without the labels (one a broker
	// wrote by name alone): ListLeases does. A claim lists this little in a
	// crowd, where every claimant listing every Lease would cost n times the
	// pool.
	ListLabelledLeases(ctx context.Context, pool, holder string) ([]*coordinationv1.Lease, error)
	// GetLease reads one Lease fresh from the API server (ErrNotFound when
	// there is none).
	GetLease(ctx context.Context, name string) (*coordinationv1.Lease, error)

	// CreateLease fails with ErrAlreadyExists when the Lease exists: the
	// first writer wins.
	CreateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error)
	// UpdateLease is a compare-and-swap on l.ResourceVersion (ErrConflict).
	UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error)
	// ListLeases reads the pool's Leases fresh from the API server, also when
	// Snapshot reads a cache: a claim decides on them after it won a Lease.
	ListLeases(ctx context.Context, pool string) ([]*coordinationv1.Lease, error)
	// DeleteLease deletes with a resourceVersion precondition when rv is set;
	// it succeeds when the Lease is already gone.
	DeleteLease(ctx context.Context, name, rv string) error

	// GetPod reads one Pod fresh from the API server (ErrNotFound when
	// there is none), also when Snapshot reads a cache.
	GetPod(ctx context.Context, name string) (*corev1.Pod, error)
	// GetPVC reads one PVC fresh from the API server (ErrNotFound when
	// there is none), also when Snapshot reads a cache.
	GetPVC(ctx context.Context, name string) (*corev1.PersistentVolumeClaim, error)

	// WaitGone returns when the object is gone (or replaced by one with
	// another UID), with a watch or polling, honouring ctx.
	WaitGone(ctx context.Context, kind Kind, name string, uid types.UID) error

	// The pool's PodDisruptionBudget and the claim marks of its Pods.
	DisruptionBudgetClient
}

// Cluster is what the operations need.
type Cluster interface {
	Reader
	Writer
}

// CachedReader is a Cluster whose Snapshot reads a cache the caller keeps up
// to date (the dashboard's informers): a read of the whole pool costs the
// API server nothing, so a claim reads it rather than the recorded status.
type CachedReader interface {
	SnapshotsCached() bool
}

// Engine runs the pool operations against one namespace.
type Engine struct {
	Cluster   Cluster
	Namespace string
	// Now is the clock; the engine never reads the wall clock itself.
	Now func() time.Time
	// Concurrency bounds the API requests one reconcile step has in flight,
	// and so the members it works on at once (each of its workers sends one
	// request at a time).
	Concurrency int
	// WaitTimeout bounds each wait for a deleted Pod or PVC (default 2 minutes).
	WaitTimeout time.Duration
	// Audit, when set, is told of every write an operation made on behalf of
	// a person (claim, release, apply, resize, delete, reconcile actions).
	Audit func(ctx context.Context, e AuditEntry)
	// Progress, when set, is told how a reconcile step goes (after each of
	// its members, Progress.Done of Progress.Total) and of each wait for a
	// deleted object, as it starts and ends. The calls of one step come one
	// at a time, from its workers: it must return quickly.
	Progress func(Progress)
	// Authorize, when set, asks the API server whether the caller holds a
	// guarded permission (PermForceRelease); it returns an error wrapping
	// ErrForbidden when not.
	Authorize func(ctx context.Context, p Permission) error
	// ClockID names the clock Now reads (the machine's host name): a time
	// this engine stamps for a duration after which something is deleted
	// (an elastic pool's aboveSince) carries it, and a stamp of another
	// clock is never trusted for such a duration (DECISIONS, "Clocks").
	// Empty: an engine that only meets stamps without a name.
	ClockID string
	// ServerOffset, when set, says how far the API server's clock is ahead
	// of Now (ok false: not known yet). A reconcile whose clock is more
	// than SkewTolerance off stamps its history samples on the server's
	// clock, so that a machine a day fast cannot cut a pool's history.
	ServerOffset func() (offset time.Duration, ok bool)
}

// serverNow is the clock reading that history samples are stamped with:
// Now, or the API server's time when Now is more than SkewTolerance off it.
func (e *Engine) serverNow() time.Time {
	now := e.Now()
	if e.ServerOffset == nil {
		return now
	}
	if off, ok := e.ServerOffset(); ok && (off > SkewTolerance || off < -SkewTolerance) {
		return now.Add(off)
	}
	return now
}

// AuditEntry describes one operation for the audit trail.
type AuditEntry struct {
	Pool           string
	Action         Action // claim, release, force-release, apply, resize, delete
	Member         string
	Identity       string // the claim identity given, when any
	PreviousHolder string // for a force-release
	Detail         string
	Err            error
}

// DefaultConcurrency is the default bound of a reconcile step's requests in
// flight (and members worked on at once).
const DefaultConcurrency = 48

func (e *Engine) concurrency() int {
	if e.Concurrency > 0 {
		return e.Concurrency
	}
	return DefaultConcurrency
}

func (e *Engine) waitTimeout() time.Duration {
	if e.WaitTimeout > 0 {
		return e.WaitTimeout
	}
	return DeleteWaitTimeout
}

func (e *Engine) audit(ctx context.Context, a AuditEntry) {
	if e.Audit != nil {
		e.Audit(ctx, a)
	}
}

// NamespaceReader is a Cluster that can read the labels of its namespace.
// It is optional: apply checks the pool's Pod Security level against the
// level the namespace enforces (LabelPodSecurityEnforce) with it, and skips
// the check on a Cluster without it. It returns an error wrapping
// ErrForbidden or ErrNotFound when the namespace cannot be read (the
// caller may lack "get namespaces", a cluster-scoped permission).
type NamespaceReader interface {
	NamespaceLabels(ctx context.Context) (map[string]string, error)
}

// SecretReader is a Cluster that can read the type of a Secret in its
// namespace, and nothing else of it: apply checks each of a pool's
// imagePullSecrets with it, and skips the check on a Cluster without it. It
// returns an error wrapping ErrNotFound when there is no such Secret and
// ErrForbidden when the caller may not read it.
type SecretReader interface {
	SecretType(ctx context.Context, name string) (corev1.SecretType, error)
}
