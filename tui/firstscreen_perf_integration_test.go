//go:build integration && perf

package tui

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

const (
	firstScreenMembers = 1000
	firstScreenRounds  = 5
)

// programConfig is the REST config the program builds (kube.Options):
// protobuf, and its QPS and burst.
func programConfig(env *kubetest.Env) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst = kube.DefaultQPS, kube.DefaultBurst
	return cfg
}

// timeOnce is `--once -o json` in process: a new client, the four LISTs,
// Observe and the JSON.
func timeOnce(t *testing.T, cfg *rest.Config, ns string) time.Duration {
	t.Helper()
	start := time.Now()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := kube.ListPools(t.Context(), client, ns)
	if err != nil {
		t.Fatal(err)
	}
	views := engine.ObserveAll(snaps, time.Now())
	render.RenderOnce(io.Discard, views, render.OnceOptions{Format: "json", Namespace: ns, Context: "perf", Now: time.Now()})
	d := time.Since(start)
	if len(views) != 1 || len(views[0].Members) != firstScreenMembers {
		t.Fatalf("--once read %d pools", len(views))
	}
	return d
}

// firstScreenProbe is the dashboard's root model until its first complete
// screen: every cache synced, the members counted, "live".
type firstScreenProbe struct {
	m     *Model
	start time.Time
	took  *time.Duration
}

func (f firstScreenProbe) Init() tea.Cmd { return f.m.Init() }
func (f firstScreenProbe) View() string  { return f.m.View() }
func (f firstScreenProbe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := f.m.Update(msg)
	if f.m.feed.loaded && f.m.feed.health.synced && len(f.m.pools) == 1 && f.m.pools[0].Status.Observed == firstScreenMembers {
		conn, _ := f.m.feed.health.connState(f.m.now, f.m.feed.started, f.m.feed.loaded)
		if _ = f.m.View(); strings.HasPrefix(conn, render.GlyphLive) {
			*f.took = time.Since(f.start)
			return f, tea.Quit
		}
	}
	return f, cmd
}

// timeFirstScreen is the dashboard from its start (a new client, the
// informers, the permissions asked) to its first complete screen, in a
// Program without a terminal.
func timeFirstScreen(t *testing.T, cfg *rest.Config, ns string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := kube.NewWatcher(client, ns)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	m := newModel(ctx, Options{
		Context: "perf", Namespace: ns, Theme: themes.Dark(), Renderer: themes.NoColorRenderer(io.Discard),
		Now: time.Now, Data: w, Nodes: &kube.Nodes{Client: client}, Resolver: &resolver{events: &kube.Events{Client: client}, access: accessFor(client, ns)},
	})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	var took time.Duration
	prog := tea.NewProgram(firstScreenProbe{m: m, start: start, took: &took}, tea.WithContext(ctx), tea.WithInput(nil),
		tea.WithOutput(io.Discard), tea.WithoutSignalHandler(), tea.WithoutRenderer())
	if _, err := prog.Run(); err != nil {
		t.Fatalf("the dashboard did not reach its first complete screen: %v", err)
	}
	if took == 0 {
		t.Fatal("the dashboard stopped before its first complete screen")
	}
	return took
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestIntegrationPerfFirstScreen: issue 18, item 2. The dashboard's first
// complete screen on 1,000 members, against `--once -o json` on the same
// pool, alternately (which goes first alternates too), both in process.
// The figures are logged; the test asserts a generous margin (2x; the
// target is 1.3x) as the plane shares two cores.
func TestIntegrationPerfFirstScreen(t *testing.T) {
	env := kubetest.Require(t)
	cfg := programConfig(env)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng := &engine.Engine{Cluster: kube.NewCluster(client, env.Namespace), Namespace: env.Namespace, Now: time.Now}
	spec := engine.Spec{Image: "registry.example/desktop:1", CPU: "1m", Memory: "1Mi", Disk: "1Gi", Size: firstScreenMembers}
	spec.Default()
	if _, err := eng.Apply(t.Context(), "big", spec); err != nil {
		t.Fatalf("apply: %v", err)
	}
	env.WaitFor(t, 5*time.Minute, fmt.Sprintf("%d members with their Pod and PVC", firstScreenMembers), func() (bool, error) {
		snap, err := eng.Cluster.Snapshot(t.Context(), "big")
		if err != nil {
			return false, err
		}
		return len(snap.Pods) == firstScreenMembers && len(snap.PVCs) == firstScreenMembers, nil
	})
	timeOnce(t, cfg, env.Namespace) // warm-up of each
	timeFirstScreen(t, cfg, env.Namespace)
	var once, screen []time.Duration
	for i := range firstScreenRounds {
		if i%2 == 0 {
			once = append(once, timeOnce(t, cfg, env.Namespace))
			screen = append(screen, timeFirstScreen(t, cfg, env.Namespace))
		} else {
			screen = append(screen, timeFirstScreen(t, cfg, env.Namespace))
			once = append(once, timeOnce(t, cfg, env.Namespace))
		}
	}
	r := float64(median(screen)) / float64(median(once))
	t.Logf("first complete screen vs --once -o json on %d members, medians of %d: %v vs %v: %.2fx (target <= 1.30x); screen %v, once %v",
		firstScreenMembers, firstScreenRounds, median(screen).Round(time.Millisecond), median(once).Round(time.Millisecond), r, screen, once)
	if r > 2 {
		t.Errorf("the first complete screen took %.2fx the time of --once -o json (margin 2x; target 1.3x)", r)
	}
}
