package tui

import (
	"context"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// fleetActions are one fakeActions per namespace.
type fleetActions map[string]*fakeActions

// nsKey names a namespace of the fleet in the fixtures: namespace, or
// context/namespace with several contexts.
func nsKey(kctx, ns string) string {
	if kctx != "" {
		return kctx + "/" + ns
	}
	return ns
}

func (f fleetActions) in(kctx, ns string) Actions {
	if a, ok := f[nsKey(kctx, ns)]; ok {
		return a
	}
	return nil
}

// calls lists every namespace's calls as "ns: op pool member".
func (f fleetActions) calls() []string {
	var out []string
	for _, ns := range fixture.FleetNamespaces {
		for _, c := range f[ns].Calls() {
			out = append(out, strings.TrimSpace(ns+": "+c.op+" "+c.pool+" "+c.member))
		}
	}
	return out
}

// recordingEvents records the objects whose Events were read.
type recordingEvents struct {
	mu   sync.Mutex
	read []string
}

func (r *recordingEvents) Events(_ context.Context, namespace, kind, name string) ([]corev1.Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read = append(r.read, namespace+" "+kind+" "+name)
	return nil, nil
}

func (r *recordingEvents) reads() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.read...)
}

// nsAccess answers per namespace: force-release is allowed only in vdi-eng.
type nsAccess struct {
	mu    sync.Mutex
	asked []string
}

func (a *nsAccess) in(kctx, ns string) Access { return nsAccessIn{a: a, ns: nsKey(kctx, ns)} }

type nsAccessIn struct {
	a  *nsAccess
	ns string
}

func (n nsAccessIn) Capabilities(_ context.Context, actions []engine.Action) ([]engine.Capability, error) {
	n.a.mu.Lock()
	n.a.asked = append(n.a.asked, n.ns)
	n.a.mu.Unlock()
	out := make([]engine.Capability, 0, len(actions))
	for _, act := range actions {
		c := engine.Capability{Action: act, Allowed: true}
		if act == engine.ActionForceRelease && n.ns != "vdi-eng" && n.ns != "prod-eu/vdi-cad" {
			c = engine.Capability{Action: act, Missing: &engine.PermForceRelease}
		}
		out = append(out, c)
	}
	return out, nil
}

type fleetOpts struct {
	width, height int
	actions       fleetActions
	events        EventSource
	access        *nsAccess
}

// newFleetModel builds a fleet model at a fixed size and time with the
// fleet fixture loaded; it returns the Cmd of the load (the first
// capabilities request).
func newFleetModel(t *testing.T, o fleetOpts) (*Model, tea.Cmd) {
	t.Helper()
	if o.width == 0 {
		o.width, o.height = 120, 40
	}
	data := newFakeData(fixture.FleetSnapshots())
	opts := Options{
		Context: "prod-eu", Namespace: "all", Fleet: true, Theme: themes.Dark(),
		Renderer: themes.NoColorRenderer(io.Discard), Now: func() time.Time { return t0 },
		Data: data, Resolver: &resolver{events: o.events},
	}
	r := opts.Resolver.(*resolver)
	if o.actions != nil {
		r.actionsIn = o.actions.in
	}
	if o.access != nil {
		r.accessIn = o.access.in
	}
	m := newModel(context.Background(), opts)
	m.Update(tea.WindowSizeMsg{Width: o.width, Height: o.height})
	_, cmd := m.Update(loadCmd(data, func() time.Time { return t0 })())
	m.Update(tickMsg(t0))
	return m, cmd
}

func newFleetActions() fleetActions {
	f := fleetActions{}
	for _, ns := range fixture.FleetNamespaces {
		f[ns] = &fakeActions{}
	}
	return f
}

func TestFleetGoldenScreens(t *testing.T) {
	for _, tc := range []struct {
		name          string
		width, height int
		keys          []string
	}{
		{name: "fleet_pools_120x40", width: 120, height: 40},
		{name: "fleet_pools_80x24", width: 80, height: 24, keys: []string{"down"}},
		{name: "fleet_pools_200x60", width: 200, height: 60},
		{name: "fleet_pools_filtered_120x40", width: 120, height: 40, keys: []string{"/", "c", "a", "d", "enter"}},
		{name: "fleet_members_120x40", width: 120, height: 40, keys: []string{"down", "enter"}},
		{name: "fleet_detail_120x40", width: 120, height: 40, keys: []string{"down", "enter", "enter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newFleetModel(t, fleetOpts{width: tc.width, height: tc.height, actions: newFleetActions()})
			press(m, tc.keys...)
			got := m.View()
			checkScreen(t, got, tc.width, tc.height)
			golden(t, tc.name, got)
		})
	}
}

// Two namespaces each have a pool desk: the selection, the members and
// every action follow the pool's namespace, not its name.
func TestFleetActionsGoToThePoolsNamespace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  []string // from the pools view, ending in the action's confirmation
		want  []string
		title string // the status line after the action
	}{
		{name: "reconcile vdi-eng/desk", keys: []string{"down", "down", "down", "r"},
			want: []string{"vdi-eng: reconcile desk"}, title: "reconcile vdi-eng/desk"},
		{name: "reconcile vdi-cad/desk", keys: []string{"down", "r"},
			want: []string{"vdi-cad: reconcile desk"}, title: "reconcile vdi-cad/desk"},
		{name: "force-release in vdi-cad", keys: []string{"down", "enter", "f", "tab", "enter"},
			want: []string{"vdi-cad: force-release desk desk-1"}, title: "force-release desk-1 (bob@example.com)"},
		{name: "force-release in vdi-eng", keys: []string{"/", "e", "n", "g", "enter", "enter", "f", "tab", "enter"},
			want: []string{"vdi-eng: force-release desk desk-1"}, title: "force-release desk-1 (alice@example.com)"},
		{name: "resize kiosk", keys: []string{"s", "6", "enter", "tab", "enter"},
			want: []string{"kiosk: resize kiosk"}, title: "resize kiosk/kiosk 4 → 6"},
		{name: "delete types the namespace too", keys: append(append([]string{"down", "down", "D"}, strings.Split("vdi-cad/gpu", "")...), "enter"),
			want: []string{"vdi-cad: delete gpu"}, title: "delete pool vdi-cad/gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acts := newFleetActions()
			m, _ := newFleetModel(t, fleetOpts{actions: acts})
			var cmd tea.Cmd
			for _, k := range tc.keys {
				_, cmd = m.Update(keyMsg(k))
			}
			m.Update(waitMsg[actionDoneMsg](t, cmd))
			if got := acts.calls(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("calls %q, want %q", got, tc.want)
			}
			if s := status(m); !strings.Contains(s, tc.title) {
				t.Errorf("status %q lacks %q", s, tc.title)
			}
		})
	}
}

// The detail pane's Events and the audit trail are read in the pool's own
// namespace.
func TestFleetReadsGoToThePoolsNamespace(t *testing.T) {
	ev := &recordingEvents{}
	m, _ := newFleetModel(t, fleetOpts{actions: newFleetActions(), events: ev})
	press(m, "down", "enter") // vdi-cad/desk
	if m.title(m.members.pool) != "vdi-cad/desk" || m.members.current() == nil || m.members.current().Name != "desk-1" {
		t.Fatalf("members of %q, member %v; want vdi-cad/desk, desk-1", m.members.pool, m.members.current())
	}
	m.Update(waitMsg[auditMsg](t, press(m, "A")))
	press(m, "A")
	m.Update(waitMsg[eventsMsg](t, press(m, "enter")))
	want := []string{"vdi-cad ConfigMap " + engine.ConfigMapName("desk"), "vdi-cad Pod desk-1", "vdi-cad PersistentVolumeClaim " + engine.PVCName("desk-1")}
	got := ev.reads()
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("reads %q lack %q", got, w)
		}
	}
	for _, g := range got {
		if !strings.HasPrefix(g, "vdi-cad ") {
			t.Errorf("read %q outside the pool's namespace", g)
		}
	}
}

// What the user may do is asked per namespace, when a pool of the
// namespace is first selected, and gates the actions there only.
func TestFleetCapabilitiesPerNamespace(t *testing.T) {
	acc := &nsAccess{}
	acts := newFleetActions()
	m, load := newFleetModel(t, fleetOpts{actions: acts, access: acc})
	m.Update(waitMsg[capsMsg](t, load)) // kiosk, selected first
	m.Update(waitMsg[capsMsg](t, press(m, "down")))
	if cmd := press(m, "down"); cmd != nil { // vdi-cad/gpu: vdi-cad is known
		t.Error("a second pool of vdi-cad asked the capabilities again")
	}
	m.Update(waitMsg[capsMsg](t, press(m, "down")))
	if want := []string{"kiosk", "vdi-cad", "vdi-eng"}; !reflect.DeepEqual(acc.asked, want) {
		t.Fatalf("asked %q, want %q", acc.asked, want)
	}
	// vdi-eng allows force-release: the dialog opens.
	press(m, "enter", "f")
	if m.dialog == nil || m.dialog.req.kind() != engine.ActionForceRelease {
		t.Fatal("f in vdi-eng did not open the force-release dialog")
	}
	press(m, "esc", "esc", "up", "up", "enter", "f") // vdi-cad/desk
	if m.dialog != nil {
		t.Fatal("f in vdi-cad opened a dialog; the namespace does not allow it")
	}
	if s := status(m); !strings.Contains(s, "force-release is not allowed: needs force-release leases.coordination.k8s.io in namespace vdi-cad") {
		t.Errorf("status %q", s)
	}
	if calls := acts.calls(); len(calls) != 0 {
		t.Errorf("calls %q, want none", calls)
	}
}

func TestPoolRefs(t *testing.T) {
	for _, tc := range []struct {
		v            engine.PoolView
		one, inFleet string // poolTitle in one namespace, in the fleet
	}{
		{engine.PoolView{Namespace: "vdi-eng", Name: "desk"}, "desk", "vdi-eng/desk"},
		{engine.PoolView{Context: labContext, Namespace: "vdi-eng", Name: "desk"}, "desk", labContext + "/vdi-eng/desk"},
	} {
		if got := poolTitle(false, &tc.v); got != tc.one {
			t.Errorf("poolTitle(%v) = %q, want %q", tc.v.Ref(), got, tc.one)
		}
		if got := poolTitle(true, &tc.v); got != tc.inFleet {
			t.Errorf("poolTitle(fleet, %v) = %q, want %q", tc.v.Ref(), got, tc.inFleet)
		}
	}
	views := []engine.PoolView{
		{Namespace: "vdi-cad", Name: "desk"}, {Namespace: "vdi-eng", Name: "desk"},
		{Context: "prod-eu", Namespace: "vdi-eng", Name: "desk"},
	}
	for _, tc := range []struct {
		ref  engine.PoolRef
		want int // index of the pool found; -1 for none
	}{
		{engine.PoolRef{Namespace: "vdi-cad", Name: "desk"}, 0},
		{engine.PoolRef{Namespace: "vdi-eng", Name: "desk"}, 1},
		{engine.PoolRef{Context: "prod-eu", Namespace: "vdi-eng", Name: "desk"}, 2},
		{engine.PoolRef{Name: "desk"}, -1},
		{engine.PoolRef{Namespace: "kiosk", Name: "desk"}, -1},
		{engine.PoolRef{Context: "prod-eu", Namespace: "vdi-cad", Name: "desk"}, -1},
	} {
		got := -1
		if v := findPool(views, tc.ref); v != nil {
			got = slices.IndexFunc(views, func(w engine.PoolView) bool { return w.Ref() == v.Ref() })
		}
		if got != tc.want {
			t.Errorf("findPool(%v) = %d, want %d", tc.ref, got, tc.want)
		}
	}
}
