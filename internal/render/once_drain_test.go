package render_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// TestRenderOnceDrain: members on a cordoned node are marked node draining
// (nodeDraining in the JSON document), the pool says how many claimed
// desktops hold the drain of each node (drainHolds), and that its claimed
// desktops are not protected from eviction when the last reconcile said so;
// a hostile node name is sanitised; with the nodes unknown nothing says so.
func TestRenderOnceDrain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		unknown bool
	}{{"node-a cordoned", false}, {"nodes unknown", true}} {
		t.Run(tc.name, func(t *testing.T) {
			cl := fixture.Drain()
			if tc.unknown {
				cl.NodeCordoned = nil
			}
			var js bytes.Buffer
			render.RenderOnce(&js, cl.Views(), render.OnceOptions{Format: "json", Namespace: ns, Now: t0})
			var rep render.OnceReport
			if err := json.Unmarshal(js.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			p := rep.Pools[0]
			draining := map[string]bool{}
			for _, m := range p.Members {
				draining[m.Name] = m.NodeDraining
			}
			want := map[string]bool{"desk-1": !tc.unknown, "desk-2": !tc.unknown, "desk-3": !tc.unknown, "desk-4": false}
			for name, w := range want {
				if draining[name] != w {
					t.Errorf("%s nodeDraining = %v, want %v", name, draining[name], w)
				}
			}
			if tc.unknown {
				if len(p.DrainHolds) != 0 || strings.Contains(js.String(), "drainHolds") {
					t.Errorf("nodes unknown, drainHolds %+v", p.DrainHolds)
				}
			} else if len(p.DrainHolds) != 1 || p.DrainHolds[0].Node != "node-a" || p.DrainHolds[0].Claimed != 2 || strings.Join(p.DrainHolds[0].Members, ",") != "desk-1,desk-2" {
				t.Errorf("drainHolds = %+v, want desk-1 and desk-2 on node-a", p.DrainHolds)
			}
			if p.Protection == nil || p.Protection.State != engine.ProtectionNone || !strings.Contains(p.Protection.Detail, "no permission to get poddisruptionbudgets") {
				t.Errorf("protection = %+v", p.Protection)
			}

			var tb bytes.Buffer
			render.RenderOnce(&tb, cl.Views(), render.OnceOptions{Namespace: ns, Now: t0})
			out := tb.String()
			if !strings.Contains(out, "  protection: "+engine.NotProtected+": ") {
				t.Errorf("the table does not say the desktops are unprotected:\n%s", out)
			}
			if got := strings.Contains(out, "  drain: 2 claimed desktops hold the drain of node-a (desk-1, desk-2)\n"); got == tc.unknown {
				t.Errorf("drain line shown %v:\n%s", got, out)
			}
			if got := strings.Count(out, "node draining"); got != map[bool]int{false: 3, true: 0}[tc.unknown] {
				t.Errorf("%d rows marked node draining:\n%s", got, out)
			}
		})
	}
}

// TestRenderOnceDrainHostileNode: a node's name is the cluster's: it reaches
// the table and the JSON document sanitised.
func TestRenderOnceDrainHostileNode(t *testing.T) {
	cl := fixture.Drain()
	const hostile = "node-a\x1b[2J\x1b]8;;https://evil.example\x07"
	cl.NodeCordoned = map[string]bool{hostile: true}
	for _, p := range cl.Pods {
		if p.Spec.NodeName == "node-a" {
			p.Spec.NodeName = hostile
		}
	}
	for _, format := range []string{"table", "json"} {
		var b bytes.Buffer
		render.RenderOnce(&b, cl.Views(), render.OnceOptions{Format: format, Namespace: ns, Now: t0})
		if strings.Contains(b.String(), "\x1b") || strings.Contains(b.String(), `\u001b`) || strings.Contains(b.String(), "\x07") {
			t.Errorf("%s holds an escape sequence:\n%q", format, b.String())
		}
		if want := map[string]string{"table": "hold the drain of node-a", "json": `"node": "node-a`}[format]; !strings.Contains(b.String(), want) {
			t.Errorf("%s does not name the node:\n%s", format, b.String())
		}
	}
}
