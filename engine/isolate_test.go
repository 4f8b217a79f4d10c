package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/ctpool-tui/ctpool-tui/internal/golden"
)

const kPolicy = "NetworkPolicy"

// policyFake is a fakeCluster that also holds NetworkPolicies, with the API
// server's rules: AlreadyExists on create, resourceVersion compare-and-swap
// on patch, UID precondition on delete.
type policyFake struct {
	*fakeCluster
	policies map[string]*networkingv1.NetworkPolicy
}

var _ NetworkPolicyClient = (*policyFake)(nil)

func newPolicyEngine() (*Engine, *policyFake) {
	e, f := newEngine()
	pf := &policyFake{fakeCluster: f, policies: map[string]*networkingv1.NetworkPolicy{}}
	e.Cluster = pf
	return e, pf
}

func (f *policyFake) GetNetworkPolicy(_ context.Context, name string) (*networkingv1.NetworkPolicy, error) {
	if err := f.record("get", kPolicy, name); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	defer f.mu.Unlock()
	np := f.policies[name]
	if np == nil {
		return nil, fmt.Errorf("networkpolicies %q not found: %w", name, ErrNotFound)
	}
	return np.DeepCopy(), nil
}

func (f *policyFake) CreateNetworkPolicy(_ context.Context, np *networkingv1.NetworkPolicy) (*networkingv1.NetworkPolicy, error) {
	if err := f.record("create", kPolicy, np.Name); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	defer f.mu.Unlock()
	if f.policies[np.Name] != nil {
		return nil, fmt.Errorf("networkpolicies %q already exists: %w", np.Name, ErrAlreadyExists)
	}
	c := np.DeepCopy()
	f.stamp(&c.ObjectMeta)
	f.policies[c.Name] = c
	return c.DeepCopy(), nil
}

func (f *policyFake) PatchNetworkPolicy(_ context.Context, name, rv string, spec networkingv1.NetworkPolicySpec) error {
	if err := f.record("patch", kPolicy, name); err != nil {
		f.mu.Unlock()
		return err
	}
	defer f.mu.Unlock()
	np := f.policies[name]
	switch {
	case np == nil:
		return fmt.Errorf("networkpolicies %q not found: %w", name, ErrNotFound)
	case np.ResourceVersion != rv:
		return fmt.Errorf("networkpolicies %q: the object has been modified: %w", name, ErrConflict)
	}
	np.Spec = *spec.DeepCopy()
	np.ResourceVersion = f.nextRV()
	return nil
}

func (f *policyFake) DeleteNetworkPolicy(_ context.Context, name string, uid types.UID) error {
	if err := f.record("delete", kPolicy, name); err != nil {
		f.mu.Unlock()
		return err
	}
	defer f.mu.Unlock()
	np := f.policies[name]
	switch {
	case np == nil:
		return nil
	case uid != "" && np.UID != uid:
		return fmt.Errorf("networkpolicies %q: precondition failed: UID: %w", name, ErrConflict)
	}
	delete(f.policies, name)
	return nil
}

// put stores np as someone else wrote it.
func (f *policyFake) put(np *networkingv1.NetworkPolicy) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := np.DeepCopy()
	c.ResourceVersion = ""
	f.stamp(&c.ObjectMeta)
	f.policies[c.Name] = c
}

func (f *policyFake) policy(name string) *networkingv1.NetworkPolicy {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.policies[name].DeepCopy()
}

func policyActs(acts []act) []act {
	var out []act
	for _, a := range acts {
		if a.Kind == kPolicy {
			out = append(out, a)
		}
	}
	return out
}

func isolatedSpec(size int) Spec {
	s := baseSpec(size)
	s.Isolate = true
	return s
}

func TestValidateIsolation(t *testing.T) {
	peer := func(p NetworkPeer) []NetworkPeer { return []NetworkPeer{p} }
	many := make([]NetworkPeer, MaxNetworkPeers+1)
	for i := range many {
		many[i] = NetworkPeer{CIDR: fmt.Sprintf("10.0.%d.0/24", i)}
	}
	cases := []struct {
		name    string
		isolate bool
		ingress []NetworkPeer
		egress  []NetworkPeer
		field   string // "" valid
	}{
		{name: "isolated, no peers", isolate: true},
		{name: "broker by namespace and pod", isolate: true, ingress: peer(NetworkPeer{NamespaceSelector: map[string]string{"kubernetes.io/metadata.name": "broker"}, PodSelector: map[string]string{"app": "gateway"}, Ports: []int32{5901}})},
		{name: "egress to a registry block", isolate: true, egress: peer(NetworkPeer{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}, Ports: []int32{443}})},
		{name: "ipv6 block", isolate: true, egress: peer(NetworkPeer{CIDR: "fd00::/8"})},
		{name: "ingress without isolate", ingress: peer(NetworkPeer{CIDR: "10.0.0.0/8"}), field: "ingress"},
		{name: "egress without isolate", egress: peer(NetworkPeer{CIDR: "10.0.0.0/8"}), field: "egress"},
		{name: "too many peers", isolate: true, ingress: many, field: "ingress"},
		{name: "empty peer", isolate: true, ingress: peer(NetworkPeer{}), field: "ingress[0]"},
		{name: "selectors and cidr", isolate: true, ingress: peer(NetworkPeer{PodSelector: map[string]string{"a": "b"}, CIDR: "10.0.0.0/8"}), field: "ingress[0]"},
		{name: "empty selector chooses everything", isolate: true, ingress: peer(NetworkPeer{PodSelector: map[string]string{}}), field: "ingress[0].podSelector"},
		{name: "bad label key", isolate: true, ingress: peer(NetworkPeer{NamespaceSelector: map[string]string{"bad key": "x"}}), field: "ingress[0].namespaceSelector"},
		{name: "bad label value", isolate: true, ingress: peer(NetworkPeer{PodSelector: map[string]string{"app": "no spaces"}}), field: "ingress[0].podSelector.app"},
		{name: "cidr not a block", isolate: true, egress: peer(NetworkPeer{CIDR: "10.0.0.1/8"}), field: "egress[0].cidr"},
		{name: "cidr garbage", isolate: true, egress: peer(NetworkPeer{CIDR: "anywhere"}), field: "egress[0].cidr"},
		{name: "except without cidr", isolate: true, egress: peer(NetworkPeer{PodSelector: map[string]string{"a": "b"}, Except: []string{"10.0.0.0/8"}}), field: "egress[0].except"},
		{name: "except outside the block", isolate: true, egress: peer(NetworkPeer{CIDR: "10.0.0.0/16", Except: []string{"10.2.0.0/24"}}), field: "egress[0].except[0]"},
		{name: "except as wide as the block", isolate: true, egress: peer(NetworkPeer{CIDR: "10.0.0.0/16", Except: []string{"10.0.0.0/16"}}), field: "egress[0].except[0]"},
		{name: "except of the other family", isolate: true, egress: peer(NetworkPeer{CIDR: "10.0.0.0/8", Except: []string{"fd00::/16"}}), field: "egress[0].except[0]"},
		{name: "port zero", isolate: true, ingress: peer(NetworkPeer{CIDR: "10.0.0.0/8", Ports: []int32{0}}), field: "ingress[0].ports[0]"},
		{name: "port too high", isolate: true, egress: peer(NetworkPeer{CIDR: "10.0.0.0/8", Ports: []int32{443, 70000}}), field: "egress[0].ports[1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := baseSpec(2)
			s.Isolate, s.Ingress, s.Egress = tc.isolate, tc.ingress, tc.egress
			err := s.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want valid", err)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("Validate: %v, want an InvalidError of %s", err, tc.field)
			}
			if inv.Field != tc.field {
				t.Fatalf("Validate names field %q (%v), want %q", inv.Field, err, tc.field)
			}
		})
	}
}

// The isolation fields round-trip through the definition, and a definition
// that names a field the peer does not know is refused (nothing unknown is
// kept in the ConfigMap).
func TestIsolationFieldsParse(t *testing.T) {
	src := `image: ghcr.io/example/desktop:1
size: 2
isolate: true
ingress:
- namespaceSelector: {kubernetes.io/metadata.name: broker}
  ports: [5901]
egress:
- cidr: 10.0.0.0/8
  except: [10.9.0.0/16]
`
	s, err := ParseSpec(src)
	if err != nil {
		t.Fatalf("ParseSpec: %v", err)
	}
	if !s.Isolate || len(s.Ingress) != 1 || s.Ingress[0].NamespaceSelector["kubernetes.io/metadata.name"] != "broker" || s.Egress[0].Except[0] != "10.9.0.0/16" {
		t.Fatalf("parsed %+v", s)
	}
	if _, err := ParseSpec(strings.Replace(src, "ports: [5901]", "port: 5901", 1)); err == nil {
		t.Fatal("a peer with an unknown field parsed")
	}
	// Not a source field: isolating a pool drifts no member.
	s.Default()
	if s.SourceHash() != baseSpec(2).SourceHash() {
		t.Fatal("isolate and its peers change the source hash")
	}
}

func TestNetworkPolicyGolden(t *testing.T) {
	specs := map[string]Spec{
		"isolated": isolatedSpec(3),
		"broker-and-egress": func() Spec {
			s := isolatedSpec(3)
			s.Ingress = []NetworkPeer{
				{NamespaceSelector: map[string]string{"kubernetes.io/metadata.name": "broker"}, PodSelector: map[string]string{"app": "gateway"}, Ports: []int32{5901, 6080}},
				{PodSelector: map[string]string{"app": "monitor"}},
				{CIDR: "192.168.10.0/24"},
			}
			s.Egress = []NetworkPeer{{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8"}, Ports: []int32{443}}, {NamespaceSelector: map[string]string{"team": "apps"}}}
			return s
		}(),
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			if err := spec.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := yaml.Marshal(BuildNetworkPolicy("vdi", "desk", spec))
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", "policies", name+".yaml"), string(got))
		})
	}
}

// Every selector peer of the ingress rules keeps pool members out, and
// the policy selects exactly the pool's members.
func TestNetworkPolicyKeepsMembersApart(t *testing.T) {
	s := isolatedSpec(2)
	s.Ingress = []NetworkPeer{{NamespaceSelector: map[string]string{"a": "b"}}, {PodSelector: map[string]string{"c": "d"}}, {CIDR: "10.0.0.0/8"}}
	np := BuildNetworkPolicy(testNS, "desk", s)
	if np.Spec.PodSelector.MatchLabels[LabelPool] != "desk" || len(np.Spec.PodSelector.MatchExpressions) != 1 || np.Spec.PodSelector.MatchExpressions[0].Key != LabelMember {
		t.Fatalf("podSelector %+v does not select the members of desk", np.Spec.PodSelector)
	}
	if np.Labels[LabelPool] != "desk" || np.Name != ConfigMapName("desk") {
		t.Fatalf("policy %s labels %v", np.Name, np.Labels)
	}
	for i, r := range np.Spec.Ingress {
		for _, p := range r.From {
			if p.IPBlock != nil {
				continue
			}
			if p.PodSelector == nil || len(p.PodSelector.MatchExpressions) != 1 || !reflect.DeepEqual(p.PodSelector.MatchExpressions[0], notAMember) {
				t.Fatalf("ingress[%d] peer %+v admits pool members", i, p)
			}
		}
	}
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.Egress != nil {
		t.Fatalf("egress is restricted with no egress field: %+v", np.Spec)
	}
	s.Egress = []NetworkPeer{{CIDR: "10.0.0.0/8"}}
	np = BuildNetworkPolicy(testNS, "desk", s)
	if len(np.Spec.PolicyTypes) != 2 || len(np.Spec.Egress) != 2 || len(np.Spec.Egress[0].Ports) != 2 || np.Spec.Egress[0].To != nil {
		t.Fatalf("restricted egress does not allow DNS first: %+v", np.Spec.Egress)
	}
}

func TestReconcileIsolation(t *testing.T) {
	spec := isolatedSpec(2)
	name := NetworkPolicyName("desk")
	changed := func() *networkingv1.NetworkPolicy {
		np := BuildNetworkPolicy(testNS, "desk", spec)
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}} // allow all, by hand
		return np
	}
	foreign := func() *networkingv1.NetworkPolicy {
		np := BuildNetworkPolicy(testNS, "desk", spec)
		np.Labels = map[string]string{"team": "net"}
		return np
	}
	cases := []struct {
		name       string
		existing   *networkingv1.NetworkPolicy
		fail       string // verb to fail
		failErr    error
		wantActs   []act
		wantState  string
		wantDetail string // substring
		wantErr    string // substring of the recorded error; "" none
		wantSpec   bool   // the stored policy is the definition's at the end
	}{
		{name: "created when missing", wantActs: wantActs("get NetworkPolicy "+name, "create NetworkPolicy "+name), wantState: IsolationEnforced, wantDetail: "created", wantSpec: true},
		{name: "enforced is left alone", existing: BuildNetworkPolicy(testNS, "desk", spec), wantActs: wantActs("get NetworkPolicy " + name), wantState: IsolationEnforced, wantSpec: true},
		{name: "changed by hand is put back", existing: changed(), wantActs: wantActs("get NetworkPolicy "+name, "patch NetworkPolicy "+name), wantState: IsolationEnforced, wantDetail: "put back", wantSpec: true},
		{name: "foreign is reported, not touched", existing: foreign(), wantActs: wantActs("get NetworkPolicy " + name), wantState: IsolationForeign, wantDetail: "not this pool's", wantErr: "isolate: NetworkPolicy " + name + " exists and is not this pool's"},
		{name: "no permission to read", fail: "get", failErr: fmt.Errorf("networkpolicies is forbidden: %w", ErrForbidden), wantActs: wantActs("get NetworkPolicy " + name), wantState: IsolationUnknown, wantDetail: "no permission to get networkpolicies", wantErr: "isolate: read NetworkPolicy"},
		{name: "no permission to create", fail: "create", failErr: fmt.Errorf("networkpolicies is forbidden: %w", ErrForbidden), wantActs: wantActs("get NetworkPolicy "+name, "create NetworkPolicy "+name), wantState: IsolationMissing, wantDetail: "forbidden", wantErr: "isolate: write NetworkPolicy"},
		{name: "changed meanwhile", existing: changed(), fail: "patch", failErr: fmt.Errorf("modified: %w", ErrConflict), wantActs: wantActs("get NetworkPolicy "+name, "patch NetworkPolicy "+name), wantState: IsolationChanged, wantDetail: "changed by someone else meanwhile", wantErr: "isolate: write NetworkPolicy"},
		{name: "created meanwhile", fail: "create", failErr: fmt.Errorf("exists: %w", ErrAlreadyExists), wantActs: wantActs("get NetworkPolicy "+name, "create NetworkPolicy "+name), wantState: IsolationMissing, wantDetail: "created by someone else meanwhile", wantErr: "isolate: write NetworkPolicy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newPolicyEngine()
			seedPool(f.fakeCluster, "desk", spec, 0)
			if tc.existing != nil {
				f.put(tc.existing)
			}
			if tc.fail != "" {
				f.fail(tc.fail, kPolicy, name, tc.failErr, 0)
			}
			res, err := e.Reconcile(context.Background(), "desk")
			assertActs(t, policyActs(f.actions()), tc.wantActs)
			if res.Isolation == nil || res.Isolation.State != tc.wantState || !strings.Contains(res.Isolation.Detail, tc.wantDetail) {
				t.Fatalf("isolation %+v, want state %s with %q", res.Isolation, tc.wantState, tc.wantDetail)
			}
			recorded := strings.Join(res.Errors, "\n")
			if tc.wantErr == "" {
				if err != nil || recorded != "" {
					t.Fatalf("reconcile: %v %q, want no error", err, recorded)
				}
			} else {
				if err == nil || !strings.Contains(recorded, tc.wantErr) {
					t.Fatalf("reconcile: %v, errors %q, want %q", err, recorded, tc.wantErr)
				}
				st := f.cm(ConfigMapName("desk")).Data[KeyStatus]
				if !strings.Contains(st, "isolate: ") {
					t.Fatalf("the status does not record the isolate error: %s", st)
				}
			}
			got := f.policy(name)
			if tc.wantSpec {
				if v := ObserveIsolation("desk", spec, got); v.State != IsolationEnforced {
					t.Fatalf("the stored policy is %s: %s", v.State, v.Detail)
				}
			}
			if tc.existing != nil && !tc.wantSpec && got.ResourceVersion != f.policies[name].ResourceVersion {
				t.Fatal("the policy was written")
			}
			// The members were reconciled whatever the policy did.
			if len(res.Actions) != 2 {
				t.Fatalf("member actions %v", res.Actions)
			}
		})
	}
}

// A pool without isolate never reads or writes a NetworkPolicy, even one
// of its name with its label (a leftover edited in by hand).
func TestNotIsolatedMakesNoPolicyCall(t *testing.T) {
	e, f := newPolicyEngine()
	spec := baseSpec(2)
	seedPool(f.fakeCluster, "desk", spec, 2)
	f.put(BuildNetworkPolicy(testNS, "desk", isolatedSpec(2)))
	ctx := context.Background()
	if _, err := e.Reconcile(ctx, "desk"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, "desk", baseSpec(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Delete(ctx, "desk"); err != nil {
		t.Fatal(err)
	}
	if acts := policyActs(f.actions()); len(acts) != 0 {
		t.Fatalf("a pool without isolate made policy calls: %v", acts)
	}
	if f.policy(NetworkPolicyName("desk")) == nil {
		t.Fatal("the policy went")
	}
}

// apply --isolate creates the policy; apply without it removes the pool's
// policy, and a failure to remove it is an error that names the policy.
func TestApplyIsolateTransitions(t *testing.T) {
	ctx := context.Background()
	name := NetworkPolicyName("desk")
	e, f := newPolicyEngine()
	res, err := e.Apply(ctx, "desk", isolatedSpec(2))
	if err != nil {
		t.Fatal(err)
	}
	if res.Reconcile.Isolation == nil || res.Reconcile.Isolation.Detail != "created" || f.policy(name) == nil {
		t.Fatalf("apply --isolate: %+v, policy %v", res.Reconcile.Isolation, f.policy(name))
	}
	// Peers change: the policy follows.
	s := isolatedSpec(2)
	s.Ingress = []NetworkPeer{{CIDR: "10.0.0.0/8"}}
	if res, err = e.Apply(ctx, "desk", s); err != nil || res.Reconcile.Isolation.Detail != "put back" {
		t.Fatalf("apply with ingress: %v %+v", err, res.Reconcile.Isolation)
	}
	if got := f.policy(name); len(got.Spec.Ingress) != 1 || got.Spec.Ingress[0].From[0].IPBlock.CIDR != "10.0.0.0/8" {
		t.Fatalf("policy ingress %+v", got.Spec.Ingress)
	}

	// Un-isolate, with the delete refused once: apply says the policy stays.
	f.fail("delete", kPolicy, name, fmt.Errorf("networkpolicies is forbidden: %w", ErrForbidden), 1)
	_, err = e.Apply(ctx, "desk", baseSpec(2))
	if err == nil || !strings.Contains(err.Error(), "its NetworkPolicy "+name+" stays") {
		t.Fatalf("un-isolate with the delete refused: %v", err)
	}
	if f.policy(name) == nil {
		t.Fatal("the policy went though its delete failed")
	}
	// Apply knows a pool was isolated only from its stored definition,
	// which the failed apply already wrote without isolate: a second apply
	// leaves the policy (a pool without isolate makes no policy call), as
	// the error told the admin it would.
	res, err = e.Apply(ctx, "desk", baseSpec(2))
	if err != nil || res.PolicyRemoved {
		t.Fatalf("apply of the same plain spec: %v, removed %v", err, res.PolicyRemoved)
	}

	// Isolate again and un-isolate cleanly.
	if _, err = e.Apply(ctx, "desk", isolatedSpec(2)); err != nil {
		t.Fatal(err)
	}
	res, err = e.Apply(ctx, "desk", baseSpec(2))
	if err != nil || !res.PolicyRemoved || f.policy(name) != nil {
		t.Fatalf("un-isolate: %v, removed %v, policy %v", err, res.PolicyRemoved, f.policy(name))
	}
}

// A policy of the pool's name without the pool label is someone else's:
// un-isolating and deleting leave it.
func TestForeignPolicyKept(t *testing.T) {
	ctx := context.Background()
	name := NetworkPolicyName("desk")
	for _, op := range []string{"unisolate", "delete"} {
		t.Run(op, func(t *testing.T) {
			e, f := newPolicyEngine()
			spec := isolatedSpec(2)
			seedPool(f.fakeCluster, "desk", spec, 0)
			np := BuildNetworkPolicy(testNS, "desk", spec)
			np.Labels = map[string]string{"team": "net"}
			f.put(np)
			var err error
			if op == "delete" {
				_, err = e.Delete(ctx, "desk")
			} else {
				var res ApplyResult
				res, err = e.Apply(ctx, "desk", baseSpec(2))
				if res.PolicyRemoved {
					t.Fatal("apply says it removed a foreign policy")
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if hasAct(f.actions(), "delete", kPolicy, name) || f.policy(name) == nil {
				t.Fatal("the foreign policy was deleted")
			}
		})
	}
}

func TestDeleteIsolatedPool(t *testing.T) {
	ctx := context.Background()
	name := NetworkPolicyName("desk")
	cases := []struct {
		name       string
		definition func() string // nil: the isolated spec
		failErr    error
		wantErr    string
		wantGone   bool
	}{
		{name: "removes the policy", wantGone: true},
		{name: "refused delete keeps the definition", failErr: fmt.Errorf("forbidden: %w", ErrForbidden), wantErr: "the definition stays"},
		{name: "definition that does not parse", definition: func() string { return "image: [" }, wantGone: true},
		// Best effort: the definition goes, the policy stays.
		{name: "definition that does not parse, refused", definition: func() string { return "image: [" }, failErr: fmt.Errorf("forbidden: %w", ErrForbidden)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newPolicyEngine()
			spec := isolatedSpec(2)
			cm := BuildConfigMap(testNS, "desk", spec)
			if tc.definition != nil {
				cm.Data[KeySpec] = tc.definition()
			}
			f.add(cm)
			for n := 1; n <= 2; n++ {
				p, c := readyMember("desk", n, spec)
				f.add(p, c)
			}
			f.put(BuildNetworkPolicy(testNS, "desk", spec))
			if tc.failErr != nil {
				f.fail("delete", kPolicy, name, tc.failErr, 0)
			}
			_, err := e.Delete(ctx, "desk")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("delete: %v, want %q", err, tc.wantErr)
				}
				if f.cm(ConfigMapName("desk")) == nil {
					t.Fatal("the definition went though the policy stays")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (f.policy(name) == nil) != tc.wantGone {
				t.Fatalf("policy gone %v, want %v", f.policy(name) == nil, tc.wantGone)
			}
			if f.cm(ConfigMapName("desk")) != nil {
				t.Fatal("the definition stays")
			}
		})
	}
}

// Isolation of a view: nil when not isolated, the state when the snapshot
// read the policy, unknown with the reason (and the last reconcile's
// isolate error) when not.
func TestPoolViewIsolation(t *testing.T) {
	spec := isolatedSpec(1)
	snap := func(read *NetworkPolicyRead, statusErr string) Snapshot {
		cm := BuildConfigMap(testNS, "desk", spec)
		if statusErr != "" {
			st := Status{Errors: []string{statusErr}}
			cm.Data[KeyStatus] = st.Encode()
		}
		return Snapshot{Pool: "desk", Namespace: testNS, ConfigMap: cm, NetworkPolicy: read}
	}
	cases := []struct {
		name   string
		spec   Spec
		snap   Snapshot
		state  string // "" nil
		detail string
	}{
		{name: "not isolated", snap: Snapshot{Pool: "desk", Namespace: testNS, ConfigMap: BuildConfigMap(testNS, "desk", baseSpec(1))}},
		{name: "enforced", snap: snap(&NetworkPolicyRead{Policy: BuildNetworkPolicy(testNS, "desk", spec)}, ""), state: IsolationEnforced},
		{name: "missing", snap: snap(&NetworkPolicyRead{}, ""), state: IsolationMissing, detail: "until a reconcile creates it"},
		{name: "not read", snap: snap(nil, ""), state: IsolationUnknown, detail: "ctpool-tui status desk reads it"},
		{name: "forbidden, with the reconcile's word", snap: snap(&NetworkPolicyRead{Err: fmt.Errorf("x: %w", ErrForbidden)}, "isolate: write NetworkPolicy x: forbidden"), state: IsolationUnknown, detail: "no permission to get networkpolicies; the last reconcile said: write NetworkPolicy x: forbidden"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Observe(tc.snap, testNow)
			iv := v.Isolation()
			if tc.state == "" {
				if iv != nil {
					t.Fatalf("isolation %+v for a pool that is not isolated", iv)
				}
				return
			}
			if iv == nil || iv.State != tc.state || !strings.Contains(iv.Detail, tc.detail) {
				t.Fatalf("isolation %+v, want %s with %q", iv, tc.state, tc.detail)
			}
		})
	}
}

// An ingress cidr peer that covers private addresses may admit members (a
// NetworkPolicy cannot take them out of an address block): apply says so.
func TestIngressCIDRCoveringPodNetworksWarns(t *testing.T) {
	for _, tc := range []struct {
		cidr string
		warn bool
	}{
		{"10.0.0.0/8", true},
		{"0.0.0.0/0", true},
		{"10.244.3.0/24", true},
		{"fd00:10::/64", true},
		{"203.0.113.0/24", false},
		{"2001:db8::/32", false},
	} {
		t.Run(tc.cidr, func(t *testing.T) {
			s := baseSpec(1)
			s.Isolate, s.Ingress = true, []NetworkPeer{{CIDR: tc.cidr}}
			w := s.Warnings()
			got := len(w) == 1 && strings.Contains(w[0], "ingress[0].cidr "+tc.cidr+" covers private addresses")
			if got != tc.warn || (!tc.warn && len(w) != 0) {
				t.Fatalf("warnings %q, want a warning: %v", w, tc.warn)
			}
		})
	}
}
