package render_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

func TestRenderOnceTable(t *testing.T) {
	var b bytes.Buffer
	code := render.RenderOnce(&b, fixture.Demo().Views(), render.OnceOptions{Namespace: ns, Context: "prod-eu", Now: t0})
	if code != render.ExitAttention {
		t.Errorf("exit %d, want %d (gpu is exhausted, broken and ghost have problems)", code, render.ExitAttention)
	}
	golden(t, "once_table", b.String())
}

func TestRenderOnceHealthyPool(t *testing.T) {
	var b bytes.Buffer
	if code := render.RenderOnce(&b, fixture.Demo().Views(), render.OnceOptions{Namespace: ns, Pool: "desk", Now: t0}); code != render.ExitOK {
		t.Errorf("desk alone: exit %d, want 0", code)
	}
	if strings.Contains(b.String(), "sandboxd") || strings.Contains(b.String(), "kiosk") {
		t.Error("--pool desk printed other pools")
	}
	b.Reset()
	if code := render.RenderOnce(&b, fixture.Demo().Views(), render.OnceOptions{Namespace: ns, Pool: "gpu", Now: t0}); code != render.ExitAttention {
		t.Errorf("gpu alone: exit %d, want 3", code)
	}
	b.Reset()
	if code := render.RenderOnce(&b, fixture.Demo().Views(), render.OnceOptions{Namespace: ns, Pool: "nope", Now: t0}); code != render.ExitAttention || !strings.Contains(b.String(), "no pool named nope") {
		t.Errorf("unknown pool: exit %d, %q", code, b.String())
	}
	b.Reset()
	if code := render.RenderOnce(&b, nil, render.OnceOptions{Namespace: ns, Now: t0}); code != render.ExitOK || !strings.Contains(b.String(), "no pools") {
		t.Errorf("no pools: exit %d, %q", code, b.String())
	}
}

func TestRenderOnceJSON(t *testing.T) {
	var b bytes.Buffer
	code := render.RenderOnce(&b, fixture.Demo().Views(), render.OnceOptions{Format: "json", Namespace: ns, Context: "prod-eu", Now: t0})
	if code != render.ExitAttention {
		t.Errorf("exit %d", code)
	}
	golden(t, "once_json", b.String())
	var r render.OnceReport
	if err := json.Unmarshal(b.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.SchemaVersion != render.OnceSchemaVersion || len(r.Pools) != 5 {
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
		render.RenderOnce(&b, fixture.Hostile().Views(), render.OnceOptions{Format: format, Namespace: ns, Now: t0})
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

// schedulerMessage is kube-scheduler's message for a Pod that fits no node:
// the node count with every reason, then the preemption verdict.
const schedulerMessage = "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) had untolerated taint {virtual-kubelet.io/provider: sandboxd}. " +
	"preemption: 0/4 nodes are available: 2 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."

// unschedulableCluster is one pool with an Unschedulable member, a crashing
// one and a drifted Ready one: a diagnosis with a scheduler's message, with a
// kubelet's, and with none.
func unschedulableCluster() *fixture.Cluster {
	c := &fixture.Cluster{}
	s := fixture.Spec("ghcr.io/example/desktop:2", 3, nil)
	old := fixture.Spec("ghcr.io/example/desktop:1", 3, nil)
	c.Pool("desk", s, &engine.Status{UpdatedAt: fixture.PtrTime(t0.Add(-12 * time.Second))})
	c.Member("desk", 1, old, fixture.Age(3*time.Hour))
	c.Member("desk", 2, s, fixture.Unschedulable(schedulerMessage))
	c.Member("desk", 3, s, fixture.OnNode("node-b"), fixture.CrashLoop("back-off 5m0s restarting failed container=desktop pod=desk-3. Check the container's log"))
	return c
}

func TestRenderOnceShowsSchedulerMessage(t *testing.T) {
	firstSentence := "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) had untolerated taint {virtual-kubelet.io/provider: sandboxd}."
	cases := []struct {
		format, golden string
		want           map[string][2]string // member -> DIAGNOSIS, MESSAGE
	}{
		{"table", "once_unschedulable_table", map[string][2]string{
			"desk-1": {"drifted from the pool definition", ""},
			"desk-2": {"not enough capacity: cpu", firstSentence},
			"desk-3": {"the desktop container keeps crashing", "CrashLoopBackOff: back-off 5m0s restarting failed container=desktop pod=desk-3."},
		}},
		{"wide", "once_unschedulable_wide", map[string][2]string{
			"desk-1": {"drifted from the pool definition", ""},
			"desk-2": {"not enough capacity: cpu", schedulerMessage},
			"desk-3": {"the desktop container keeps crashing", "CrashLoopBackOff: back-off 5m0s restarting failed container=desktop pod=desk-3. Check the container's log"},
		}},
	}
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			var b bytes.Buffer
			render.RenderOnce(&b, unschedulableCluster().Views(), render.OnceOptions{Format: c.format, Namespace: ns, Now: t0})
			out := b.String()
			golden(t, c.golden, out)
			for member, want := range c.want {
				if got := kubetest.TableCell(t, out, member, "DIAGNOSIS"); got != want[0] {
					t.Errorf("%s DIAGNOSIS %q, want %q", member, got, want[0])
				}
				if got := kubetest.TableCell(t, out, member, "MESSAGE"); got != want[1] {
					t.Errorf("%s MESSAGE %q, want %q", member, got, want[1])
				}
			}
		})
	}
}

func TestRenderOnceJSONCarriesMessageAndDiagnosis(t *testing.T) {
	var b bytes.Buffer
	render.RenderOnce(&b, unschedulableCluster().Views(), render.OnceOptions{Format: "json", Namespace: ns, Now: t0})
	var r render.OnceReport
	if err := json.Unmarshal(b.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	m := r.Pools[0].Members[1]
	if m.Name != "desk-2" || m.State != "Unschedulable" {
		t.Fatalf("member 1: %+v", m)
	}
	if m.Message != schedulerMessage {
		t.Errorf("message %q, want the scheduler's whole message %q", m.Message, schedulerMessage)
	}
	if m.Diagnosis == nil || m.Diagnosis.Reason != "not enough capacity: cpu" || m.Diagnosis.Fix == "" {
		t.Errorf("diagnosis %+v, want its own reason and fix", m.Diagnosis)
	}
}

// A rolling pool and a halted one: the table's STATUS and rollout line, the
// JSON document's rollout, and the attention exit code of the halt.
func TestRenderOnceRollout(t *testing.T) {
	views := fixture.Rollout().Views()
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			code := render.RenderOnce(&b, views, render.OnceOptions{Format: format, Namespace: ns, Now: t0})
			if code != render.ExitAttention {
				t.Errorf("exit %d, want %d (a halted rollout needs attention)", code, render.ExitAttention)
			}
			out := b.String()
			golden(t, "once_rollout_"+format, out)
			if strings.Contains(out, "\x1b") {
				t.Error("an escape sequence reached the output")
			}
			if format == "table" {
				lines := strings.Split(out, "\n")
				for i, want := range []string{"desk  standard  8     6      1        4     0        4      0       rolling 4/8 ", "lab   standard  4     2      0        0     0        2      2       rollout halted "} {
					if !strings.HasPrefix(lines[i+1], want) {
						t.Errorf("pool row %q, want it to start %q", lines[i+1], want)
					}
				}
				for _, want := range []string{
					"rollout: rolling to ghcr.io/example/desktop:2: 4 of 8 updated, 2 in flight, wave 2 (3m0s a wave), at most 2 out of service, 1 claimed on the old image",
					"rollout: rollout of registry.invalid/lab:9 halted: 2 of 2 new members failed",
					"; resume: ctpool-tui rollout resume lab, or apply an image",
				} {
					if !strings.Contains(out, want) {
						t.Errorf("the table does not say %q", want)
					}
				}
				return
			}
			var r render.OnceReport
			if err := json.Unmarshal(b.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			got := map[string]*render.OnceRollout{}
			for _, p := range r.Pools {
				got[p.Name] = p.Rollout
			}
			if d := got["desk"]; d == nil || d.State != render.RolloutRolling || d.Updated != 4 || d.Old != 3 || d.OldClaimed != 1 || d.InFlight != 2 || d.Budget != 2 || d.Waves != 2 {
				t.Errorf("desk rollout %+v", d)
			}
			if l := got["lab"]; l == nil || l.State != render.RolloutHalted || !strings.Contains(l.Halted, "ImagePullBackOff") || l.Old != 2 {
				t.Errorf("lab rollout %+v", l)
			}
		})
	}
	// Without the halt, the rolling pool alone exits 0.
	var b bytes.Buffer
	if code := render.RenderOnce(&b, views[:1], render.OnceOptions{Namespace: ns, Now: t0}); code != render.ExitOK || views[0].Name != "desk" {
		t.Errorf("a rolling pool alone: exit %d (%s)", code, views[0].Name)
	}
}
