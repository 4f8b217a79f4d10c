package main

import "testing"

// A fleet namespace is context/namespace; a context name may hold "/".
func TestContextsSourceIn(t *testing.T) {
	src := &contextsSource{clusters: []*clusterConn{{name: "prod"}, {name: "arn:aws:eks:eu-west-1:1:cluster/lab"}}}
	for _, tc := range []struct {
		ns, wantCtx, wantNS string
	}{
		{"prod/vdi", "prod", "vdi"},
		{"arn:aws:eks:eu-west-1:1:cluster/lab/vdi-eng", "arn:aws:eks:eu-west-1:1:cluster/lab", "vdi-eng"},
		{"other/vdi", "", "vdi"},
		{"vdi", "", "vdi"},
	} {
		c, ns := src.in(tc.ns)
		got := ""
		if c != nil {
			got = c.name
		}
		if got != tc.wantCtx || ns != tc.wantNS {
			t.Errorf("in(%q) = %q, %q; want %q, %q", tc.ns, got, ns, tc.wantCtx, tc.wantNS)
		}
	}
}
