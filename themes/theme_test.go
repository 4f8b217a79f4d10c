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
	for _, th := range []Theme{Dark(), Light(), HighContrast()} {
		v := reflect.ValueOf(th)
		for i := 0; i < v.NumField(); i++ {
			c, ok := v.Field(i).Interface().(lipgloss.AdaptiveColor)
			if ok && (c.Light == "" || c.Dark == "") {
				t.Errorf("theme %s: %s is not set", th.Name, v.Type().Field(i).Name)
			}
		}
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
