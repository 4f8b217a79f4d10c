package render_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// TestRenderOnceTrend: --once reports each pool's effective size, an
// elastic pool's bounds and the reconciler's reason (sanitised), and the
// trend (the filled recorded history, the claim rates, the forecast); an
// elastic pool exhausted at its ceiling needs attention, one exhausted below
// it (growing) does not.
func TestRenderOnceTrend(t *testing.T) {
	views := fixture.Trend().Views()
	var b bytes.Buffer
	code := render.RenderOnce(&b, views, render.OnceOptions{Format: "json", Namespace: ns, Context: "prod-eu", Now: t0})
	if code != render.ExitAttention {
		t.Errorf("exit %d, want %d (render is exhausted at its ceiling)", code, render.ExitAttention)
	}
	golden(t, "once_trend_json", b.String())
	if strings.Contains(b.String(), `\u001b`) || strings.Contains(b.String(), "[2J") {
		t.Error("the reconciler's reason was not sanitised")
	}
	var r render.OnceReport
	if err := json.Unmarshal(b.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	pools := map[string]render.OncePool{}
	for _, p := range r.Pools {
		pools[p.Name] = p
	}
	desk, lab, rnd := pools["desk"], pools["lab"], pools["render"]
	if desk.Elastic != nil || desk.Trend == nil || len(desk.Trend.Samples) != 36 {
		t.Fatalf("desk: elastic %+v, trend %+v", desk.Elastic, desk.Trend)
	}
	if f := desk.Trend.Forecast; !f.OK || f.ToEmptySeconds == nil || *f.ToEmptySeconds != 900 || f.ToCeilingSeconds != nil {
		t.Errorf("desk's forecast %+v, want ok, 900 s to empty, no ceiling", f)
	}
	if desk.Trend.ClaimsPerHour <= 0 || desk.Trend.ReleasesPerHour != 0 {
		t.Errorf("desk's rates %v, %v", desk.Trend.ClaimsPerHour, desk.Trend.ReleasesPerHour)
	}
	if lab.Size != 4 || lab.Status != "growing" || lab.Elastic == nil || lab.Elastic.AtCeiling || lab.Elastic.MaxSize != 8 ||
		lab.Elastic.Power != "stopped" || lab.Elastic.Settle != "10m0s" || lab.Elastic.ChangedAt == nil {
		t.Errorf("lab: size %d, status %s, elastic %+v", lab.Size, lab.Status, lab.Elastic)
	}
	if rnd.Status != "exhausted" || rnd.Elastic == nil || !rnd.Elastic.AtCeiling || rnd.Elastic.Reason != "grew from 2 to 3: 0 free of spare 1" {
		t.Errorf("render: status %s, elastic %+v", rnd.Status, rnd.Elastic)
	}
	if f := rnd.Trend.Forecast; f.ToCeilingSeconds == nil || *f.ToCeilingSeconds != 0 || f.ToEmptySeconds == nil || *f.ToEmptySeconds != 0 {
		t.Errorf("render's forecast %+v, want 0 s to empty and to the ceiling", f)
	}

	for _, tc := range []struct {
		pool string
		want int
	}{{"lab", render.ExitOK}, {"render", render.ExitAttention}, {"desk", render.ExitOK}} {
		if code := render.RenderOnce(&bytes.Buffer{}, views, render.OnceOptions{Namespace: ns, Pool: tc.pool, Now: t0}); code != tc.want {
			t.Errorf("--pool %s: exit %d, want %d", tc.pool, code, tc.want)
		}
	}
}

func TestRenderOnceTrendTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ascii bool
	}{{"once_trend_table", false}, {"once_trend_ascii_table", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			render.RenderOnce(&b, fixture.Trend().Views(), render.OnceOptions{Namespace: ns, Context: "prod-eu", Now: t0, ASCII: tc.ascii})
			out := b.String()
			golden(t, tc.name, out)
			if !strings.Contains(out, "trend: free, last 6 h") || !strings.Contains(out, "exhausted (growing, max 8)") {
				t.Errorf("no trend or elastic line:\n%s", out)
			}
			if strings.ContainsRune(out, '\x1b') {
				t.Error("escape in the table")
			}
			if tc.ascii && strings.ContainsAny(out, "▁▂▃▄▅▆▇█") {
				t.Error("block glyphs in the ASCII table")
			}
		})
	}
}
