package tui

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestRenderOnceTable(t *testing.T) {
	var b bytes.Buffer
	code := RenderOnce(&b, demoCluster().views(), OnceOptions{Namespace: ns, Context: "prod-eu", Now: t0})
	if code != ExitAttention {
		t.Errorf("exit %d, want %d (gpu is exhausted, broken and ghost have problems)", code, ExitAttention)
	}
	golden(t, "once_table", b.String())
}

func TestRenderOnceHealthyPool(t *testing.T) {
	var b bytes.Buffer
	if code := RenderOnce(&b, demoCluster().views(), OnceOptions{Namespace: ns, Pool: "desk", Now: t0}); code != ExitOK {
		t.Errorf("desk alone: exit %d, want 0", code)
	}
	if strings.Contains(b.String(), "sandboxd") || strings.Contains(b.String(), "kiosk") {
		t.Error("--pool desk printed other pools")
	}
	b.Reset()
	if code := RenderOnce(&b, demoCluster().views(), OnceOptions{Namespace: ns, Pool: "gpu", Now: t0}); code != ExitAttention {
		t.Errorf("gpu alone: exit %d, want 3", code)
	}
	b.Reset()
	if code := RenderOnce(&b, demoCluster().views(), OnceOptions{Namespace: ns, Pool: "nope", Now: t0}); code != ExitAttention || !strings.Contains(b.String(), "no pool named nope") {
		t.Errorf("unknown pool: exit %d, %q", code, b.String())
	}
	b.Reset()
	if code := RenderOnce(&b, nil, OnceOptions{Namespace: ns, Now: t0}); code != ExitOK || !strings.Contains(b.String(), "no pools") {
		t.Errorf("no pools: exit %d, %q", code, b.String())
	}
}

func TestRenderOnceJSON(t *testing.T) {
	var b bytes.Buffer
	code := RenderOnce(&b, demoCluster().views(), OnceOptions{Format: "json", Namespace: ns, Context: "prod-eu", Now: t0})
	if code != ExitAttention {
		t.Errorf("exit %d", code)
	}
	golden(t, "once_json", b.String())
	var r OnceReport
	if err := json.Unmarshal(b.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.SchemaVersion != OnceSchemaVersion || len(r.Pools) != 5 {
		t.Fatalf("schema %d, %d pools", r.SchemaVersion, len(r.Pools))
	}
	desk := r.Pools[1]
	if desk.Name != "desk" || desk.Free != 1 || desk.Status != "ok" || len(desk.Members) != 6 {
		t.Fatalf("desk: %+v", desk)
	}
	if m := desk.Members[1]; m.Name != "desk-2" || m.Holder != "bob@example.com" || !m.ClaimExpired {
		t.Errorf("desk-2: %+v", m)
	}
	if !desk.Members[0].Drift || !desk.Members[5].AboveSize {
		t.Error("markers lost")
	}
	if gpu := r.Pools[3]; !gpu.Exhausted || gpu.Status != "exhausted" || len(gpu.Errors) != 1 {
		t.Errorf("gpu: %+v", gpu)
	}
}

func TestRenderOnceHostile(t *testing.T) {
	for _, format := range []string{"table", "json"} {
		var b bytes.Buffer
		RenderOnce(&b, hostileCluster().views(), OnceOptions{Format: format, Namespace: ns, Now: t0})
		out := b.String()
		for _, bad := range []string{"\x1b", "\x07", "\r", "\u202e", "\b", "\x7f", "\x9b"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s output holds %q:\n%s", format, bad, out)
			}
		}
		if format == "table" {
			golden(t, "once_hostile_table", out)
		}
	}
}
