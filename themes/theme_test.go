package themes

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
)

func TestByName(t *testing.T) {
	for _, name := range append(Names(), "", "DARK", " light ") {
		th, err := ByName(name)
		if err != nil {
			t.Fatalf("ByName(%q): %v", name, err)
		}
		if th.Name == "" {
			t.Errorf("ByName(%q) has no name", name)
		}
	}
	if _, err := ByName("neon"); err == nil || !strings.Contains(err.Error(), "high-contrast") {
		t.Errorf("ByName(neon) = %v, want an error listing the themes", err)
	}
}

func TestThemesSetEveryColour(t *testing.T) {
	for _, name := range Names() {
		th, _ := ByName(name)
		v := reflect.ValueOf(th)
		for i := 0; i < v.NumField(); i++ {
			field := v.Type().Field(i).Name
			// The terminal's own foreground, and a reversed selection.
			own := th.Name == "colorblind" && field == "Text" || th.ReverseSelection && strings.HasPrefix(field, "Selected")
			c, ok := v.Field(i).Interface().(lipgloss.AdaptiveColor)
			if ok && !own && (c.Light == "" || c.Dark == "") {
				t.Errorf("theme %s: %s is not set", th.Name, field)
			}
		}
	}
}

// Only the default adapts to the background; a theme named is the same
// on any background, with its own side's colours.
func TestOnlyAutoAdapts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		adaptive bool
		text     string // the Text colour (on a dark background for auto)
	}{
		{"", true, Dark().Text.Dark}, {"auto", true, Dark().Text.Dark},
		{"dark", false, Dark().Text.Dark}, {"light", false, Light().Text.Light},
		{"high-contrast", false, "15"}, {"colorblind", false, ""},
	} {
		th, err := ByName(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if th.Adaptive() != tc.adaptive || th.Text.Dark != tc.text {
			t.Errorf("%q: adaptive %v, text %q; want %v, %q", tc.name, th.Adaptive(), th.Text.Dark, tc.adaptive, tc.text)
		}
	}
	if a := Auto(); a.Text.Light != Light().Text.Light || a.Error.Light != Light().Error.Light || a.OK.Dark != Dark().OK.Dark {
		t.Errorf("auto is not light's colours on a light background and dark's on a dark one: %+v", a)
	}
}

// Under tmux or screen the background cannot be asked: COLORFGBG says it
// (light for 7 and 9–15), else it is dark; elsewhere the terminal is asked.
func TestBackground(t *testing.T) {
	for _, tc := range []struct {
		name            string
		env             map[string]string
		dark, queryable bool
	}{
		{"xterm asks", map[string]string{"TERM": "xterm-256color", "COLORFGBG": "0;15"}, true, true},
		{"tmux light", map[string]string{"TERM": "tmux-256color", "COLORFGBG": "0;15"}, false, false},
		{"tmux white", map[string]string{"TERM": "tmux-256color", "COLORFGBG": "0;7"}, false, false},
		{"tmux dark", map[string]string{"TERM": "tmux-256color", "COLORFGBG": "15;0"}, true, false},
		{"tmux three fields", map[string]string{"TERM": "tmux-256color", "COLORFGBG": "0;default;15"}, false, false},
		{"tmux none", map[string]string{"TERM": "tmux-256color"}, true, false},
		{"tmux garbage", map[string]string{"TERM": "tmux-256color", "COLORFGBG": "0;x"}, true, false},
		{"screen light", map[string]string{"TERM": "screen-256color", "COLORFGBG": "0;11"}, false, false},
		{"TMUX set, TERM xterm", map[string]string{"TERM": "xterm-256color", "TMUX": "/tmp/tmux-1000/default,1,0", "COLORFGBG": "0;15"}, false, false},
		{"bright black is dark", map[string]string{"TERM": "tmux", "COLORFGBG": "15;8"}, true, false},
	} {
		dark, queryable := Background(func(k string) string { return tc.env[k] })
		if dark != tc.dark || queryable != tc.queryable {
			t.Errorf("%s: dark %v, queryable %v; want %v, %v", tc.name, dark, queryable, tc.dark, tc.queryable)
		}
	}
}

// The renderer under tmux on a light terminal draws auto's light colours;
// a fixed theme never asks.
func TestTerminalRendererUnderTmux(t *testing.T) {
	env := map[string]string{"TERM": "tmux-256color", "COLORFGBG": "0;15"}
	r := TerminalRenderer(io.Discard, Auto(), func(k string) string { return env[k] })
	if r.HasDarkBackground() {
		t.Error("tmux with COLORFGBG=0;15: the background is taken as dark")
	}
	env["COLORFGBG"] = "15;0"
	if r := TerminalRenderer(io.Discard, Auto(), func(k string) string { return env[k] }); !r.HasDarkBackground() {
		t.Error("tmux with COLORFGBG=15;0: the background is taken as light")
	}
	light, _ := ByName("light")
	r = TerminalRenderer(io.Discard, light, func(k string) string { return env[k] })
	s := NewStyles(light, r)
	if got := s.Text.GetForeground(); got != light.Text || light.Text.Dark != light.Text.Light {
		t.Errorf("light's text %v is not fixed", got)
	}
}

func TestNoColorRendererWritesNoEscapes(t *testing.T) {
	s := NewStyles(Dark(), NoColorRenderer(io.Discard))
	for _, st := range []lipgloss.Style{s.Error, s.Selected, s.Accent, s.ButtonFocused, s.Warn} {
		if out := st.Render("x"); strings.Contains(out, "\x1b") {
			t.Errorf("no-colour style rendered %q", out)
		}
	}
}

func TestStylesAreIndependent(t *testing.T) {
	a := NewStyles(Dark(), NoColorRenderer(io.Discard))
	b := NewStyles(Light(), NoColorRenderer(io.Discard))
	if a.Theme.Name == b.Theme.Name {
		t.Fatal("two themes share a name")
	}
	if a.OK.GetForeground() == b.OK.GetForeground() {
		t.Error("styles of two themes share the OK colour")
	}
}
