package render_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// contextClusters: prod with the fleet fixture in every namespace, lab with
// only its desk pool of vdi-eng in one namespace (healthy), and edge, which
// did not answer or refused.
func contextClusters(edgeState string) []render.ContextViews {
	all := engine.ObserveAll(fixture.FleetSnapshots(), t0)
	var labDesk []engine.PoolView
	for _, v := range all {
		if v.Namespace == "vdi-eng" {
			labDesk = append(labDesk, v)
		}
	}
	cs := []render.ContextViews{
		{Context: "prod", Fleet: true, Views: all, State: render.ContextLive},
		{Context: "lab", Namespace: "vdi-eng", Views: labDesk, State: render.ContextLive},
	}
	switch edgeState {
	case render.ContextUnreachable:
		cs = append(cs, render.ContextViews{Context: "edge", Namespace: "vdi", State: render.ContextUnreachable,
			Err: errors.New("cannot read namespace vdi at https://10.0.0.9:6443: connection refused")})
	case render.ContextForbidden:
		cs = append(cs, render.ContextViews{Context: "edge", Namespace: "vdi", State: render.ContextForbidden,
			Err: errors.New("this identity may not list pods in namespace vdi")})
	}
	return cs
}

func TestRenderContexts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		clusters []render.ContextViews
		opts     render.OnceOptions
		golden   string
		want     []string
		code     int
	}{
		{name: "one unreachable", clusters: contextClusters(render.ContextUnreachable), opts: render.OnceOptions{Now: t0}, golden: "once_contexts_table",
			want: []string{"edge     vdi         unreachable", "lab: vdi-eng/desk (", "prod: vdi-cad/gpu ("}, code: 1},
		{name: "one forbidden", clusters: contextClusters(render.ContextForbidden), opts: render.OnceOptions{Now: t0},
			want: []string{"edge     vdi         forbidden  this identity may not list pods"}, code: 1},
		{name: "all live, attention in prod", clusters: contextClusters(""), opts: render.OnceOptions{Now: t0},
			want: []string{"prod     all"}, code: render.ExitAttention},
		{name: "a pool in one cluster is no attention in another", clusters: contextClusters("")[1:], opts: render.OnceOptions{Pool: "desk", Now: t0},
			want: []string{"lab      vdi-eng    desk"}, code: render.ExitOK},
		{name: "desk in both", clusters: contextClusters(""), opts: render.OnceOptions{Pool: "desk", Now: t0},
			want: []string{"prod     vdi-cad    desk", "prod     vdi-eng    desk", "lab      vdi-eng    desk"}, code: render.ExitOK},
		{name: "no such pool anywhere", clusters: contextClusters(""), opts: render.OnceOptions{Pool: "gone", Now: t0},
			want: []string{"no pool named gone in contexts prod, lab"}, code: render.ExitAttention},
		{name: "unreachable is worse than attention", clusters: contextClusters(render.ContextUnreachable), opts: render.OnceOptions{Pool: "gpu", Now: t0},
			want: []string{"prod     vdi-cad    gpu"}, code: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if code := render.RenderContexts(&b, tc.clusters, tc.opts); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if tc.golden != "" {
				golden(t, tc.golden, b.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestRenderContextsJSONNamesContextAndNamespace(t *testing.T) {
	var b bytes.Buffer
	code := render.RenderContexts(&b, contextClusters(render.ContextUnreachable), render.OnceOptions{Format: "json", Now: t0})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	var r render.OnceReport
	if err := json.Unmarshal(b.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range r.Pools {
		got = append(got, p.Context+"/"+p.Namespace+"/"+p.Name)
	}
	want := "prod/kiosk/kiosk prod/vdi-cad/desk prod/vdi-cad/gpu prod/vdi-eng/desk lab/vdi-eng/desk"
	if strings.Join(got, " ") != want {
		t.Errorf("pools %v, want %s", got, want)
	}
	var states []string
	for _, c := range r.Contexts {
		states = append(states, c.Context+"="+c.State)
	}
	if strings.Join(states, " ") != "prod=live lab=live edge=unreachable" || r.Contexts[2].Error == "" ||
		!r.Contexts[0].AllNamespaces || r.Contexts[1].Namespace != "vdi-eng" {
		t.Errorf("contexts %+v", r.Contexts)
	}
}
