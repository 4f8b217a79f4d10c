package render_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// TestRenderOnceNodeDown: a member on a down node carries the node's
// evidence, sanitised, as nodeDown in the JSON document (absent for the
// others) and as the node down mark, diagnosis and message in the table;
// with the nodes unknown nothing says so.
func TestRenderOnceNodeDown(t *testing.T) {
	const evidence = "Ready=Unknown since 2026-03-02T08:57:30Z: Kubelet stopped posting node status.; node.kubernetes.io/unreachable:NoSchedule"
	cases := []struct {
		name    string
		unknown bool // the nodes cannot be read
		want    map[string]string
	}{
		{"node-b down", false, map[string]string{"desk-1": evidence, "desk-3": evidence}},
		{"nodes unknown", true, map[string]string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := fixture.NodeDown()
			if c.unknown {
				cl.NodeDown = nil
			}
			var js bytes.Buffer
			render.RenderOnce(&js, cl.Views(), render.OnceOptions{Format: "json", Namespace: ns, Now: t0})
			if strings.Contains(js.String(), "\x1b") || strings.Contains(js.String(), `\u001b`) {
				t.Errorf("the JSON document holds an escape sequence:\n%s", js.String())
			}
			var raw struct {
				Pools []struct {
					Members []map[string]any `json:"members"`
				} `json:"pools"`
			}
			if err := json.Unmarshal(js.Bytes(), &raw); err != nil {
				t.Fatal(err)
			}
			for _, m := range raw.Pools[0].Members {
				name := m["name"].(string)
				got, has := m["nodeDown"]
				if want := c.want[name]; want == "" && has || want != "" && got != want {
					t.Errorf("%s: nodeDown = %v (present %v), want %q", name, got, has, want)
				}
			}
			var tb bytes.Buffer
			render.RenderOnce(&tb, cl.Views(), render.OnceOptions{Namespace: ns, Now: t0})
			for _, line := range strings.Split(tb.String(), "\n") {
				f := strings.Fields(line)
				if len(f) == 0 || !strings.HasPrefix(f[0], "desk-") {
					continue
				}
				down := c.want[f[0]] != ""
				if got := strings.Contains(line, "node down  ") && strings.Contains(line, "node node-b is down"); got != down {
					t.Errorf("table row %q: node down shown %v, want %v", line, got, down)
				}
			}
		})
	}
}
