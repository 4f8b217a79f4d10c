package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// contextsData is the fleet fixture spread over clusters: kiosk and vdi-cad
// in context prod-eu, vdi-eng in context "arn:aws:eks:eu-west-1:1:cluster/lab"
// (a context name with a "/"), with each cluster's health.
type contextsData struct {
	*fakeData
	contexts []engine.ContextHealth
}

func (c *contextsData) Health() []engine.ContextHealth { return c.contexts }

const labContext = "arn:aws:eks:eu-west-1:1:cluster/lab"

func contextSnapshots() []engine.Snapshot {
	snaps := fixture.FleetSnapshots()
	for i := range snaps {
		kctx := "prod-eu"
		if snaps[i].Namespace == "vdi-eng" {
			kctx = labContext
		}
		snaps[i].Context = kctx
	}
	return snaps
}

// contextHealths: prod-eu live, lab stale for 42s, edge unreachable, dmz
// forbidden.
func contextHealths() []engine.ContextHealth {
	return []engine.ContextHealth{
		{Context: "prod-eu", Synced: true, LastSync: t0.Add(-2 * time.Second)},
		{Context: labContext, Synced: true, LastSync: t0.Add(-42 * time.Second), ErrAt: t0.Add(-5 * time.Second), Err: errors.New("connection refused")},
		{Context: "edge", ErrAt: t0.Add(-3 * time.Second), Err: errors.New("dial tcp 10.0.0.9:6443: connection refused")},
		{Context: "dmz", Forbidden: errors.New("this identity may not list pods in namespace vdi")},
	}
}

func newClusterModel(t *testing.T, width, height int, acts fleetActions, access *nsAccess) (*Model, tea.Cmd) {
	t.Helper()
	return newClusterModelOf(t, width, height, acts, access, nil)
}

// newClusterModelWith is newClusterModel with its options changed by set.
func newClusterModelWith(t *testing.T, width, height int, acts fleetActions, set func(*Options)) (*Model, tea.Cmd) {
	t.Helper()
	return newClusterModelOf(t, width, height, acts, nil, set)
}

func newClusterModelOf(t *testing.T, width, height int, acts fleetActions, access *nsAccess, set func(*Options)) (*Model, tea.Cmd) {
	t.Helper()
	data := &contextsData{fakeData: newFakeData(contextSnapshots()), contexts: contextHealths()}
	opts := Options{
		Context: "4 contexts", Namespace: "each context's", Fleet: true, Contexts: true, Theme: themes.Dark(),
		Renderer: themes.NoColorRenderer(io.Discard), Now: func() time.Time { return t0 }, Data: data,
	}
	r := &resolver{}
	if acts != nil {
		r.actionsIn = acts.in
	}
	if access != nil {
		r.accessIn = access.in
	}
	opts.Resolver = r
	if set != nil {
		set(&opts)
	}
	m := newModel(context.Background(), opts)
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	_, cmd := m.Update(loadCmd(data, func() time.Time { return t0 })())
	m.Update(tickMsg(t0))
	return m, cmd
}

// clusterActions are one fakeActions per context/namespace.
func clusterActions() fleetActions {
	f := fleetActions{}
	for _, ns := range []string{"prod-eu/kiosk", "prod-eu/vdi-cad", labContext + "/vdi-eng"} {
		f[ns] = &fakeActions{}
	}
	return f
}

func TestContextsGoldenScreens(t *testing.T) {
	for _, tc := range []struct {
		name          string
		width, height int
		keys          []string
	}{
		{name: "contexts_pools_120x40", width: 120, height: 40},
		{name: "contexts_pools_80x24", width: 80, height: 24, keys: []string{"down"}},
		{name: "contexts_pools_200x60", width: 200, height: 60},
		{name: "contexts_members_120x40", width: 120, height: 40, keys: []string{"down", "down", "down", "enter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newClusterModel(t, tc.width, tc.height, clusterActions(), nil)
			press(m, tc.keys...)
			got := m.View()
			checkScreen(t, got, tc.width, tc.height)
			golden(t, tc.name, got)
		})
	}
}

func TestClusterStates(t *testing.T) {
	want := []string{"● live", "⚠ stale 42s", "✗ unreachable", "✗ forbidden", "◌ syncing"}
	hs := append(contextHealths(), engine.ContextHealth{Context: "new"})
	for i, h := range hs {
		if got := stateOf(h, t0).word; got != want[i] {
			t.Errorf("%s: %q, want %q", h.Context, got, want[i])
		}
	}
	// A 401 is said as such, with the data's age when there is data.
	refused := &kube.CredentialsError{Err: errors.New("Unauthorized")}
	for _, tt := range []struct {
		h    engine.ContextHealth
		want string
	}{
		{engine.ContextHealth{Context: "wall", ErrAt: t0.Add(-time.Second), Err: refused}, "✗ credentials refused"},
		{engine.ContextHealth{Context: "wall", Synced: true, LastSync: t0.Add(-90 * time.Second), ErrAt: t0.Add(-time.Second), Err: fmt.Errorf("watch pods: %w", refused)}, "✗ credentials refused, stale 1m"},
	} {
		if got := stateOf(tt.h, t0); got.word != tt.want || got.level != levelError {
			t.Errorf("%v: %q (level %d), want %q", tt.h.Err, got.word, got.level, tt.want)
		}
	}
	// Back: an error before the last data is history.
	h := engine.ContextHealth{Synced: true, LastSync: t0, ErrAt: t0.Add(-time.Minute), Err: errors.New("x")}
	if got := stateOf(h, t0).word; got != "● live" {
		t.Errorf("recovered cluster: %q", got)
	}
}

// Every action goes to its pool's context and namespace; what the user may
// do is asked per context/namespace (so per cluster), and gates there only.
func TestClustersActionsAndAccessPerCluster(t *testing.T) {
	acts := clusterActions()
	acc := &nsAccess{}
	m, load := newClusterModel(t, 120, 40, acts, acc)
	m.Update(waitMsg[capsMsg](t, load))             // prod-eu/kiosk
	m.Update(waitMsg[capsMsg](t, press(m, "down"))) // prod-eu/vdi-cad/desk
	if cmd := press(m, "down"); cmd != nil {
		t.Error("prod-eu/vdi-cad/gpu asked again")
	}
	m.Update(waitMsg[capsMsg](t, press(m, "down"))) // the lab's desk
	if want := []string{"prod-eu/kiosk", "prod-eu/vdi-cad", labContext + "/vdi-eng"}; !reflect.DeepEqual(acc.asked, want) {
		t.Fatalf("asked %q, want %q", acc.asked, want)
	}
	// The lab's desk: force-release is not allowed there (nsAccess allows
	// it in namespace "vdi-eng" only, and this one is the lab's).
	press(m, "enter", "f")
	if m.dialog != nil {
		t.Fatal("f in the lab cluster opened a dialog; its namespace does not allow it")
	}
	if !strings.Contains(m.acts.note, "needs force-release leases.coordination.k8s.io in context "+labContext+", namespace vdi-eng") {
		t.Errorf("note %q", m.acts.note)
	}
	press(m, "esc")
	_, cmd := m.Update(keyMsg("r"))
	m.Update(waitMsg[actionDoneMsg](t, cmd))
	press(m, "up", "up", "enter", "f") // prod-eu/vdi-cad/desk
	if m.dialog == nil || m.dialog.req.kind() != engine.ActionForceRelease {
		t.Fatal("f in prod-eu/vdi-cad did not open the force-release dialog")
	}
	press(m, "tab")
	_, cmd = m.Update(keyMsg("enter"))
	m.Update(waitMsg[actionDoneMsg](t, cmd))
	if got := acts[labContext+"/vdi-eng"].Calls(); len(got) != 1 || got[0].op != "reconcile" || got[0].pool != "desk" {
		t.Errorf("lab calls %+v, want one reconcile of desk", got)
	}
	if got := acts["prod-eu/vdi-cad"].Calls(); len(got) != 1 || got[0].op != "force-release" || got[0].pool != "desk" || got[0].member != "desk-1" {
		t.Errorf("prod-eu/vdi-cad calls %+v, want one force-release of desk desk-1", got)
	}
	if got := acts["prod-eu/kiosk"].Calls(); len(got) != 0 {
		t.Errorf("prod-eu/kiosk calls %+v, want none", got)
	}
}

// A context name is kubeconfig text: it reaches the screen escaped, in the
// header line and in the CONTEXT column.
func TestClustersHostileContextName(t *testing.T) {
	evil := "evil\x1b]0;pwned\x07\x1b[31m"
	snaps := fixture.FleetSnapshots()[:1]
	snaps[0].Context = evil
	data := &contextsData{fakeData: newFakeData(snaps), contexts: []engine.ContextHealth{{Context: evil, Synced: true, LastSync: t0}}}
	m := newModel(context.Background(), Options{Fleet: true, Contexts: true, Theme: themes.Dark(),
		Renderer: themes.NoColorRenderer(io.Discard), Now: func() time.Time { return t0 }, Data: data})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 20})
	m.Update(loadCmd(data, func() time.Time { return t0 })())
	s := m.View()
	if strings.ContainsAny(s, "\x1b\x07") {
		t.Fatalf("an escape sequence of the context name reached the screen: %q", s)
	}
	if !strings.Contains(s, "contexts: evil") || !strings.Contains(s, "▸ evil    kiosk") {
		t.Errorf("the context is not shown:\n%s", s)
	}
}
