package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// wallOpts builds a dashboard of the fleet fixtures for the wall and the
// command line.
type wallOpts struct {
	width, height int
	snaps         []engine.Snapshot
	contexts      []engine.ContextHealth // set: several contexts
	names         []string               // Options.ContextNames
	readOnly      bool
}

func newWallModel(t *testing.T, o wallOpts) *Model {
	t.Helper()
	var data DataSource = newFakeData(o.snaps)
	opts := Options{
		Context: "prod-eu", Namespace: "all", Fleet: true, ReadOnly: o.readOnly, Theme: themes.Dark(),
		Renderer: themes.NoColorRenderer(io.Discard), Now: func() time.Time { return t0 },
	}
	if o.contexts != nil {
		data = &contextsData{fakeData: data.(*fakeData), contexts: o.contexts}
		opts.Context, opts.Namespace, opts.Contexts, opts.ContextNames = strings.Join(o.names, ","), "each context's", true, o.names
	}
	opts.Data = data
	if !o.readOnly {
		opts.Resolver = &resolver{actions: &fakeActions{}}
	}
	m := newModel(context.Background(), opts)
	m.Update(tea.WindowSizeMsg{Width: o.width, Height: o.height})
	m.Update(loadCmd(data, func() time.Time { return t0 })())
	m.Update(tickMsg(t0))
	return m
}

// contextNames are the contexts of contextHealths.
func contextNames() []string { return []string{"prod-eu", labContext, "edge", "dmz"} }

// manyPools is several contexts whose pools do not fit on the wall:
// prod-eu has 20 healthy pools in two namespaces, prod-us 9 with one
// exhausted and one with a failed member, lab 6 (its cluster stale), edge
// and dmz none (unreachable, forbidden).
func manyPools() ([]engine.Snapshot, []engine.ContextHealth) {
	var snaps []engine.Snapshot
	add := func(kctx, namespace string, pools int, shape func(c *cluster, pool string, i int, s engine.Spec)) {
		c := &cluster{NS: namespace}
		for i := 1; i <= pools; i++ {
			name := fmt.Sprintf("pool-%02d", i)
			s := fixture.Spec("ghcr.io/example/desktop:2", 3, nil)
			c.Pool(name, s, &engine.Status{UpdatedAt: fixture.PtrTime(t0.Add(-20 * time.Second))})
			shape(c, name, i, s)
		}
		for _, snap := range c.Snapshots() {
			snap.Context = kctx
			snaps = append(snaps, snap)
		}
	}
	healthy := func(c *cluster, pool string, _ int, s engine.Spec) {
		for n := 1; n <= 3; n++ {
			c.Member(pool, n, s)
		}
		c.Claim(pool, pool+"-1", "alice@example.com", t0.Add(-10*time.Minute))
	}
	add("prod-eu", "vdi", 10, healthy)
	add("prod-eu", "kiosk", 10, healthy)
	add("prod-us", "vdi", 9, func(c *cluster, pool string, i int, s engine.Spec) {
		healthy(c, pool, i, s)
		switch i {
		case 4: // exhausted: every member claimed
			c.Claim(pool, pool+"-2", "bob@example.com", t0.Add(-10*time.Minute))
			c.Claim(pool, pool+"-3", "carol@example.com", t0.Add(-10*time.Minute))
		case 7: // a failed member
			c.Pods[len(c.Pods)-1].Status.Phase = "Failed"
		}
	})
	add(labContext, "vdi-eng", 6, healthy)
	return snaps, []engine.ContextHealth{
		{Context: "prod-eu", Synced: true, LastSync: t0.Add(-2 * time.Second)},
		{Context: "prod-us", Synced: true, LastSync: t0.Add(-time.Second)},
		{Context: labContext, Synced: true, LastSync: t0.Add(-42 * time.Second), ErrAt: t0.Add(-5 * time.Second), Err: errors.New("connection refused")},
		{Context: "edge", ErrAt: t0.Add(-3 * time.Second), Err: errors.New("dial tcp 10.0.0.9:6443: connection refused")},
		{Context: "dmz", Forbidden: errors.New("this identity may not list pods in namespace vdi")},
	}
}

func manyNames() []string { return []string{"prod-eu", "prod-us", labContext, "edge", "dmz"} }

func TestFleetWallGolden(t *testing.T) {
	many, manyHealth := manyPools()
	for _, tc := range []struct {
		name string
		o    wallOpts
		keys []string
	}{
		{name: "fleet_wall_80x24", o: wallOpts{width: 80, height: 24, snaps: fixture.FleetSnapshots(), readOnly: true}},
		{name: "fleet_wall_200x60", o: wallOpts{width: 200, height: 60, snaps: fixture.FleetSnapshots(), readOnly: true}},
		{name: "contexts_wall_80x24", o: wallOpts{width: 80, height: 24, snaps: contextSnapshots(), contexts: contextHealths(), names: contextNames(), readOnly: true}},
		{name: "contexts_wall_200x60", o: wallOpts{width: 200, height: 60, snaps: contextSnapshots(), contexts: contextHealths(), names: contextNames(), readOnly: true}},
		{name: "contexts_wall_many_80x24", o: wallOpts{width: 80, height: 24, snaps: many, contexts: manyHealth, names: manyNames(), readOnly: true}},
		{name: "contexts_wall_many_200x60", o: wallOpts{width: 200, height: 60, snaps: many, contexts: manyHealth, names: manyNames(), readOnly: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newWallModel(t, tc.o)
			press(m, tc.keys...)
			got := m.View()
			checkScreen(t, got, tc.o.width, tc.o.height)
			golden(t, tc.name, got)
		})
	}
}

// tileTitles renders the fleet's tiles at capacity and returns their
// titles in order.
func tileTitles(m *Model, capacity int) ([]string, string) {
	ctx := m.viewCtx()
	tiles, more := fleetTiles(ctx, false, capacity)
	var out []string
	for _, tl := range tiles {
		top := tl(60)[0]
		title, _, _ := strings.Cut(strings.TrimPrefix(top, "┌ "), " ─")
		out = append(out, title)
	}
	return out, more
}

func TestPoolRank(t *testing.T) {
	live := &contextState{word: render.GlyphLive + " live", level: levelOK}
	stale := &contextState{word: render.GlyphWarn + " stale 42s", level: levelWarn}
	base := func(mut func(v *engine.PoolView)) *engine.PoolView {
		v := &engine.PoolView{Name: "p", Defined: true, Spec: engine.Spec{Size: 4}, Size: 4}
		v.Status.Free, v.Status.Ready = 3, 4
		if mut != nil {
			mut(v)
		}
		return v
	}
	for _, tc := range []struct {
		name string
		v    *engine.PoolView
		cs   *contextState
		want int
	}{
		{"healthy", base(nil), live, rankRest},
		{"healthy, no cluster state", base(nil), nil, rankRest},
		{"empty pool", base(func(v *engine.PoolView) { v.Spec.Size, v.Size, v.Status.Free = 0, 0, 0 }), nil, rankRest},
		{"exhausted", base(func(v *engine.PoolView) { v.Status.Free, v.Status.Exhausted = 0, true }), live, rankExhausted},
		{"exhausted in a stale cluster", base(func(v *engine.PoolView) { v.Status.Exhausted = true }), stale, rankExhausted},
		{"exhausted with a problem", base(func(v *engine.PoolView) { v.Status.Exhausted, v.Problems = true, []string{"x"} }), nil, rankExhausted},
		{"problem", base(func(v *engine.PoolView) { v.Problems = []string{"spec: invalid"} }), nil, rankTrouble},
		{"no definition", base(func(v *engine.PoolView) { v.Defined = false }), nil, rankTrouble},
		{"reconcile errors", base(func(v *engine.PoolView) { v.Recorded.Errors = []string{"create p-4: forbidden"} }), nil, rankTrouble},
		{"low", base(func(v *engine.PoolView) { v.Status.Free = 1; v.Spec.Size, v.Size = 20, 20 }), nil, rankTrouble},
		{"elastic, exhausted below its ceiling (growing)", base(func(v *engine.PoolView) {
			v.Spec.MinSize, v.Spec.MaxSize, v.Size, v.Status.Free, v.Status.Exhausted = 1, 40, 7, 0, true
		}), live, rankTrouble},
		{"elastic, exhausted at its ceiling", base(func(v *engine.PoolView) {
			v.Spec.MinSize, v.Spec.MaxSize, v.Size, v.Status.Free, v.Status.Exhausted = 1, 40, 40, 0, true
		}), live, rankExhausted},
		{"unschedulable member", base(func(v *engine.PoolView) { v.Status.Unschedulable = 1 }), nil, rankTrouble},
		{"failed member", base(func(v *engine.PoolView) { v.Status.Failed = 1 }), nil, rankTrouble},
		{"healthy in a stale cluster", base(nil), stale, rankTrouble},
	} {
		if got := poolRank(tc.v, tc.cs); got != tc.want {
			word, _ := tileStatus(tc.v)
			t.Errorf("%s (%s): rank %d, want %d", tc.name, word, got, tc.want)
		}
	}
}

// The fleet's tiles: exhausted first, then in trouble, then the rest, each
// in the table's order; past the capacity, one tile per cluster, worst
// first, every cluster reported (with pools or none).
func TestFleetTilesOrder(t *testing.T) {
	m := newWallModel(t, wallOpts{width: 80, height: 24, snaps: contextSnapshots(), contexts: contextHealths(), names: contextNames(), readOnly: true})
	for _, tc := range []struct {
		capacity int
		want     []string
		more     string
	}{
		// gpu exhausted; the lab's desk in trouble (its cluster is stale);
		// kiosk and prod-eu's desk are well, in the table's order.
		{capacity: 4, want: []string{"prod-eu/vdi-cad/gpu", labContext + "/vdi-eng/desk", "prod-eu/kiosk/kiosk", "prod-eu/vdi-cad/desk"}, more: "pools (tab shows the table)"},
		// prod-eu holds the exhausted gpu; the lab is stale, edge
		// unreachable, dmz forbidden: in trouble, in the order given.
		{capacity: 3, want: []string{"prod-eu", labContext, "edge", "dmz"}, more: "contexts"},
	} {
		got, more := tileTitles(m, tc.capacity)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || more != tc.more {
			t.Errorf("capacity %d: tiles %q (%s), want %q (%s)", tc.capacity, got, more, tc.want, tc.more)
		}
	}

	// The fleet of one context falls back to one tile per namespace.
	fm := newWallModel(t, wallOpts{width: 80, height: 24, snaps: fixture.FleetSnapshots(), readOnly: true})
	got, more := tileTitles(fm, 2)
	if want := []string{"vdi-cad", "kiosk", "vdi-eng"}; strings.Join(got, "|") != strings.Join(want, "|") || more != "namespaces" {
		t.Errorf("one cluster: tiles %q (%s), want %q per namespace", got, more, want)
	}

	many, health := manyPools()
	mm := newWallModel(t, wallOpts{width: 80, height: 24, snaps: many, contexts: health, names: manyNames(), readOnly: true})
	got, _ = tileTitles(mm, 100)
	if len(got) != 35 || got[0] != "prod-us/vdi/pool-04" || got[1] != "prod-us/vdi/pool-07" || !strings.HasPrefix(got[2], labContext+"/") {
		t.Errorf("35 pools: %d tiles, first %q", len(got), got[:min(3, len(got))])
	}
}

// The wall of several contexts shows the cluster tiles when the pools
// do not fit, with every cluster's state.
func TestFleetWallFallsBackToClusters(t *testing.T) {
	many, health := manyPools()
	for _, size := range [][2]int{{80, 24}, {200, 60}} {
		m := newWallModel(t, wallOpts{width: size[0], height: size[1], snaps: many, contexts: health, names: manyNames(), readOnly: true})
		s := m.View()
		for _, want := range []string{"┌ prod-us ─", "1 EXHAUSTED", "STALE", "UNREACHABLE", "FORBIDDEN", "┌ prod-eu ─", "contexts: prod-eu ● live"} {
			if !strings.Contains(s, want) {
				t.Errorf("%dx%d: no %q on the wall:\n%s", size[0], size[1], want, s)
			}
		}
		if strings.Contains(s, "pool-01 ─") {
			t.Errorf("%dx%d: pool tiles beside cluster tiles:\n%s", size[0], size[1], s)
		}
	}
}

// shownKeys are the keys of the pools shown.
func shownKeys(m *Model) string {
	var out []string
	for i := range m.pools {
		out = append(out, poolTitle(m.opts.Fleet, &m.pools[i]))
	}
	return strings.Join(out, " ")
}

// With several contexts `:ctx` and `:ns` narrow what is shown, combine,
// and a name that is not watched (or seen) is refused on the command line
// with nothing changed.
func TestContextsCommandNarrows(t *testing.T) {
	m := newWallModel(t, wallOpts{width: 120, height: 40, snaps: contextSnapshots(), contexts: contextHealths(), names: contextNames()})
	all := shownKeys(m)
	lab := labContext + "/vdi-eng/desk"
	for _, tc := range []struct {
		line   string
		pools  string // "" with err: unchanged
		header string
		err    string
	}{
		{line: "ctx prod-eu", pools: "prod-eu/kiosk/kiosk prod-eu/vdi-cad/desk prod-eu/vdi-cad/gpu", header: "ctx: prod-eu  ns: each context's"},
		{line: "ns vdi-cad", pools: "prod-eu/vdi-cad/desk prod-eu/vdi-cad/gpu", header: "ctx: prod-eu  ns: vdi-cad"},
		{line: "ctx nope", err: `context "nope" is not watched here (watched: prod-eu, ` + labContext + `, edge, dmz)`},
		{line: "ns nope", err: `no pools seen in namespace "nope" (seen: kiosk, vdi-cad, vdi-eng)`},
		{line: "ns Bad_Name", err: `"Bad_Name" is not a namespace name`},
		{line: "ctx", err: "commands: ns NAME, ns all, ctx NAME, ctx all"},
		{line: "ctx edge", pools: "", header: "ctx: edge  ns: vdi-cad"}, // watched, no pools
		{line: "ctx all", pools: "prod-eu/vdi-cad/desk prod-eu/vdi-cad/gpu", header: "ctx: all (4)  ns: vdi-cad"},
		{line: "ns all", pools: all, header: "ns: each context's"},
		{line: "context " + labContext, pools: lab, header: "ctx: " + labContext},
		{line: "namespace vdi-eng", pools: lab, header: "ns: vdi-eng"},
		{line: "ns -A", pools: lab, header: "ns: each context's"},
	} {
		before := shownKeys(m)
		cmd := command(m, tc.line)
		if cmd != nil {
			t.Errorf("%q returned a Cmd: narrowing reads nothing", tc.line)
		}
		if tc.err != "" {
			if !m.command.open || !strings.Contains(status(m), tc.err) || shownKeys(m) != before {
				t.Errorf("%q: open %v, status %q, pools %q (before %q); want the error %q and nothing changed",
					tc.line, m.command.open, status(m), shownKeys(m), before, tc.err)
			}
			press(m, "esc")
			continue
		}
		if m.command.open || shownKeys(m) != tc.pools || !strings.Contains(header(m), tc.header) {
			t.Errorf("%q: open %v, pools %q, header %q; want %q, %q", tc.line, m.command.open, shownKeys(m), header(m), tc.pools, tc.header)
		}
	}

	// A screen about a pool no longer shown goes back to the pools.
	command(m, "ctx all")
	command(m, "ns all")
	press(m, "end", "enter") // the lab's desk
	if m.screen != screenMembers || m.title(m.members.pool) != lab {
		t.Fatalf("screen %v, pool %q", m.screen, m.members.pool)
	}
	command(m, "ctx prod-eu")
	if m.screen != screenPools || strings.Contains(shownKeys(m), lab) {
		t.Errorf("after :ctx prod-eu on the lab's desk: screen %v, pools %q", m.screen, shownKeys(m))
	}
	// A new snapshot stays narrowed.
	m.Update(loadCmd(m.opts.Data, func() time.Time { return t0 })())
	if got := shownKeys(m); got != "prod-eu/kiosk/kiosk prod-eu/vdi-cad/desk prod-eu/vdi-cad/gpu" {
		t.Errorf("after a new snapshot: %q", got)
	}
}

// With one cluster, :ctx knows the context it watches, and no other.
func TestCommandContextOfOneCluster(t *testing.T) {
	m, _ := newScopedModel(t, &fakeScoper{})
	if cmd := command(m, "ctx prod-eu"); cmd != nil || m.command.open || !strings.Contains(status(m), "showing context prod-eu, the only one watched") {
		t.Errorf(":ctx prod-eu: open %v, status %q", m.command.open, status(m))
	}
	command(m, "ctx lab")
	if !m.command.open || !strings.Contains(status(m), `context "lab" is not watched here (watched: prod-eu); start with --context a,b,c or --all-contexts`) {
		t.Errorf(":ctx lab: open %v, status %q", m.command.open, status(m))
	}
}

// Tab completes the command and the names; the namespaces seen stay
// known after a switch to one of them.
func TestCommandCompletion(t *testing.T) {
	m := newWallModel(t, wallOpts{width: 120, height: 40, snaps: contextSnapshots(), contexts: contextHealths(), names: contextNames()})
	for _, tc := range []struct {
		typed, want, hint string
	}{
		{typed: "c", want: "ctx "},
		{typed: "ctx a", want: "ctx a", hint: "all  " + labContext},
		{typed: "ctx ar", want: "ctx " + labContext},
		{typed: "ctx e", want: "ctx edge"},
		{typed: "ns v", want: "ns vdi-", hint: "vdi-cad  vdi-eng"},
		{typed: "ns x", want: "ns x", hint: "no match"},
	} {
		press(m, ":")
		typeText(m, tc.typed)
		press(m, "tab")
		if got := m.command.input.Value(); got != tc.want || !strings.Contains(status(m), tc.hint) {
			t.Errorf("%q + tab: %q, status %q; want %q, hint %q", tc.typed, got, status(m), tc.want, tc.hint)
		}
		press(m, "esc")
	}

	s, _ := newScopedModel(t, &fakeScoper{})
	switchTo(t, s, "ns all")
	switchTo(t, s, "ns vdi-cad")
	press(s, ":")
	typeText(s, "ns k")
	press(s, "tab")
	if got := s.command.input.Value(); got != "ns kiosk" {
		t.Errorf("after :ns all and :ns vdi-cad, ns k + tab = %q, want the kiosk namespace seen before", got)
	}
}

func TestFleetCommandGolden(t *testing.T) {
	for _, tc := range []struct {
		name          string
		width, height int
		readOnly      bool
		keys          []string
		typed         string
	}{
		{name: "contexts_narrowed_80x24", width: 80, height: 24},
		{name: "contexts_command_complete_80x24", width: 80, height: 24, typed: "ns v", keys: []string{"tab"}},
		{name: "contexts_wall_command_80x24", width: 80, height: 24, readOnly: true, typed: "ctx ", keys: []string{"tab"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newWallModel(t, wallOpts{width: tc.width, height: tc.height, snaps: contextSnapshots(), contexts: contextHealths(), names: contextNames(), readOnly: tc.readOnly})
			if tc.typed == "" {
				command(m, "ctx prod-eu")
				command(m, "ns vdi-cad")
			} else {
				press(m, ":")
				typeText(m, tc.typed)
			}
			press(m, tc.keys...)
			got := m.View()
			checkScreen(t, got, tc.width, tc.height)
			golden(t, tc.name, got)
		})
	}
}

// Context names are kubeconfig text: escaped on the wall's tiles, in NEEDS
// ATTENTION, in the completion and in the command line's errors.
func TestFleetHostileContextNames(t *testing.T) {
	evil := "evil\x1b]0;pwned\x07\x1b[31m"
	snaps := contextSnapshots()
	for i := range snaps {
		if snaps[i].Context == "prod-eu" {
			snaps[i].Context = evil
		}
	}
	health := contextHealths()
	health[0].Context = evil
	health[3].Forbidden = errors.New("forbidden \x1b[2J wiped")
	names := []string{evil, labContext, "edge", "dmz"}
	m := newWallModel(t, wallOpts{width: 120, height: 40, snaps: snaps, contexts: health, names: names, readOnly: true})
	screens := []string{m.View()}
	press(m, ":")
	typeText(m, "ctx ")
	press(m, "tab")
	screens = append(screens, m.View())
	press(m, "esc", ":")
	typeText(m, "ctx \x1b[31mred") // the input drops the ESC itself
	press(m, "enter")
	screens = append(screens, m.View())
	press(m, "esc")
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24}) // the cluster tiles at a small size
	if got, _ := tileTitles(m, 1); got[0] != sanitize.Sanitize(evil) {
		t.Errorf("cluster tiles %q", got)
	}
	for _, s := range screens {
		if strings.ContainsAny(s, "\x1b\x07") {
			t.Fatalf("an escape sequence reached the screen: %q", s)
		}
	}
	if !strings.Contains(screens[0], "┌ evil/vdi-cad/gpu") || !strings.Contains(screens[1], "all  arn:aws:eks:eu-west-1:1:cluster/lab  dmz  edge  evil") ||
		!strings.Contains(screens[2], `context "[31mred" is not watched here (watched: evil, arn`) {
		t.Errorf("the evil context is not shown:\n%s\n%s\n%s", screens[0], screens[1], screens[2])
	}
}
