package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Cluster implements engine.Cluster on a clientset for one namespace. Its
// Snapshot reads fresh from the API server; set Reader to read from a cache.
type Cluster struct {
	Client    kubernetes.Interface
	Namespace string
	// Reader, when set, answers Snapshot instead of fresh List calls (for
	// example the dashboard's informer cache).
	Reader engine.Reader
}

var _ engine.Cluster = (*Cluster)(nil)
var _ engine.NamespaceReader = (*Cluster)(nil)

var _ engine.SecretReader = (*Cluster)(nil)

// SecretType reads the type of a Secret (get secrets, an optional
// permission: OptionalPermissions). The API sends the Secret whole; its
// data is dropped here and never returned, logged or kept.
func (c *Cluster) SecretType(ctx context.Context, name string) (corev1.SecretType, error) {
	s, err := c.Client.CoreV1().Secrets(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", MapError(err)
	}
	return s.Type, nil
}

// NamespaceLabels reads the labels of the namespace (get namespaces, an
// optional permission: OptionalPermissions). A Forbidden or NotFound answer
// wraps engine.ErrForbidden or engine.ErrNotFound.
func (c *Cluster) NamespaceLabels(ctx context.Context) (map[string]string, error) {
	ns, err := c.Client.CoreV1().Namespaces().Get(ctx, c.Namespace, metav1.GetOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return ns.Labels, nil
}

// NewCluster returns a Cluster for namespace.
func NewCluster(client kubernetes.Interface, namespace string) *Cluster {
	return &Cluster{Client: client, Namespace: namespace}
}

// PoolSelector selects the objects of one pool.
func PoolSelector(pool string) string {
	return labels.SelectorFromSet(labels.Set{engine.LabelPool: pool}).String()
}

// Snapshot reads the pool's ConfigMap, its labelled Pods and PVCs, and its
// claim Leases, labelled or not (the namespace's Leases named for a member
// of the pool, engine.LeaseInPool), and the down nodes (NodeDown; nil when
// the nodes cannot be read): five requests, sent at once, so that a fresh
// read costs one round trip's latency rather than five.
func (c *Cluster) Snapshot(ctx context.Context, pool string) (engine.Snapshot, error) {
	if c.Reader != nil {
		return c.Reader.Snapshot(ctx, pool)
	}
	snap := engine.Snapshot{Namespace: c.Namespace, Pool: pool}
	opts := metav1.ListOptions{LabelSelector: PoolSelector(pool)}
	var (
		pods   *corev1.PodList
		pvcs   *corev1.PersistentVolumeClaimList
		leases []*coordinationv1.Lease
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		cm, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(gctx, engine.ConfigMapName(pool), metav1.GetOptions{})
		switch err = MapError(err); {
		case err == nil:
			snap.ConfigMap = cm
		case !errors.Is(err, engine.ErrNotFound):
			return err
		}
		return nil
	})
	g.Go(func() (err error) {
		pods, err = c.Client.CoreV1().Pods(c.Namespace).List(gctx, opts)
		return MapError(err)
	})
	g.Go(func() (err error) {
		pvcs, err = c.Client.CoreV1().PersistentVolumeClaims(c.Namespace).List(gctx, opts)
		return MapError(err)
	})
	g.Go(func() (err error) {
		leases, err = c.poolLeases(gctx, pool)
		return err
	})
	var down map[string]string
	var cordoned map[string]bool
	g.Go(func() error {
		down, cordoned = NodeStates(gctx, c.Client) // optional: nil when unreadable
		return nil
	})
	if err := g.Wait(); err != nil {
		return engine.Snapshot{Namespace: c.Namespace, Pool: pool}, err
	}
	snap.Pods, snap.PVCs, snap.Leases, snap.NodeDown, snap.NodeCordoned = ptrs(pods.Items), ptrs(pvcs.Items), leases, down, cordoned
	return snap, nil
}

// CreateConfigMap creates a ConfigMap.
func (c *Cluster) CreateConfigMap(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	out, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	return out, MapError(err)
}

// PatchConfigMap merge-patches labels and data keys; the patch carries rv,
// which the API server checks as a precondition (409 Conflict when the
// ConfigMap changed), so it is a compare-and-swap that needs only the patch
// verb.
func (c *Cluster) PatchConfigMap(ctx context.Context, name, rv string, labels, data map[string]string) error {
	if rv == "" {
		return fmt.Errorf("patch ConfigMap %s: no resourceVersion to compare with", name)
	}
	meta := map[string]any{"resourceVersion": rv}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta, "data": data})
	if err != nil {
		return fmt.Errorf("patch ConfigMap %s: %w", name, err)
	}
	_, err = c.Client.CoreV1().ConfigMaps(c.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return MapError(err)
}

// ListLeases lists the pool's claim Leases, labelled or not, fresh from the
// API server (never from Reader).
func (c *Cluster) ListLeases(ctx context.Context, pool string) ([]*coordinationv1.Lease, error) {
	return c.poolLeases(ctx, pool)
}

// poolLeases lists the namespace's Leases without a label selector (no
// selector on a name prefix exists) and keeps those of pool
// (engine.LeaseInPool): the claim Leases named for its members, labelled
// or not. Unrelated Leases are dropped as they are decoded (listClaimLeases).
func (c *Cluster) poolLeases(ctx context.Context, pool string) ([]*coordinationv1.Lease, error) {
	all, err := listClaimLeases(ctx, c.Client, c.Namespace)
	if err != nil {
		return nil, MapError(err)
	}
	kept := all[:0]
	for _, l := range all {
		if engine.LeaseInPool(l, pool) {
			kept = append(kept, l)
		}
	}
	return kept, nil
}

// PatchConfigMapData merge-patches one data key.
func (c *Cluster) PatchConfigMapData(ctx context.Context, name, key, value string) error {
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{key: value}})
	_, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return MapError(err)
}

// DeleteConfigMap deletes with a UID precondition when uid is set.
func (c *Cluster) DeleteConfigMap(ctx context.Context, name string, uid types.UID) error {
	return ignoreNotFound(c.Client.CoreV1().ConfigMaps(c.Namespace).Delete(ctx, name, deleteOptions(uid, "")))
}

// CreatePod creates a Pod and returns it as created.
func (c *Cluster) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	out, err := c.Client.CoreV1().Pods(c.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return out, nil
}

// CreatePVC creates a PVC and returns it as created.
func (c *Cluster) CreatePVC(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	out, err := c.Client.CoreV1().PersistentVolumeClaims(c.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return out, nil
}

// SnapshotsCached reports whether Snapshot reads a cache (Reader) rather
// than the API server (engine.CachedReader).
func (c *Cluster) SnapshotsCached() bool { return c.Reader != nil }

// GetConfigMap reads one ConfigMap fresh from the API server.
func (c *Cluster) GetConfigMap(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	out, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return out, nil
}

// ListLabelledLeases lists fresh the Leases labelled with the pool (and with
// the holder's engine.HolderLabel when holder is set): a selector the API
// server filters with, so the answer holds the pool's Leases (or one
// identity's) only, not every Lease of the namespace.
func (c *Cluster) ListLabelledLeases(ctx context.Context, pool, holder string) ([]*coordinationv1.Lease, error) {
	set := labels.Set{engine.LabelPool: pool}
	if holder != "" {
		set[engine.LabelHolder] = engine.HolderLabel(holder)
	}
	list, err := c.Client.CoordinationV1().Leases(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(set).String()})
	if err != nil {
		return nil, MapError(err)
	}
	return ptrs(list.Items), nil
}

// GetLease reads one Lease fresh from the API server.
func (c *Cluster) GetLease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	out, err := c.Client.CoordinationV1().Leases(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return out, nil
}

// GetPod reads one Pod fresh from the API server.
func (c *Cluster) GetPod(ctx context.Context, name string) (*corev1.Pod, error) {
	out, err := c.Client.CoreV1().Pods(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return out, nil
}

// GetPVC reads one PVC fresh from the API server.
func (c *Cluster) GetPVC(ctx context.Context, name string) (*corev1.PersistentVolumeClaim, error) {
	out, err := c.Client.CoreV1().PersistentVolumeClaims(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return out, nil
}

// DeletePod deletes a Pod (UID precondition when set); gone is success.
func (c *Cluster) DeletePod(ctx context.Context, name string, uid types.UID) error {
	return ignoreNotFound(c.Client.CoreV1().Pods(c.Namespace).Delete(ctx, name, deleteOptions(uid, "")))
}

// DeletePVC deletes a PVC (UID precondition when set); gone is success.
func (c *Cluster) DeletePVC(ctx context.Context, name string, uid types.UID) error {
	return ignoreNotFound(c.Client.CoreV1().PersistentVolumeClaims(c.Namespace).Delete(ctx, name, deleteOptions(uid, "")))
}

// AnnotatePVC sets or removes (nil) one annotation with a merge patch.
func (c *Cluster) AnnotatePVC(ctx context.Context, name, key string, value *string) error {
	var v any
	if value != nil {
		v = *value
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	_, err := c.Client.CoreV1().PersistentVolumeClaims(c.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return MapError(err)
}

// DeleteService deletes a Service; a missing one is success.
func (c *Cluster) DeleteService(ctx context.Context, name string) error {
	return ignoreNotFound(c.Client.CoreV1().Services(c.Namespace).Delete(ctx, name, metav1.DeleteOptions{}))
}

// CreateLease creates a Lease; ErrAlreadyExists when it exists (first writer wins).
func (c *Cluster) CreateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	out, err := c.Client.CoordinationV1().Leases(c.Namespace).Create(ctx, l, metav1.CreateOptions{})
	return out, MapError(err)
}

// UpdateLease is a compare-and-swap on the Lease's resourceVersion.
func (c *Cluster) UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	if l.ResourceVersion == "" {
		return nil, fmt.Errorf("update Lease %s: no resourceVersion to compare with", l.Name)
	}
	if len(l.ManagedFields) > 0 {
		// The API server keeps the managed fields of an update that sends
		// none; a cached Lease's (StripForCache) must not go back.
		cp := *l
		cp.ManagedFields = nil
		l = &cp
	}
	out, err := c.Client.CoordinationV1().Leases(c.Namespace).Update(ctx, l, metav1.UpdateOptions{})
	return out, MapError(err)
}

// DeleteLease deletes with a resourceVersion precondition when rv is set.
func (c *Cluster) DeleteLease(ctx context.Context, name, rv string) error {
	return ignoreNotFound(c.Client.CoordinationV1().Leases(c.Namespace).Delete(ctx, name, deleteOptions("", rv)))
}

// watchRetryInterval is the pause before WaitGone checks again after a watch
// could not be opened.
var watchRetryInterval = time.Second

// WaitGone waits until the object is gone or replaced (another UID). It
// watches the single object and re-checks with a Get whenever the watch ends
// or every few seconds, so a lost watch event cannot hang it.
//
// A console Service (engine.KindService) is waited for with deletes alone,
// the one Service verb of the pool contract: a Service being deleted (a
// finalizer holds it) answers a repeated delete with success, a gone one
// with NotFound, a replaced one (uid set) with a failed UID precondition.
// The delete is repeated every serviceRecheck, with nothing more to delete
// than the first did.
func (c *Cluster) WaitGone(ctx context.Context, kind engine.Kind, name string, uid types.UID) error {
	if kind == engine.KindService {
		return c.waitServiceGone(ctx, name, uid)
	}
	get, watchFn, err := c.objectFuncs(kind)
	if err != nil {
		return err
	}
	for {
		meta, err := get(ctx, name)
		if errors.Is(MapError(err), engine.ErrNotFound) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return MapError(err)
		}
		if uid != "" && meta.UID != uid {
			return nil
		}
		w, err := watchFn(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: meta.ResourceVersion,
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// No watch (no permission, a failing server): poll with Get
			// instead of retrying at once.
			t := time.NewTimer(watchRetryInterval)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			continue
		}
		if gone := waitDeleted(ctx, w, name, 5*time.Second); gone {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// serviceRecheck is the pause between the deletes that wait for a console
// Service.
var serviceRecheck = 500 * time.Millisecond

func (c *Cluster) waitServiceGone(ctx context.Context, name string, uid types.UID) error {
	svcs := c.Client.CoreV1().Services(c.Namespace)
	for {
		err := MapError(svcs.Delete(ctx, name, deleteOptions(uid, "")))
		switch {
		case errors.Is(err, engine.ErrNotFound), uid != "" && errors.Is(err, engine.ErrConflict):
			return nil
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		t := time.NewTimer(serviceRecheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// waitDeleted reads a watch until a Deleted event, the end of the watch, the
// recheck interval or the context; it reports whether it saw the delete.
func waitDeleted(ctx context.Context, w watch.Interface, name string, recheck time.Duration) bool {
	defer w.Stop()
	t := time.NewTimer(recheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return false
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false
			}
			if ev.Type != watch.Deleted {
				continue
			}
			if m, err := apimeta.Accessor(ev.Object); err == nil && m.GetName() == name {
				return true
			}
		}
	}
}

type getFunc func(ctx context.Context, name string) (*metav1.ObjectMeta, error)
type watchFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)

func (c *Cluster) objectFuncs(kind engine.Kind) (getFunc, watchFunc, error) {
	switch kind {
	case engine.KindPod:
		pods := c.Client.CoreV1().Pods(c.Namespace)
		return func(ctx context.Context, name string) (*metav1.ObjectMeta, error) {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return &p.ObjectMeta, nil
		}, pods.Watch, nil
	case engine.KindPVC:
		pvcs := c.Client.CoreV1().PersistentVolumeClaims(c.Namespace)
		return func(ctx context.Context, name string) (*metav1.ObjectMeta, error) {
			p, err := pvcs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return &p.ObjectMeta, nil
		}, pvcs.Watch, nil
	}
	return nil, nil, fmt.Errorf("wait: unknown kind %q", kind)
}

func deleteOptions(uid types.UID, rv string) metav1.DeleteOptions {
	var o metav1.DeleteOptions
	if uid != "" || rv != "" {
		o.Preconditions = &metav1.Preconditions{}
		if uid != "" {
			u := uid
			o.Preconditions.UID = &u
		}
		if rv != "" {
			r := rv
			o.Preconditions.ResourceVersion = &r
		}
	}
	return o
}

func ignoreNotFound(err error) error {
	err = MapError(err)
	if errors.Is(err, engine.ErrNotFound) {
		return nil
	}
	return err
}
