package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
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

// NodeDown lists the nodes once and returns the down ones with the node's
// evidence (engine.NodeDownMap: empty when none is down), or nil when the
// nodes cannot be read: the identity may not list them (nodes are
// cluster-scoped and optional, OptionalPermissions), or the list failed.
// A nil map is "the nodes are unknown", and every member then reads as on a
// healthy node. The list is served from the API server's watch cache
// (resourceVersion 0): a node's Ready condition a second old is good enough.
func NodeDown(ctx context.Context, client kubernetes.Interface) map[string]string {
	down, _ := NodeStates(ctx, client)
	return down
}

// NodeStates is NodeDown and the cordoned nodes (engine.NodeCordoned) of
// the same list; both nil when the nodes cannot be read.
func NodeStates(ctx context.Context, client kubernetes.Interface) (map[string]string, map[string]bool) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, nil
	}
	out, cordoned := map[string]string{}, map[string]bool{}
	for i := range list.Items {
		if why := engine.NodeDown(&list.Items[i]); why != "" {
			out[list.Items[i].Name] = why
		}
		if engine.NodeCordoned(&list.Items[i]) {
			cordoned[list.Items[i].Name] = true
		}
	}
	return out, cordoned
}

// withNodeDown runs read while the nodes are listed (NodeDown) and gives
// every snapshot it returns the down nodes.
func withNodeDown(ctx context.Context, client kubernetes.Interface, read func() ([]engine.Snapshot, error)) ([]engine.Snapshot, error) {
	type states struct {
		down     map[string]string
		cordoned map[string]bool
	}
	done := make(chan states, 1)
	go func() {
		d, c := NodeStates(ctx, client)
		done <- states{d, c}
	}()
	snaps, err := read()
	nodes := <-done
	if err != nil {
		return nil, err
	}
	for i := range snaps {
		snaps[i].NodeDown, snaps[i].NodeCordoned = nodes.down, nodes.cordoned
	}
	return snaps, nil
}

// OptionalPermissions are what ctpool-tui asks for but does without. The
// nodes (cluster-scoped, so no namespaced Role can grant them), read for the
// diagnosis and to tell a member whose node is down: without them the
// diagnosis reads no node and Snapshot.NodeDown is nil. The namespace
// (cluster-scoped too), whose Pod Security label apply checks a pool's level
// against (Cluster.NamespaceLabels): without it apply warns that the level
// is unknown and admission decides. The Secrets a pool names in
// imagePullSecrets, whose type apply checks (Cluster.SecretType): without
// it apply warns that they were not checked. They are left out of every
// action's derived permissions (RequiredPermissions).
var OptionalPermissions = []engine.Permission{
	{Group: "", Resource: "namespaces", Verb: "get"},
	{Group: "", Resource: "secrets", Verb: "get"},
	{Group: "", Resource: "nodes", Verb: "list"},
	{Group: "", Resource: "nodes", Verb: "watch"},
}
