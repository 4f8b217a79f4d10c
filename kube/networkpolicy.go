package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

var _ engine.NetworkPolicyClient = (*Cluster)(nil)

// GetNetworkPolicy reads one NetworkPolicy fresh from the API server.
func (c *Cluster) GetNetworkPolicy(ctx context.Context, name string) (*networkingv1.NetworkPolicy, error) {
	out, err := c.Client.NetworkingV1().NetworkPolicies(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return out, nil
}

// CreateNetworkPolicy creates a NetworkPolicy and returns it as created.
func (c *Cluster) CreateNetworkPolicy(ctx context.Context, np *networkingv1.NetworkPolicy) (*networkingv1.NetworkPolicy, error) {
	out, err := c.Client.NetworkingV1().NetworkPolicies(c.Namespace).Create(ctx, np, metav1.CreateOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return out, nil
}

// PatchNetworkPolicy replaces the policy's spec whole with a JSON patch (a
// merge patch would keep the map keys someone added to a selector). The
// patch also replaces metadata.resourceVersion with rv, which the API server
// takes as a precondition: a policy changed since it was read is a conflict.
func (c *Cluster) PatchNetworkPolicy(ctx context.Context, name, rv string, spec networkingv1.NetworkPolicySpec) error {
	if rv == "" {
		return fmt.Errorf("patch NetworkPolicy %s: no resourceVersion to compare with", name)
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/metadata/resourceVersion", "value": rv},
		{"op": "replace", "path": "/spec", "value": spec},
	})
	if err != nil {
		return fmt.Errorf("patch NetworkPolicy %s: %w", name, err)
	}
	_, err = c.Client.NetworkingV1().NetworkPolicies(c.Namespace).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
	return MapError(err)
}

// DeleteNetworkPolicy deletes with a UID precondition when uid is set; a
// policy already gone is success.
func (c *Cluster) DeleteNetworkPolicy(ctx context.Context, name string, uid types.UID) error {
	return ignoreNotFound(c.Client.NetworkingV1().NetworkPolicies(c.Namespace).Delete(ctx, name, deleteOptions(uid, "")))
}

// ReadIsolation reads the NetworkPolicy of an isolated pool into
// snap.NetworkPolicy (a status reads what a dashboard's cache does not
// hold). A pool that is not isolated, or whose definition does not parse,
// is not read: it needs no permission on NetworkPolicies.
func ReadIsolation(ctx context.Context, cs kubernetes.Interface, snap *engine.Snapshot) {
	if snap.ConfigMap == nil {
		return
	}
	spec, err := engine.ParseSpec(snap.ConfigMap.Data[engine.KeySpec])
	if err != nil || !spec.Isolate {
		return
	}
	np, err := (&Cluster{Client: cs, Namespace: snap.Namespace}).GetNetworkPolicy(ctx, engine.NetworkPolicyName(snap.Pool))
	if errors.Is(err, engine.ErrNotFound) {
		np, err = nil, nil
	}
	snap.NetworkPolicy = &engine.NetworkPolicyRead{Policy: np, Err: err}
}
