package kube

import (
	"context"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// ListDefinedPools lists the pools defined in namespace ns (metav1.NamespaceAll:
// every namespace), fresh from the API server: the ConfigMaps labelled with
// a pool that engine.DefinedPool takes for its definition, sorted.
func ListDefinedPools(ctx context.Context, cs kubernetes.Interface, ns string) ([]engine.PoolRef, error) {
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: engine.LabelPool})
	if err != nil {
		return nil, MapError(err)
	}
	var refs []engine.PoolRef
	for _, cm := range list.Items {
		if pool, ok := engine.DefinedPool(cm.Name, cm.Labels); ok {
			refs = append(refs, engine.PoolRef{Namespace: cm.Namespace, Name: pool})
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	return refs, nil
}
