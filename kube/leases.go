// Claim Leases are known by their name, labelled or not: the reads of Leases.

package kube

import (
	"context"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/watchlist"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// A claim Lease is the member's claim whether or not it carries the pool
// label (engine.LeasePool): a broker that follows the contract writes it by
// name alone. The API server has no selector on a name prefix, so every
// read of Leases reads the namespace's Leases without a label selector and
// keeps those whose name starts with engine.LeaseNamePrefix; the rest
// (leader election, node heartbeats, anything else) is dropped as soon as
// it is decoded and never enters a cache. The rights are the same: leases
// list (and watch, for a cache), with or without a selector.
//
// In the view of every namespace, the Leases of kube-node-lease (one per
// node, renewed every few seconds) are not asked for at all: a field
// selector on the namespace keeps the API server from sending them.

// NodeLeaseNamespace holds the nodes' heartbeat Leases; the view of every
// namespace does not read its Leases.
const NodeLeaseNamespace = "kube-node-lease"

// isClaimLeaseName reports whether a Lease name may be a claim's: what the
// Lease reads keep.
func isClaimLeaseName(name string) bool { return strings.HasPrefix(name, engine.LeaseNamePrefix) }

// leaseListOptions are the options of a list or watch of Leases in
// namespace: no label selector; in every namespace, none of kube-node-lease.
func leaseListOptions(namespace string, o *metav1.ListOptions) {
	o.LabelSelector = ""
	if namespace == metav1.NamespaceAll {
		o.FieldSelector = fields.OneTermNotEqualSelector("metadata.namespace", NodeLeaseNamespace).String()
	}
}

// listClaimLeases lists the Leases of namespace ("" for every namespace but
// kube-node-lease) whose names are claim Leases' (isClaimLeaseName), fresh
// from the API server. On a real API server the list is read as a stream
// and every other Lease is dropped once decoded, so a namespace of many
// unrelated Leases costs their transfer and decoding, not their memory.
func listClaimLeases(ctx context.Context, client kubernetes.Interface, namespace string) ([]*coordinationv1.Lease, error) {
	opts := metav1.ListOptions{}
	leaseListOptions(namespace, &opts)
	list, err := claimLeases{client}.CoordinationV1().Leases(namespace).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return ptrs(list.Items), nil
}

// claimLeases is a client whose Lease lists and watches keep the claim
// Leases only (isClaimLeaseName): a list drops the others from its items, a
// watch drops their events. Everything else is the wrapped client's. The
// informers' Lease informer reads through it (NewPoolInformers), so its
// cache, its index and its handlers never see an unrelated Lease.
type claimLeases struct{ kubernetes.Interface }

// IsWatchListSemanticsUnSupported passes on what the wrapped client says
// (listThenWatch), which the embedding alone would hide from client-go.
func (c claimLeases) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.Interface)
}

func (c claimLeases) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return claimCoordination{CoordinationV1Interface: c.Interface.CoordinationV1()}
}

type claimCoordination struct {
	coordinationv1client.CoordinationV1Interface
}

func (c claimCoordination) Leases(namespace string) coordinationv1client.LeaseInterface {
	rc, _ := c.RESTClient().(*rest.RESTClient)
	return claimLeaseInterface{LeaseInterface: c.CoordinationV1Interface.Leases(namespace), rc: rc, namespace: namespace}
}

type claimLeaseInterface struct {
	coordinationv1client.LeaseInterface
	rc        *rest.RESTClient // nil for a fake client
	namespace string
}

// List lists and keeps the claim Leases: read as a stream of protobuf
// objects when the API server answers so (streamList), otherwise with
// client-go's List, filtered.
func (l claimLeaseInterface) List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if l.rc != nil && l.rc.Client != nil {
		out := &coordinationv1.LeaseList{}
		var scratch coordinationv1.Lease
		handled, err := streamList(ctx, l.rc, l.namespace, "leases", opts, &out.ListMeta, func(b []byte) error {
			scratch.Reset()
			if err := scratch.Unmarshal(b); err != nil {
				return err
			}
			if isClaimLeaseName(scratch.Name) {
				out.Items = append(out.Items, *scratch.DeepCopy())
			}
			return nil
		})
		if handled {
			if err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	list, err := l.LeaseInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	kept := list.Items[:0]
	for i := range list.Items {
		if isClaimLeaseName(list.Items[i].Name) {
			kept = append(kept, list.Items[i])
		}
	}
	clear(list.Items[len(kept):])
	list.Items = kept
	return list, nil
}

// Watch watches and passes on the events of claim Leases, bookmarks and
// errors; the events of every other Lease are dropped.
func (l claimLeaseInterface) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := l.LeaseInterface.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			if le, ok := ev.Object.(*coordinationv1.Lease); ok {
				return ev, isClaimLeaseName(le.Name)
			}
		}
		return ev, true
	}), nil
}
