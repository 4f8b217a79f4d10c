package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Nodes lists the cluster's nodes for the diagnosis (labels and taints).
type Nodes struct {
	Client kubernetes.Interface
}

// Nodes returns every node, or nil and no error when the caller may not
// list nodes: the diagnosis then works without them.
func (n *Nodes) Nodes(ctx context.Context) ([]*corev1.Node, error) {
	list, err := n.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, MapError(err)
	}
	out := make([]*corev1.Node, 0, len(list.Items))
	for i := range list.Items {
		nd := &list.Items[i]
		nd.ManagedFields = nil
		out = append(out, nd)
	}
	return out, nil
}
