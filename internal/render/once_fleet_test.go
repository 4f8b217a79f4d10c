package render_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

func TestRenderOnceFleet(t *testing.T) {
	views := engine.ObserveAll(fixture.FleetSnapshots(), t0)
	for _, tc := range []struct {
		name   string
		opts   render.OnceOptions
		golden string
		want   []string
		code   int
	}{
		{name: "table", opts: render.OnceOptions{Fleet: true, Context: "prod-eu", Now: t0}, golden: "once_fleet_table", code: render.ExitAttention},
		{name: "one pool in every namespace", opts: render.OnceOptions{Fleet: true, Pool: "desk", Now: t0},
			want: []string{"vdi-cad    desk", "vdi-eng    desk", "vdi-cad/desk (", "vdi-eng/desk ("}, code: render.ExitOK},
		{name: "no such pool", opts: render.OnceOptions{Fleet: true, Namespaces: []string{"vdi-eng", "kiosk"}, Pool: "gone", Now: t0},
			want: []string{"no pool named gone in namespaces vdi-eng, kiosk"}, code: render.ExitAttention},
		{name: "json", opts: render.OnceOptions{Fleet: true, Format: "json", Now: t0},
			want: []string{`"allNamespaces": true`, `"namespace": "vdi-cad",` + "\n" + `      "name": "desk"`, `"namespace": "kiosk",`}, code: render.ExitAttention},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if code := render.RenderOnce(&b, views, tc.opts); code != tc.code {
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
