package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// TestOnceIsolation: an isolated pool's policy state reaches the table and
// the JSON; a pool that is not isolated carries no isolation at all, and
// text an actor wrote into the policy's read error is escaped.
func TestOnceIsolation(t *testing.T) {
	isolated := engine.Spec{Image: "img", Size: 0, Isolate: true, Ingress: []engine.NetworkPeer{{PodSelector: map[string]string{"app": "broker"}}}}
	isolated.Default()
	plain := engine.Spec{Image: "img", Size: 0}
	plain.Default()
	changed := engine.BuildNetworkPolicy("vdi", "desk", isolated)
	changed.Spec.Ingress = append(changed.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{})
	foreign := engine.BuildNetworkPolicy("vdi", "desk", isolated)
	foreign.Labels = nil
	cases := []struct {
		name  string
		spec  engine.Spec
		read  *engine.NetworkPolicyRead
		line  string // the table's isolation line ("" = none)
		state string // the JSON's isolation.state ("" = no isolation field)
		bad   bool   // the pool is "not isolated" and needs attention
	}{
		{name: "not isolated", spec: plain, read: &engine.NetworkPolicyRead{}},
		{name: "enforced", spec: isolated, read: &engine.NetworkPolicyRead{Policy: engine.BuildNetworkPolicy("vdi", "desk", isolated)},
			line: "  isolation: NetworkPolicy corral-vdi-ctpool-desk enforced\n", state: engine.IsolationEnforced},
		{name: "missing", spec: isolated, read: &engine.NetworkPolicyRead{},
			line: "  isolation: NetworkPolicy corral-vdi-ctpool-desk missing (", state: engine.IsolationMissing, bad: true},
		{name: "changed", spec: isolated, read: &engine.NetworkPolicyRead{Policy: changed},
			line: "  isolation: NetworkPolicy corral-vdi-ctpool-desk changed (", state: engine.IsolationChanged, bad: true},
		{name: "foreign", spec: isolated, read: &engine.NetworkPolicyRead{Policy: foreign},
			line: "  isolation: NetworkPolicy corral-vdi-ctpool-desk foreign (", state: engine.IsolationForeign, bad: true},
		{name: "not read (a dashboard's cache)", spec: isolated,
			line: "  isolation: NetworkPolicy corral-vdi-ctpool-desk unknown (not read here; ctpool-tui status desk reads it)\n", state: engine.IsolationUnknown},
		{name: "a hostile read error", spec: isolated, read: &engine.NetworkPolicyRead{Err: fmt.Errorf("get: %s", hostile)},
			line: "  isolation: NetworkPolicy corral-vdi-ctpool-desk unknown (", state: engine.IsolationUnknown},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			snap := engine.Snapshot{Namespace: "vdi", Pool: "desk", ConfigMap: engine.BuildConfigMap("vdi", "desk", tt.spec), NetworkPolicy: tt.read}
			views := []engine.PoolView{engine.Observe(snap, now)}
			var table, doc bytes.Buffer
			code := RenderOnce(&table, views, OnceOptions{Namespace: "vdi", Now: now})
			if bad := code == ExitAttention; bad != tt.bad {
				t.Fatalf("exit %d, want attention %v:\n%s", code, tt.bad, table.String())
			}
			if r, _ := Report(views, OnceOptions{Namespace: "vdi", Now: now}); tt.bad != (r.Pools[0].Status == "not isolated") {
				t.Fatalf("status %q, want not isolated %v", r.Pools[0].Status, tt.bad)
			}
			RenderOnce(&doc, views, OnceOptions{Namespace: "vdi", Now: now, Format: "json"})
			out := table.String()
			switch {
			case tt.line == "" && strings.Contains(out, "isolation:"):
				t.Fatalf("a pool that is not isolated shows isolation:\n%s", out)
			case tt.line != "" && !strings.Contains(out, tt.line):
				t.Fatalf("table lacks %q:\n%s", tt.line, out)
			case strings.ContainsAny(out, "\x1b\x07\u009b\u202e"):
				t.Fatalf("table holds control text: %q", out)
			}
			var r struct {
				Pools []struct {
					Isolation *struct{ Policy, State, Detail string } `json:"isolation"`
				} `json:"pools"`
			}
			if err := json.Unmarshal(doc.Bytes(), &r); err != nil || len(r.Pools) != 1 {
				t.Fatalf("json %v: %s", err, doc.String())
			}
			iv := r.Pools[0].Isolation
			switch {
			case tt.state == "" && iv != nil:
				t.Fatalf("a pool that is not isolated has isolation %+v", *iv)
			case tt.state != "" && (iv == nil || iv.State != tt.state || iv.Policy != "corral-vdi-ctpool-desk"):
				t.Fatalf("isolation %+v, want state %s", iv, tt.state)
			case iv != nil && strings.ContainsAny(iv.Detail, "\x1b\x07\u009b\u202e"):
				t.Fatalf("json detail holds control text: %q", iv.Detail)
			}
		})
	}
}
