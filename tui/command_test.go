package tui

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		line       string
		verb, name string
		err        string
	}{
		{line: "ns vdi-cad", verb: "ns", name: "vdi-cad"},
		{line: "  namespace   kiosk ", verb: "ns", name: "kiosk"},
		{line: "ns all", verb: "ns"},
		{line: "ns -A", verb: "ns"},
		{line: "ctx prod-eu", verb: "ctx", name: "prod-eu"},
		{line: "context  arn:aws:eks:eu-west-1:1:cluster/lab ", verb: "ctx", name: "arn:aws:eks:eu-west-1:1:cluster/lab"},
		{line: "ctx my context", verb: "ctx", name: "my context"}, // a kubeconfig name is free text
		{line: "ctx all", verb: "ctx"},
		{line: "ctx -A", verb: "ctx", name: "-A"}, // -A is the namespaces' flag; a context may be called so
		{line: "ns", err: "commands: ns NAME"},
		{line: "ctx ", err: "commands: ns NAME"},
		{line: "ns a b", err: "commands: ns NAME"},
		{line: "quit", err: "commands: ns NAME"},
		{line: "nsx vdi", err: "commands: ns NAME"},
		{line: "ns Bad_Name", err: `"Bad_Name" is not a namespace name`},
	} {
		got, err := parseCommand(tc.line)
		if got.verb != tc.verb || got.name != tc.name || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("parseCommand(%q) = %+v, %v; want %s %q, %q", tc.line, got, err, tc.verb, tc.name, tc.err)
		}
	}
}

func TestComplete(t *testing.T) {
	names := completionNames{
		namespaces: []string{"kiosk", "vdi-cad", "vdi-eng"},
		contexts:   []string{"prod-eu", "prod-us", "lab", "all-in-one"},
	}
	for _, tc := range []struct {
		line, want string
		matches    []string
	}{
		{line: "", want: "", matches: []string{"ctx", "ns"}},
		{line: "n", want: "ns ", matches: []string{"ns"}},
		{line: "c", want: "ctx ", matches: []string{"ctx"}},
		{line: "co", want: "ctx ", matches: []string{"ctx"}}, // context
		{line: "name", want: "ns ", matches: []string{"ns"}}, // namespace
		{line: "x", want: "x"},
		{line: "ns ", want: "ns ", matches: []string{"all", "kiosk", "vdi-cad", "vdi-eng"}},
		{line: "ns v", want: "ns vdi-", matches: []string{"vdi-cad", "vdi-eng"}},
		{line: "ns vdi-e", want: "ns vdi-eng", matches: []string{"vdi-eng"}},
		{line: "ns k", want: "ns kiosk", matches: []string{"kiosk"}},
		{line: "ns a", want: "ns all", matches: []string{"all"}},
		{line: "ns zz", want: "ns zz"},
		{line: "namespace  vdi-c", want: "namespace vdi-cad", matches: []string{"vdi-cad"}},
		{line: "ctx p", want: "ctx prod-", matches: []string{"prod-eu", "prod-us"}},
		{line: "ctx prod-u", want: "ctx prod-us", matches: []string{"prod-us"}},
		{line: "ctx al", want: "ctx all", matches: []string{"all", "all-in-one"}},
		{line: "ctx all-", want: "ctx all-in-one", matches: []string{"all-in-one"}},
		{line: "ctx vdi", want: "ctx vdi"}, // a namespace is no context
		{line: "frob x", want: "frob x"},
		{line: "  c", want: "  ctx ", matches: []string{"ctx"}},
	} {
		got, matches := complete(tc.line, names)
		if got != tc.want || !slices.Equal(matches, tc.matches) {
			t.Errorf("complete(%q) = %q, %q; want %q, %q", tc.line, got, matches, tc.want, tc.matches)
		}
	}
}

// fakeScoper serves the fleet fixture: every namespace, or one of them.
type fakeScoper struct {
	mu    sync.Mutex
	asked []string
	ctxs  []context.Context
	err   error
}

func (f *fakeScoper) Scope(ctx context.Context, ns string) (Scope, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, ns)
	if f.err != nil {
		return Scope{}, f.err
	}
	f.ctxs = append(f.ctxs, ctx)
	if ns == "" {
		return Scope{Namespace: "all", Fleet: true, Data: newFakeData(fixture.FleetSnapshots())}, nil
	}
	var snaps []engine.Snapshot
	for _, s := range fixture.FleetSnapshots() {
		if s.Namespace == ns {
			snaps = append(snaps, s)
		}
	}
	return Scope{Namespace: ns, Data: newFakeData(snaps)}, nil
}

// newScopedModel is the demo fixture's dashboard (namespace vdi) with a
// Scoper; stopped counts the calls of StopData.
func newScopedModel(t *testing.T, s Scoper) (*Model, *int) {
	t.Helper()
	data := newFakeData(fixture.Demo().Snapshots())
	stopped := 0
	m := newModel(context.Background(), Options{
		Context: "prod-eu", Namespace: ns, Theme: themes.Dark(), Renderer: themes.NoColorRenderer(io.Discard),
		Now: func() time.Time { return t0 }, Data: data, Scoper: s, StopData: func() { stopped++ }, Resolver: &resolver{actions: &fakeActions{}},
	})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(loadCmd(data, func() time.Time { return t0 })())
	m.Update(tickMsg(t0))
	return m, &stopped
}

// command types a command line and returns the Cmd of its enter.
func command(m *Model, line string) tea.Cmd {
	press(m, ":")
	typeText(m, line)
	return press(m, "enter")
}

// switchTo runs `:ns` to its end: the scope, then the first load.
func switchTo(t *testing.T, m *Model, line string) {
	t.Helper()
	_, cmd := m.Update(waitMsg[scopeMsg](t, command(m, line)))
	m.Update(waitMsg[dataMsg](t, cmd))
}

func TestCommandSwitchesNamespaces(t *testing.T) {
	sc := &fakeScoper{}
	m, stopped := newScopedModel(t, sc)
	press(m, "down", "enter") // the members of desk
	if !strings.Contains(header(m), "ns: "+ns) {
		t.Fatalf("header %q", header(m))
	}
	press(m, ":")
	if !m.command.open || !strings.HasPrefix(status(m), " :") || !strings.Contains(helpLine(m), "run") {
		t.Fatalf("the command line did not open: status %q, help %q", status(m), helpLine(m))
	}
	press(m, "esc")
	if m.command.open || m.screen != screenMembers {
		t.Fatal("esc did not close the command line alone")
	}

	switchTo(t, m, "ns all")
	if *stopped != 1 {
		t.Errorf("the first data source was stopped %d times, want 1", *stopped)
	}
	if !m.opts.Fleet || m.screen != screenPools || !strings.Contains(header(m), "ns: all") ||
		!strings.Contains(m.View(), "NAMESPACE") || !strings.Contains(m.View(), "vdi-cad   gpu") {
		t.Fatalf("after :ns all:\n%s", m.View())
	}
	if s := status(m); !strings.Contains(s, "showing namespaces: all") {
		t.Errorf("status %q", s)
	}
	// An answer from the replaced source is dropped.
	before := len(m.pools)
	m.Update(loadCmd(newFakeData(fixture.Demo().Snapshots()), func() time.Time { return t0 })())
	if len(m.pools) != before || !m.opts.Fleet {
		t.Fatalf("a stale load replaced the fleet's %d pools with %d", before, len(m.pools))
	}
	if _, cmd := m.Update(changedMsg{gen: 0}); cmd != nil {
		t.Error("a stale change signal scheduled a rebuild")
	}

	switchTo(t, m, "ns vdi-cad")
	if m.opts.Fleet || !strings.Contains(header(m), "ns: vdi-cad") || strings.Contains(m.View(), "NAMESPACE") || len(m.pools) != 2 {
		t.Fatalf("after :ns vdi-cad (%d pools):\n%s", len(m.pools), m.View())
	}
	sc.mu.Lock()
	first := sc.ctxs[0]
	sc.mu.Unlock()
	if first.Err() == nil {
		t.Error("the fleet's informers were not stopped by the next switch")
	}
	if got := strings.Join(sc.asked, ","); got != ",vdi-cad" {
		t.Errorf("scopes asked %q", got)
	}
}

func TestCommandErrors(t *testing.T) {
	sc := &fakeScoper{err: errors.New("this identity may not list pods in all namespaces; use -n NAMESPACE, or --namespaces a,b,c")}
	m, stopped := newScopedModel(t, sc)
	m.Update(waitMsg[scopeMsg](t, command(m, "ns all")))
	if s := status(m); !strings.Contains(s, "may not list pods in all namespaces") || m.opts.Fleet || *stopped != 0 || !m.feed.loaded {
		t.Fatalf("a refused switch: status %q, fleet %v, stopped %d", s, m.opts.Fleet, *stopped)
	}
	if cmd := command(m, "frobnicate"); cmd != nil || !strings.Contains(status(m), "commands: ns NAME") {
		t.Errorf("unknown command: status %q", status(m))
	}
	// Without a Scoper there is no command line.
	plain, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
	press(plain, ":")
	if plain.command.open {
		t.Error(": opened a command line without a Scoper")
	}
}

func TestCommandLineGolden(t *testing.T) {
	m, _ := newScopedModel(t, &fakeScoper{})
	press(m, "?")
	if !strings.Contains(m.View(), ":       command (ns, ctx; tab completes)") {
		t.Errorf("the help does not list the command line:\n%s", m.View())
	}
	press(m, "esc", ":")
	typeText(m, "ns all")
	got := m.View()
	checkScreen(t, got, 120, 40)
	golden(t, "command_line_120x40", got)
}
