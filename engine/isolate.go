package engine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxNetworkPeers bounds each of Spec.Ingress and Spec.Egress.
const MaxNetworkPeers = 16

// NetworkPeer is one source an isolated pool's members accept traffic from
// (Spec.Ingress) or one destination they may reach (Spec.Egress): pods
// chosen by label (NamespaceSelector and/or PodSelector, each a set of
// labels that must all match), or an address block (CIDR, with Except
// blocks cut out of it). Ports, when given, narrow the peer to those TCP
// ports; none means every port.
type NetworkPeer struct {
	// NamespaceSelector chooses namespaces by label; with no PodSelector,
	// every pod of those namespaces (but a pool member: see Spec.Ingress).
	// Without it, PodSelector chooses pods of the pool's own namespace.
	NamespaceSelector map[string]string `json:"namespaceSelector,omitempty"`
	PodSelector       map[string]string `json:"podSelector,omitempty"`
	CIDR              string            `json:"cidr,omitempty"`
	Except            []string          `json:"except,omitempty"`
	Ports             []int32           `json:"ports,omitempty"`
}

// NetworkPolicyName is the name of the NetworkPolicy an isolated pool owns:
// the name of its ConfigMap.
func NetworkPolicyName(pool string) string { return configMapNamePrefix + pool }

// NetworkPolicyClient is a Cluster that can manage the NetworkPolicy of an
// isolated pool. Only isolated pools use it (and need its permissions:
// networkpolicies get, create, patch, delete).
type NetworkPolicyClient interface {
	// GetNetworkPolicy reads one policy fresh (ErrNotFound when none).
	GetNetworkPolicy(ctx context.Context, name string) (*networkingv1.NetworkPolicy, error)
	CreateNetworkPolicy(ctx context.Context, np *networkingv1.NetworkPolicy) (*networkingv1.NetworkPolicy, error)
	// PatchNetworkPolicy replaces the policy's spec whole, a
	// compare-and-swap on rv (ErrConflict when it changed meanwhile).
	PatchNetworkPolicy(ctx context.Context, name, rv string, spec networkingv1.NetworkPolicySpec) error
	// DeleteNetworkPolicy deletes with a UID precondition when uid is set;
	// it succeeds when the policy is already gone.
	DeleteNetworkPolicy(ctx context.Context, name string, uid types.UID) error
}

// Isolation states of a pool's NetworkPolicy (IsolationView.State).
const (
	// IsolationEnforced: the policy exists and is the definition's.
	IsolationEnforced = "enforced"
	// IsolationMissing: there is no policy; a reconcile creates it.
	IsolationMissing = "missing"
	// IsolationChanged: the policy is the pool's but not the definition's
	// (edited by hand); a reconcile repairs it.
	IsolationChanged = "changed"
	// IsolationForeign: a policy of that name exists that is not the
	// pool's (no pool label): the engine leaves it alone.
	IsolationForeign = "foreign"
	// IsolationUnknown: the policy could not be read (permission), or was
	// not read (the dashboard reads no NetworkPolicy).
	IsolationUnknown = "unknown"
)

// IsolationView is what is known of an isolated pool's NetworkPolicy.
type IsolationView struct {
	Policy string `json:"policy"`
	State  string `json:"state"`
	// Detail says what differs or why the state is unknown, and the fix.
	Detail string `json:"detail,omitempty"`
}

// memberSelector selects the member Pods of pool: the pool label and a
// member label. It is the policy's podSelector.
func memberSelector(pool string) metav1.LabelSelector {
	return metav1.LabelSelector{
		MatchLabels:      map[string]string{LabelPool: pool},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: LabelMember, Operator: metav1.LabelSelectorOpExists}},
	}
}

// notAMember is added to every selector peer of Spec.Ingress, so that no
// member of any pool is a source, whatever the selectors say.
var notAMember = metav1.LabelSelectorRequirement{Key: LabelMember, Operator: metav1.LabelSelectorOpDoesNotExist}

// BuildNetworkPolicy is the NetworkPolicy of an isolated pool. It selects
// the pool's member Pods. Ingress: only from Spec.Ingress, each selector
// peer narrowed to pods that are no pool's member; none admits nothing.
// Egress: open when Spec.Egress is empty; else to DNS (port 53, UDP and
// TCP, anywhere) and Spec.Egress.
func BuildNetworkPolicy(namespace, pool string, spec Spec) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName(pool), Namespace: namespace, Labels: PoolLabels(pool)},
		Spec:       networkPolicySpec(pool, spec),
	}
}

func networkPolicySpec(pool string, spec Spec) networkingv1.NetworkPolicySpec {
	ps := networkingv1.NetworkPolicySpec{
		PodSelector: memberSelector(pool),
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{},
	}
	for _, p := range spec.Ingress {
		ps.Ingress = append(ps.Ingress, networkingv1.NetworkPolicyIngressRule{
			From: []networkingv1.NetworkPolicyPeer{policyPeer(p, true)}, Ports: tcpPorts(p.Ports)})
	}
	if len(spec.Egress) > 0 {
		ps.PolicyTypes = append(ps.PolicyTypes, networkingv1.PolicyTypeEgress)
		udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
		dns := intstr.FromInt32(53)
		ps.Egress = []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}}}}
		for _, p := range spec.Egress {
			ps.Egress = append(ps.Egress, networkingv1.NetworkPolicyEgressRule{
				To: []networkingv1.NetworkPolicyPeer{policyPeer(p, false)}, Ports: tcpPorts(p.Ports)})
		}
	}
	return ps
}

func policyPeer(p NetworkPeer, ingress bool) networkingv1.NetworkPolicyPeer {
	if p.CIDR != "" {
		return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: p.CIDR, Except: p.Except}}
	}
	var out networkingv1.NetworkPolicyPeer
	if len(p.NamespaceSelector) > 0 {
		out.NamespaceSelector = &metav1.LabelSelector{MatchLabels: p.NamespaceSelector}
	}
	if len(p.PodSelector) > 0 || ingress {
		out.PodSelector = &metav1.LabelSelector{MatchLabels: p.PodSelector}
	}
	if ingress {
		out.PodSelector.MatchExpressions = []metav1.LabelSelectorRequirement{notAMember}
	}
	return out
}

func tcpPorts(ports []int32) []networkingv1.NetworkPolicyPort {
	if len(ports) == 0 {
		return nil
	}
	out := make([]networkingv1.NetworkPolicyPort, len(ports))
	for i, n := range ports {
		tcp, port := corev1.ProtocolTCP, intstr.FromInt32(n)
		out[i] = networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &port}
	}
	return out
}

// validateIsolation checks isolate, ingress and egress: the peers only on
// an isolated pool, at most MaxNetworkPeers each, each either label
// selectors or an address block.
func (s *Spec) validateIsolation() error {
	for _, side := range []struct {
		field string
		peers []NetworkPeer
	}{{"ingress", s.Ingress}, {"egress", s.Egress}} {
		if len(side.peers) == 0 {
			continue
		}
		if !s.Isolate {
			return &InvalidError{Field: side.field, Reason: "applies only to an isolated pool (isolate: true)"}
		}
		if len(side.peers) > MaxNetworkPeers {
			return &InvalidError{Field: side.field, Reason: fmt.Sprintf("names %d peers, more than %d", len(side.peers), MaxNetworkPeers)}
		}
		for i, p := range side.peers {
			if err := p.validate(fmt.Sprintf("%s[%d]", side.field, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p NetworkPeer) validate(field string) error {
	selectors := p.NamespaceSelector != nil || p.PodSelector != nil
	switch {
	case selectors && p.CIDR != "":
		return &InvalidError{Field: field, Reason: "names label selectors and a cidr: give one (a peer is pods or an address block)"}
	case !selectors && p.CIDR == "":
		return &InvalidError{Field: field, Reason: "names no peer: give namespaceSelector and/or podSelector, or cidr"}
	case p.CIDR == "" && len(p.Except) > 0:
		return &InvalidError{Field: field + ".except", Reason: "applies only to a cidr"}
	}
	for _, sel := range []struct {
		name   string
		labels map[string]string
	}{{"namespaceSelector", p.NamespaceSelector}, {"podSelector", p.PodSelector}} {
		if sel.labels == nil {
			continue
		}
		if len(sel.labels) == 0 {
			return &InvalidError{Field: field + "." + sel.name, Reason: "names no label (an empty selector would choose everything; name the labels)"}
		}
		keys := make([]string, 0, len(sel.labels))
		for k := range sel.labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				return &InvalidError{Field: field + "." + sel.name, Value: k, Reason: "is not a label key: " + strings.Join(msgs, "; ")}
			}
			if msgs := validation.IsValidLabelValue(sel.labels[k]); len(msgs) > 0 {
				return &InvalidError{Field: field + "." + sel.name + "." + k, Value: sel.labels[k], Reason: "is not a label value: " + strings.Join(msgs, "; ")}
			}
		}
	}
	if p.CIDR != "" {
		block, err := netip.ParsePrefix(p.CIDR)
		if err != nil || block.Masked() != block {
			return &InvalidError{Field: field + ".cidr", Value: p.CIDR, Reason: "is not an address block (examples: 10.0.0.0/8, 192.168.1.5/32, fd00::/8)"}
		}
		for j, e := range p.Except {
			ex, err := netip.ParsePrefix(e)
			if err != nil || ex.Masked() != ex {
				return &InvalidError{Field: fmt.Sprintf("%s.except[%d]", field, j), Value: e, Reason: "is not an address block"}
			}
			if ex.Addr().Is4() != block.Addr().Is4() || ex.Bits() <= block.Bits() || !block.Contains(ex.Addr()) {
				return &InvalidError{Field: fmt.Sprintf("%s.except[%d]", field, j), Value: e, Reason: "must be a block inside " + p.CIDR}
			}
		}
	}
	for j, n := range p.Ports {
		if n < 1 || n > 65535 {
			return &InvalidError{Field: fmt.Sprintf("%s.ports[%d]", field, j), Value: fmt.Sprint(n), Reason: "must be a port from 1 to 65535"}
		}
	}
	return nil
}

// ObserveIsolation says how np (nil: there is none) stands against the
// NetworkPolicy the definition of an isolated pool asks for.
func ObserveIsolation(pool string, spec Spec, np *networkingv1.NetworkPolicy) IsolationView {
	v := IsolationView{Policy: NetworkPolicyName(pool)}
	switch {
	case np == nil:
		v.State, v.Detail = IsolationMissing, "no NetworkPolicy "+v.Policy+": members accept traffic from anywhere until a reconcile creates it"
	case np.Labels[LabelPool] != pool:
		v.State = IsolationForeign
		v.Detail = fmt.Sprintf("NetworkPolicy %s exists and is not this pool's (no label %s=%s): it is left alone, and the pool is not isolated as its definition says; rename or remove it, then reconcile", v.Policy, LabelPool, pool)
	case np.DeletionTimestamp != nil:
		v.State, v.Detail = IsolationMissing, "NetworkPolicy "+v.Policy+" is being deleted; a reconcile creates it again"
	case !equality.Semantic.DeepEqual(np.Spec, networkPolicySpec(pool, spec)):
		v.State, v.Detail = IsolationChanged, "NetworkPolicy "+v.Policy+" is not the definition's (changed by hand?); a reconcile puts it back"
	default:
		v.State = IsolationEnforced
	}
	return v
}

// ensureIsolation makes an isolated pool's NetworkPolicy the definition's:
// it creates it when missing and puts it back when changed. A policy of that
// name that is not the pool's is left alone and reported. It returns what
// it found and did, and an error when the policy is not the definition's
// at the end.
func (e *Engine) ensureIsolation(ctx context.Context, pool string, spec Spec) (IsolationView, error) {
	v := IsolationView{Policy: NetworkPolicyName(pool), State: IsolationUnknown}
	pc, ok := e.Cluster.(NetworkPolicyClient)
	if !ok {
		v.Detail = "this client cannot manage NetworkPolicies"
		return v, fmt.Errorf("isolate: %s", v.Detail)
	}
	np, err := pc.GetNetworkPolicy(ctx, v.Policy)
	if err != nil && !errors.Is(err, ErrNotFound) {
		v.Detail = readFailure("networkpolicies", err)
		return v, fmt.Errorf("isolate: read NetworkPolicy %s: %w", v.Policy, err)
	}
	if err != nil {
		np = nil
	}
	v = ObserveIsolation(pool, spec, np)
	switch v.State {
	case IsolationEnforced:
		return v, nil
	case IsolationForeign:
		return v, fmt.Errorf("isolate: %s", v.Detail)
	case IsolationMissing:
		if np != nil { // terminating: created again by a later reconcile
			return v, fmt.Errorf("isolate: %s", v.Detail)
		}
		_, err = pc.CreateNetworkPolicy(ctx, BuildNetworkPolicy(e.Namespace, pool, spec))
		if errors.Is(err, ErrAlreadyExists) {
			err = fmt.Errorf("created by someone else meanwhile; the next reconcile checks it: %w", err)
		}
	case IsolationChanged:
		err = pc.PatchNetworkPolicy(ctx, np.Name, np.ResourceVersion, networkPolicySpec(pool, spec))
		if errors.Is(err, ErrConflict) {
			err = fmt.Errorf("changed by someone else meanwhile; the next reconcile checks it again: %w", err)
		}
	}
	if err != nil {
		v.Detail = err.Error()
		return v, fmt.Errorf("isolate: write NetworkPolicy %s: %w", v.Policy, err)
	}
	was := v.State
	v.State, v.Detail = IsolationEnforced, ""
	if was == IsolationMissing {
		v.Detail = "created"
	} else {
		v.Detail = "put back"
	}
	return v, nil
}

// removeIsolation deletes the pool's NetworkPolicy, when it is the pool's
// (a policy of that name without the pool label is left alone). It says
// whether it deleted one; gone already is success.
func (e *Engine) removeIsolation(ctx context.Context, pool string) (bool, error) {
	pc, ok := e.Cluster.(NetworkPolicyClient)
	if !ok {
		return false, errors.New("this client cannot manage NetworkPolicies")
	}
	name := NetworkPolicyName(pool)
	np, err := pc.GetNetworkPolicy(ctx, name)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read NetworkPolicy %s: %w", name, err)
	case np.Labels[LabelPool] != pool:
		return false, nil // not the pool's
	}
	// A conflict is a policy of that name created again meanwhile (another
	// UID): not the one read, so not this delete's to remove.
	if err := pc.DeleteNetworkPolicy(ctx, name, np.UID); err != nil && !errors.Is(err, ErrConflict) {
		return false, fmt.Errorf("delete NetworkPolicy %s: %w", name, err)
	}
	return true, nil
}

// privateBlocks are the address blocks pod networks are drawn from: the
// private, shared and unique-local ranges.
var privateBlocks = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("fc00::/7"),
}

// cidrWarnings warns of each ingress cidr peer of an isolated pool that
// covers private addresses. A NetworkPolicy admits every address of a cidr
// peer, a member's too (NetworkPolicy cannot take the members out of an
// address block as it takes them out of a selector peer), so where the
// block covers the pod network, members inside it may reach each other.
func (s Spec) cidrWarnings() []string {
	if !s.Isolate {
		return nil
	}
	var w []string
	for i, p := range s.Ingress {
		block, err := netip.ParsePrefix(p.CIDR)
		if err != nil {
			continue
		}
		for _, priv := range privateBlocks {
			if block.Overlaps(priv) {
				w = append(w, fmt.Sprintf("ingress[%d].cidr %s covers private addresses (%s), where pod networks live: a NetworkPolicy admits every address of a cidr peer, a member's too, so members inside it may reach each other; admit in-cluster clients with a podSelector or namespaceSelector peer (those never admit members) and keep cidr peers to addresses outside the pod network", i, p.CIDR, priv))
				break
			}
		}
	}
	return w
}
