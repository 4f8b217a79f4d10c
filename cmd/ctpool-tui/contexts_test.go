package main

import (
	"context"
	"testing"
)

// A cluster is found by its context's name, which may hold "/"; the reads
// of a context with no connection answer its error, and it runs no action.
func TestContextsSourceCluster(t *testing.T) {
	src := &contextsSource{contexts: []*contextConn{{name: "prod"}, {name: "arn:aws:eks:eu-west-1:1:cluster/lab"}}}
	for _, tc := range []struct {
		kctx, want string
	}{
		{"prod", "prod"},
		{"arn:aws:eks:eu-west-1:1:cluster/lab", "arn:aws:eks:eu-west-1:1:cluster/lab"},
		{"lab", ""},
		{"", ""},
	} {
		got := ""
		if c := src.byName(tc.kctx); c != nil {
			got = c.name
		}
		if got != tc.want {
			t.Errorf("cluster(%q) = %q, want %q", tc.kctx, got, tc.want)
		}
	}
	r := contextsOptions(src, []string{"prod"}, scope{}, false).Resolver
	if a := r.Actions("prod", "vdi"); a != nil {
		t.Errorf("Actions of a context with no connection: %T", a)
	}
	if _, err := r.Access("other", "vdi").Capabilities(context.Background(), nil); err == nil {
		t.Error("Access of an unknown context: no error")
	}
	if _, err := r.Events("other").Events(context.Background(), "vdi", "Pod", "desk-1"); err == nil || err.Error() != "no connected cluster for other/vdi" {
		t.Errorf("Events of an unknown context: %v", err)
	}
	if _, err := r.Logs("prod").Stream(context.Background(), "vdi", "desk-1", false); err == nil {
		t.Error("Logs of a context with no connection: no error")
	}
	if err := r.Console("prod").Console(context.Background(), "vdi", "desk-1", nil, nil, nil); err == nil {
		t.Error("Console of a context with no connection: no error")
	}
}
