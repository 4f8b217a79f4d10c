package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

var _ engine.DisruptionBudgetClient = (*Cluster)(nil)

// GetPodDisruptionBudget reads one PodDisruptionBudget fresh from the API server.
func (c *Cluster) GetPodDisruptionBudget(ctx context.Context, name string) (*policyv1.PodDisruptionBudget, error) {
	out, err := c.Client.PolicyV1().PodDisruptionBudgets(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return out, nil
}

// CreatePodDisruptionBudget creates a PodDisruptionBudget and returns it as created.
func (c *Cluster) CreatePodDisruptionBudget(ctx context.Context, pdb *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error) {
	out, err := c.Client.PolicyV1().PodDisruptionBudgets(c.Namespace).Create(ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return out, nil
}

// UpdatePodDisruptionBudget is a compare-and-swap on the budget's resourceVersion.
func (c *Cluster) UpdatePodDisruptionBudget(ctx context.Context, pdb *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error) {
	if pdb.ResourceVersion == "" {
		return nil, fmt.Errorf("update PodDisruptionBudget %s: no resourceVersion to compare with", pdb.Name)
	}
	out, err := c.Client.PolicyV1().PodDisruptionBudgets(c.Namespace).Update(ctx, pdb, metav1.UpdateOptions{})
	if err != nil {
		return nil, MapError(err)
	}
	return out, nil
}

// DeletePodDisruptionBudget deletes with a UID precondition when uid is set;
// a budget already gone is success.
func (c *Cluster) DeletePodDisruptionBudget(ctx context.Context, name string, uid types.UID) error {
	return ignoreNotFound(c.Client.PolicyV1().PodDisruptionBudgets(c.Namespace).Delete(ctx, name, deleteOptions(uid, "")))
}

// PatchPodMeta sets or (nil) removes labels and annotations of a Pod with
// one merge patch. The patch names the Pod's UID: the API server refuses
// it for another Pod of the same name (a UID cannot change), which is
// mapped to ErrConflict.
func (c *Cluster) PatchPodMeta(ctx context.Context, name string, uid types.UID, labels, annotations map[string]*string) error {
	meta := map[string]any{}
	if uid != "" {
		meta["uid"] = uid
	}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return fmt.Errorf("patch Pod %s: %w", name, err)
	}
	_, err = c.Client.CoreV1().Pods(c.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err = MapError(err); err != nil && isUIDMismatch(err) {
		return fmt.Errorf("patch Pod %s: another Pod of that name (%v): %w", name, err, engine.ErrConflict)
	}
	return err
}

// ReadProtection reads the PodDisruptionBudget of a pool into
// snap.DisruptionBudget (a status reads what a dashboard's cache does not
// hold). A snapshot of no definition is not read.
func ReadProtection(ctx context.Context, cs kubernetes.Interface, snap *engine.Snapshot) {
	if snap.ConfigMap == nil {
		return
	}
	pdb, err := (&Cluster{Client: cs, Namespace: snap.Namespace}).GetPodDisruptionBudget(ctx, engine.DisruptionBudgetName(snap.Pool))
	if errors.Is(err, engine.ErrNotFound) {
		pdb, err = nil, nil
	}
	snap.DisruptionBudget = &engine.DisruptionBudgetRead{Budget: pdb, Err: err}
}

// isUIDMismatch tells whether err is the API server's refusal of a patch
// that names another UID than the object's (metadata.uid is immutable).
func isUIDMismatch(err error) bool {
	var st apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &st) || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Field == "metadata.uid" {
			return true
		}
	}
	return false
}
