package tui

import (
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
)

// The bindings the settings may rebind: each name once, each default key
// valid, and no two bindings of a group sharing a key by default (the
// settings' clash check starts from these).
func TestKeyNames(t *testing.T) {
	names := map[string]bool{}
	byGroup := map[string]map[string]string{}
	for _, kn := range KeyNames() {
		if names[kn.Name] {
			t.Errorf("%s listed twice", kn.Name)
		}
		names[kn.Name] = true
		if strings.ContainsAny(kn.Name, " _") || len(kn.Keys) == 0 || len(kn.Groups) == 0 {
			t.Errorf("%+v: a name without spaces, keys and groups expected", kn)
		}
		for _, k := range kn.Keys {
			if !ValidKey(k) {
				t.Errorf("%s: default key %q is not valid", kn.Name, k)
			}
			for _, g := range kn.Groups {
				if byGroup[g] == nil {
					byGroup[g] = map[string]string{}
				}
				if other, ok := byGroup[g][k]; ok {
					t.Errorf("group %s: %q is %s's and %s's", g, k, other, kn.Name)
				}
				byGroup[g][k] = kn.Name
			}
		}
	}
	for _, want := range []string{"force-release", "resume-rollout", "reconcile", "up", "filter", "follow", "interrupt"} {
		if !names[want] {
			t.Errorf("%s is not listed", want)
		}
	}
}

func TestValidKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"x", true}, {"R", true}, {"/", true}, {"é", true}, {"ctrl+r", true}, {"alt+x", true}, {"alt+ctrl+r", true},
		{"enter", true}, {"f5", true}, {"pgdown", true}, {"space", true}, {"shift+tab", true},
		{"", false}, {"xx", false}, {"ctrl+", false}, {"Ctrl+R", false}, {"control+r", false}, {" ", false}, {"\t", false}, {"hyper+x", false},
	} {
		if got := ValidKey(tc.key); got != tc.want {
			t.Errorf("ValidKey(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}

// A rebound action answers its new keys only, and the help lines and
// hints name them.
func TestKeyOverridesPress(t *testing.T) {
	acts := &fakeActions{}
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: acts, keys: map[string][]string{
		"force-release": {"f"}, "reconcile": {"ctrl+r"}, "down": {"down", "e"}, "resize": {"space"},
	}})
	press(m, "r")
	if m.dialog != nil || len(acts.Calls()) != 0 || m.acts.note != "" && strings.Contains(m.acts.note, "reconcile") {
		t.Fatalf("r still reconciles: calls %v, note %q", acts.Calls(), m.acts.note)
	}
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyCtrlR})
	if cmd == nil {
		t.Fatal("ctrl+r started nothing")
	}
	waitMsg[actionDoneMsg](t, cmd)
	if got := acts.Calls(); len(got) != 1 || got[0].op != "reconcile" {
		t.Fatalf("ctrl+r: calls %v, want one reconcile", got)
	}
	m.Update(tea.KeyMsg{Type: tea.KeySpace})
	if m.dialog == nil {
		t.Fatal("space did not open the resize dialog")
	}
	press(m, "esc")
	press(m, "e", "enter", "down") // e moves down too; into the members, a claimed member
	press(m, "x")
	if m.dialog != nil {
		t.Fatal("x opened a dialog: force-release is rebound to f alone")
	}
	press(m, "f")
	if m.dialog == nil {
		t.Fatal("f did not open the force-release dialog")
	}
	press(m, "esc")
	line := m.View()
	if !strings.Contains(line, "f force-release") || strings.Contains(line, "f/x force-release") || !strings.Contains(line, "ctrl+r reconcile") {
		t.Errorf("the help line does not show the rebound keys:\n%s", line)
	}
}

// The full help at a fixed size with rebound keys.
func TestGoldenKeyOverridesHelp(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}, keys: map[string][]string{
		"force-release": {"f"}, "reconcile": {"ctrl+r"}, "up": {"up", "i"}, "help": {"?", "f1"}, "follow": {"F"},
	}})
	press(m, "?")
	got := m.View()
	checkScreen(t, got, 120, 40)
	golden(t, "help_keys_rebound_120x40", got)
}

// Read-only from the settings: the header, the wall and the help say where
// it comes from, and no action key is bound, as with --readonly.
func TestGoldenReadOnlyFromConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"readonly_config_pools_120x40", []string{"tab"}},
		{"readonly_config_wall_120x40", nil},
		{"readonly_config_help_120x40", []string{"?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestModel(t, fixture.Demo(), testOpts{readOnly: true, readOnlyWhy: "config: context prod-eu"})
			press(m, tc.keys...)
			got := m.View()
			checkScreen(t, got, 120, 40)
			golden(t, tc.name, got)
		})
	}
	m, _ := newTestModel(t, fixture.Demo(), testOpts{readOnly: true, readOnlyWhy: "config: context prod-eu"})
	if a := m.keys.actionFor(keyMsg("r")); a != nil {
		t.Errorf("r is bound to %s in read-only mode", a.name)
	}
}

// The wall's layout from the settings: one column of small tiles, no NEEDS
// ATTENTION; large tiles on a screen the automatic layout gives small ones.
func TestGoldenWallLayout(t *testing.T) {
	for _, tc := range []struct {
		name          string
		width, height int
		wall          WallLayout
	}{
		{"wall_layout_one_column_80x24", 80, 24, WallLayout{Columns: 1, HideAttention: true}},
		{"wall_layout_large_100x30", 100, 30, WallLayout{Tiles: WallTilesLarge}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestModel(t, fixture.Demo(), testOpts{readOnly: true, width: tc.width, height: tc.height, wall: tc.wall})
			got := m.View()
			checkScreen(t, got, tc.width, tc.height)
			golden(t, tc.name, got)
		})
	}
}

// With several contexts, a context the settings make read-only: its pools'
// actions are refused, naming it, and never reach its Resolver; the other
// contexts act; the header says which context is read-only.
func TestReadOnlyContextsMixed(t *testing.T) {
	acts := clusterActions()
	m, _ := newClusterModelWith(t, 120, 40, acts, func(o *Options) { o.ReadOnlyContexts = []string{"prod-eu"} })
	if v := m.View(); !strings.Contains(v, "prod-eu ● live read-only (config)") {
		t.Errorf("the header does not name the read-only context:\n%s", v)
	}
	// The first pool is prod-eu's: reconcile is refused there.
	if cmd := press(m, "r"); cmd != nil {
		if msg, ok := cmd().(actionDoneMsg); ok {
			t.Fatalf("reconcile ran in the read-only context: %+v", msg)
		}
	}
	if !strings.Contains(m.acts.note, "context prod-eu is read-only (config)") {
		t.Errorf("note %q does not name the read-only context", m.acts.note)
	}
	for ns, a := range acts {
		if len(a.Calls()) != 0 {
			t.Errorf("%s: calls %v", ns, a.Calls())
		}
	}
	// The lab's pool acts.
	for i := 0; i < 10 && m.currentPool().Context != labContext; i++ {
		press(m, "down")
	}
	if m.currentPool().Context != labContext {
		t.Fatal("no pool of the lab's context")
	}
	waitMsg[actionDoneMsg](t, press(m, "r"))
	if got := acts[labContext+"/vdi-eng"].Calls(); len(got) != 1 || got[0].op != "reconcile" {
		t.Errorf("the lab's reconcile: %v", got)
	}
	if slices.ContainsFunc(m.reach().readOnlyIn, func(s string) bool { return s == labContext }) {
		t.Error("the lab's context is read-only")
	}
}

// --ascii: every screen in plain ASCII, the columns and boxes where the
// Unicode screen has them; the spinner without braille.
func TestGoldenASCII(t *testing.T) {
	for _, tc := range []struct {
		name          string
		width, height int
		readOnly      bool
		keys          []string
	}{
		{"ascii_pools_120x40", 120, 40, false, nil},
		{"ascii_members_120x40", 120, 40, false, []string{"down", "enter"}},
		{"ascii_force_release_120x40", 120, 40, false, []string{"down", "enter", "down", "f"}},
		{"ascii_wall_200x60", 200, 60, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOpts{width: tc.width, height: tc.height, readOnly: tc.readOnly, ascii: true}
			if !tc.readOnly {
				o.actions = &fakeActions{}
			}
			m, _ := newTestModel(t, fixture.Demo(), o)
			press(m, tc.keys...)
			got := m.View()
			checkScreen(t, got, tc.width, tc.height)
			for i, r := range got {
				if r >= 0x80 {
					t.Fatalf("%q at byte %d is not ASCII", r, i)
				}
			}
			golden(t, tc.name, got)
		})
	}
	m, _ := newTestModel(t, fixture.Demo(), testOpts{ascii: true})
	for _, f := range m.spin.Spinner.Frames {
		if strings.ContainsFunc(f, func(r rune) bool { return r >= 0x80 }) {
			t.Errorf("spinner frame %q is not ASCII", f)
		}
	}
}

// y copies the selected member's name, or on the pools screen the pool's
// --once line; Y the member's console command; each through the
// clipboard, with a note.
func TestCopy(t *testing.T) {
	var copied []string
	clip := func(s string) error { copied = append(copied, s); return nil }
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}, clipboard: clip})
	copyKey := func(k string) {
		t.Helper()
		if cmd := press(m, k); cmd != nil {
			m.Update(cmd())
		}
	}
	press(m, "down") // desk
	copyKey("y")
	copyKey("Y") // no member on the pools screen
	if !strings.Contains(m.acts.note, "select a member first") {
		t.Errorf("Y on the pools screen: note %q", m.acts.note)
	}
	press(m, "enter", "down") // desk-2
	copyKey("y")
	if !strings.Contains(m.acts.note, "copied desk-2 to the clipboard") {
		t.Errorf("note %q", m.acts.note)
	}
	copyKey("Y")
	want := []string{"ctpool-tui --once --pool desk -n vdi --context prod-eu", "desk-2", "ctpool-tui console desk desk-2 -n vdi --context prod-eu"}
	if !slices.Equal(copied, want) {
		t.Errorf("copied %q, want %q", copied, want)
	}

	// Several contexts: the pool's own context, quoted for the shell.
	copied = nil
	m, _ = newClusterModelWith(t, 120, 40, clusterActions(), func(o *Options) { o.Clipboard = clip })
	for i := 0; i < 10 && m.currentPool().Context != labContext; i++ {
		press(m, "down")
	}
	copyKey("y")
	if want := "ctpool-tui --once --pool desk -n vdi-eng --context arn:aws:eks:eu-west-1:1:cluster/lab"; len(copied) != 1 || copied[0] != want {
		t.Errorf("copied %q, want %q", copied, want)
	}
	if got := shellWord("it's a name"); got != `'it'\''s a name'` {
		t.Errorf("shellWord: %s", got)
	}
}
