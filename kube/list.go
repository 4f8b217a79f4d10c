package kube

import (
	"context"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// ListPools reads every pool object of a namespace once, with the four List
// calls in parallel (ConfigMaps, Pods and PVCs carrying the pool label, and
// the claim Leases by their name, labelled or not), and groups them by pool. It is the headless --once path: one round
// trip's worth of latency, no informer start-up.
func ListPools(ctx context.Context, client kubernetes.Interface, namespace string) ([]engine.Snapshot, error) {
	return withNodeDown(ctx, client, func() ([]engine.Snapshot, error) {
		return listPools(ctx, client, namespace, func(err error, _ string) error { return MapError(err) })
	})
}

// listPools is ListPools with mapErr mapping each List's error (and the
// resource it listed).
func listPools(ctx context.Context, client kubernetes.Interface, namespace string, mapErr func(err error, resource string) error) ([]engine.Snapshot, error) {
	opts := metav1.ListOptions{LabelSelector: engine.LabelPool}
	var (
		cms    *corev1.ConfigMapList
		pods   *corev1.PodList
		pvcs   *corev1.PersistentVolumeClaimList
		leases []*coordinationv1.Lease
	)
	// Every List runs to its end: cancelling the others at the first
	// refusal only makes client-go log the cancelled reads.
	var g errgroup.Group
	gctx := ctx
	g.Go(func() (err error) {
		cms, err = client.CoreV1().ConfigMaps(namespace).List(gctx, opts)
		return mapErr(err, "configmaps")
	})
	g.Go(func() (err error) {
		pods, err = client.CoreV1().Pods(namespace).List(gctx, opts)
		return mapErr(err, "pods")
	})
	g.Go(func() (err error) {
		pvcs, err = client.CoreV1().PersistentVolumeClaims(namespace).List(gctx, opts)
		return mapErr(err, "persistentvolumeclaims")
	})
	g.Go(func() (err error) {
		leases, err = listClaimLeases(gctx, client, namespace)
		return mapErr(err, "leases.coordination.k8s.io")
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return engine.GroupByPool(namespace, ptrs(cms.Items), ptrs(pods.Items), ptrs(pvcs.Items), leases), nil
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
