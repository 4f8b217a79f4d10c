package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// GroupByNamespace groups pool objects of several namespaces by namespace
// and pool (engine.GroupByPool per namespace), ordered by namespace, then
// pool.
func GroupByNamespace(cms []*corev1.ConfigMap, pods []*corev1.Pod, pvcs []*corev1.PersistentVolumeClaim, leases []*coordinationv1.Lease) []engine.Snapshot {
	by := byNamespace{}
	for _, c := range cms {
		o := by.in(c.Namespace)
		o.cms = append(o.cms, c)
	}
	for _, p := range pods {
		o := by.in(p.Namespace)
		o.pods = append(o.pods, p)
	}
	for _, c := range pvcs {
		o := by.in(c.Namespace)
		o.pvcs = append(o.pvcs, c)
	}
	for _, l := range leases {
		o := by.in(l.Namespace)
		o.leases = append(o.leases, l)
	}
	return by.snapshots()
}

// byNamespace collects pool objects per namespace.
type byNamespace map[string]*nsObjects

type nsObjects struct {
	cms    []*corev1.ConfigMap
	pods   []*corev1.Pod
	pvcs   []*corev1.PersistentVolumeClaim
	leases []*coordinationv1.Lease
}

// in is namespace ns's objects (one map lookup per object added).
func (b byNamespace) in(ns string) *nsObjects {
	o := b[ns]
	if o == nil {
		o = &nsObjects{}
		b[ns] = o
	}
	return o
}

// snapshots groups each namespace's objects by pool (engine.GroupByPool),
// ordered by namespace, then pool.
func (b byNamespace) snapshots() []engine.Snapshot {
	names := make([]string, 0, len(b))
	for ns := range b {
		names = append(names, ns)
	}
	sort.Strings(names)
	var out []engine.Snapshot
	for _, ns := range names {
		o := b[ns]
		out = append(out, engine.GroupByPool(ns, o.cms, o.pods, o.pvcs, o.leases)...)
	}
	return out
}

// ListFleet reads the pools of several namespaces once (ListPools): every
// namespace with one List per kind when namespaces is empty, otherwise each
// namespace named. The result is ordered by namespace, then pool. The nodes
// are listed once meanwhile, for every snapshot (NodeDown).
func ListFleet(ctx context.Context, client kubernetes.Interface, namespaces []string) ([]engine.Snapshot, error) {
	return withNodeDown(ctx, client, func() ([]engine.Snapshot, error) { return listFleet(ctx, client, namespaces) })
}

func listFleet(ctx context.Context, client kubernetes.Interface, namespaces []string) ([]engine.Snapshot, error) {
	if len(namespaces) == 0 {
		return listAllNamespaces(ctx, client)
	}
	var out []engine.Snapshot
	for _, ns := range namespaces {
		snaps, err := listPools(ctx, client, ns, func(err error, resource string) error { return listError(err, resource, ns) })
		var lf *ListForbiddenError
		switch {
		case errors.As(err, &lf):
			return nil, err
		case err != nil:
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		out = append(out, snaps...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out, nil
}

func listAllNamespaces(ctx context.Context, client kubernetes.Interface) ([]engine.Snapshot, error) {
	opts := metav1.ListOptions{LabelSelector: engine.LabelPool}
	all := metav1.NamespaceAll
	var (
		cms    *corev1.ConfigMapList
		pods   *corev1.PodList
		pvcs   *corev1.PersistentVolumeClaimList
		leases []*coordinationv1.Lease
	)
	var g errgroup.Group // no cancel at the first error: see listPools
	gctx := ctx
	g.Go(func() (err error) {
		cms, err = client.CoreV1().ConfigMaps(all).List(gctx, opts)
		return listError(err, "configmaps", all)
	})
	g.Go(func() (err error) {
		pods, err = client.CoreV1().Pods(all).List(gctx, opts)
		return listError(err, "pods", all)
	})
	g.Go(func() (err error) {
		pvcs, err = client.CoreV1().PersistentVolumeClaims(all).List(gctx, opts)
		return listError(err, "persistentvolumeclaims", all)
	})
	g.Go(func() (err error) {
		leases, err = listClaimLeases(gctx, client, all) // but kube-node-lease's
		return listError(err, "leases.coordination.k8s.io", all)
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return GroupByNamespace(ptrs(cms.Items), ptrs(pods.Items), ptrs(pvcs.Items), leases), nil
}

// ListForbiddenError: the identity may not list a kind of pool object in a
// namespace (Namespace "": in every namespace). Its message is one line
// that ends with what to do instead.
type ListForbiddenError struct {
	Namespace string
	Resource  string
	Err       error
}

func (e *ListForbiddenError) Error() string {
	if e.Namespace == metav1.NamespaceAll {
		return fmt.Sprintf("this identity may not list %s in all namespaces; use -n NAMESPACE, or --namespaces a,b,c for the namespaces it may read", e.Resource)
	}
	return fmt.Sprintf("this identity may not list %s in namespace %s; leave it out of --namespaces, or ask for the viewer role there (ctpool-tui rbac --role viewer)", e.Resource, e.Namespace)
}

// Unwrap lets errors.Is match engine.ErrForbidden.
func (e *ListForbiddenError) Unwrap() []error { return []error{engine.ErrForbidden, e.Err} }

// listError maps a List error: a refusal becomes a ListForbiddenError.
func listError(err error, resource, namespace string) error {
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) {
		return &ListForbiddenError{Namespace: namespace, Resource: resource, Err: err}
	}
	return MapError(err)
}

// CheckListable asks the API server, with one List of at most one object
// per kind, whether the identity may list every kind of pool object in each
// namespace (none: in all namespaces). It returns a ListForbiddenError for
// the first refusal, so that a dashboard never waits on informers that are
// refused and retry forever.
func CheckListable(ctx context.Context, client kubernetes.Interface, namespaces []string) error {
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	opts := metav1.ListOptions{LabelSelector: engine.LabelPool, Limit: 1}
	for _, ns := range namespaces {
		checks := []struct {
			resource string
			list     func() error
		}{
			{"configmaps", func() error { _, err := client.CoreV1().ConfigMaps(ns).List(ctx, opts); return err }},
			{"pods", func() error { _, err := client.CoreV1().Pods(ns).List(ctx, opts); return err }},
			{"persistentvolumeclaims", func() error {
				_, err := client.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
				return err
			}},
			{"leases.coordination.k8s.io", func() error { _, err := client.CoordinationV1().Leases(ns).List(ctx, opts); return err }},
		}
		for _, c := range checks {
			if err := listError(c.list(), c.resource, ns); err != nil {
				var lf *ListForbiddenError
				if errors.As(err, &lf) {
					return err
				}
				return fmt.Errorf("list %s in %s: %w", c.resource, namespaceWords(ns), err)
			}
		}
	}
	return nil
}

// namespaceWords names a namespace in a message ("all namespaces" for "").
func namespaceWords(ns string) string {
	if ns == metav1.NamespaceAll {
		return "all namespaces"
	}
	return "namespace " + ns
}

// ParseNamespaces splits the value of --namespaces (a,b,c): trimmed,
// without duplicates, in the order given; every name must be a valid
// namespace name.
func ParseNamespaces(v string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, ns := range strings.Split(v, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			continue
		}
		if errs := validateNamespaceName(ns); errs != "" {
			return nil, fmt.Errorf("--namespaces: %q is not a namespace name: %s", ns, errs)
		}
		if !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--namespaces needs at least one namespace (a,b,c)")
	}
	return out, nil
}

func validateNamespaceName(ns string) string {
	return strings.Join(validation.IsDNS1123Label(ns), "; ")
}
