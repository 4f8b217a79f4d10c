package themes

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Theme is the palette of the dashboard. Each colour adapts to a light or a
// dark terminal background.
type Theme struct {
	Name string

	Text   lipgloss.AdaptiveColor // body text
	Muted  lipgloss.AdaptiveColor // secondary text, column headers, help
	Accent lipgloss.AdaptiveColor // app name, titles, focused buttons

	OK    lipgloss.AdaptiveColor // live, ready, free
	Warn  lipgloss.AdaptiveColor // low, expiring soon, drift, syncing
	Error lipgloss.AdaptiveColor // exhausted, failed, disconnected, errors
	Info  lipgloss.AdaptiveColor // maintenance, markers

	SelectedText lipgloss.AdaptiveColor // the row under the cursor
	SelectedBg   lipgloss.AdaptiveColor
	// ReverseSelection draws the row under the cursor in reverse video
	// (for a theme that keeps the terminal's own colours).
	ReverseSelection bool
}

func ac(light, dark string) lipgloss.AdaptiveColor {
	return lipgloss.AdaptiveColor{Light: light, Dark: dark}
}

// Dark is tuned for a dark background: ByName("dark") is its Dark side on
// any background, and Auto takes its Dark side on a dark one.
func Dark() Theme {
	return Theme{
		Name:         "dark",
		Text:         ac("#1a1a1a", "#e4e4e4"),
		Muted:        ac("#6c6c6c", "#8a8a8a"),
		Accent:       ac("#5f00d7", "#af87ff"),
		OK:           ac("#008700", "#5fd75f"),
		Warn:         ac("#af5f00", "#ffaf00"),
		Error:        ac("#d70000", "#ff5f5f"),
		Info:         ac("#005faf", "#5fafff"),
		SelectedText: ac("#000000", "#ffffff"),
		SelectedBg:   ac("#d0d0ff", "#3a3a5f"),
	}
}

// Light is tuned for a light background: ByName("light") is its Light side
// on any background, and Auto takes its Light side on a light one.
func Light() Theme {
	return Theme{
		Name:         "light",
		Text:         ac("#111111", "#eeeeee"),
		Muted:        ac("#5f5f5f", "#9e9e9e"),
		Accent:       ac("#005f87", "#5fafd7"),
		OK:           ac("#006400", "#87d787"),
		Warn:         ac("#875f00", "#ffd75f"),
		Error:        ac("#af0000", "#ff8787"),
		Info:         ac("#00008b", "#87afff"),
		SelectedText: ac("#000000", "#000000"),
		SelectedBg:   ac("#ffd7af", "#ffd7af"),
	}
}

// HighContrast uses the 16 basic ANSI colours only, for projectors, wall
// displays and terminals with custom palettes: ByName("high-contrast") is
// its Dark side (bright colours on a dark background) on any background.
func HighContrast() Theme {
	return Theme{
		Name:         "high-contrast",
		Text:         ac("0", "15"),
		Muted:        ac("0", "15"),
		Accent:       ac("4", "14"),
		OK:           ac("2", "10"),
		Warn:         ac("3", "11"),
		Error:        ac("1", "9"),
		Info:         ac("4", "12"),
		SelectedText: ac("15", "0"),
		SelectedBg:   ac("0", "15"),
	}
}

// Colorblind is the Okabe–Ito palette, told apart under the common
// colour-vision deficiencies (protanopia, deuteranopia, tritanopia): blue
// for OK, orange for warnings, vermillion for errors, bluish green for
// information. Text is the terminal's own foreground and the selection is
// reversed, so it reads on a dark or a light background alike.
func Colorblind() Theme {
	return Theme{
		Name:             "colorblind",
		Text:             ac("", ""),
		Muted:            ac("#808080", "#808080"),
		Accent:           ac("#CC79A7", "#CC79A7"),
		OK:               ac("#0072B2", "#0072B2"),
		Warn:             ac("#E69F00", "#E69F00"),
		Error:            ac("#D55E00", "#D55E00"),
		Info:             ac("#009E73", "#009E73"),
		SelectedText:     ac("", ""),
		SelectedBg:       ac("", ""),
		ReverseSelection: true,
	}
}

// Auto is the adaptive default: the light theme's colours on a light
// background, the dark theme's on a dark one (Background says how the
// background is known).
func Auto() Theme {
	l, d := Light(), Dark()
	t := d
	t.Name = "auto"
	lc, dc, tc := colours(&l), colours(&d), colours(&t)
	for i := range tc {
		*tc[i] = lipgloss.AdaptiveColor{Light: lc[i].Light, Dark: dc[i].Dark}
	}
	return t
}

// colours are the theme's colours, for the functions that derive a theme
// from others.
func colours(t *Theme) []*lipgloss.AdaptiveColor {
	return []*lipgloss.AdaptiveColor{&t.Text, &t.Muted, &t.Accent, &t.OK, &t.Warn, &t.Error, &t.Info, &t.SelectedText, &t.SelectedBg}
}

// fixed is t with one set of colours whatever the background: its dark
// side or its light side.
func fixed(t Theme, dark bool) Theme {
	for _, c := range colours(&t) {
		if dark {
			c.Light = c.Dark
		} else {
			c.Dark = c.Light
		}
	}
	return t
}

// Adaptive reports whether the theme's colours follow the terminal's
// background (only Auto's do): only then is the background asked for.
func (t Theme) Adaptive() bool {
	for _, c := range colours(&t) {
		if c.Light != c.Dark {
			return true
		}
	}
	return false
}

// Names lists the theme names ByName accepts.
func Names() []string {
	return []string{"auto", "dark", "light", "high-contrast", "colorblind"}
}

// ByName returns the named theme. The empty name is the default, auto: the
// one theme that adapts to the terminal's background. Every other theme
// is fixed: dark is the dark theme on any background, light the light one,
// high-contrast the 16 basic ANSI colours for a dark background (walls,
// projectors), colorblind the Okabe–Ito palette on any background.
func ByName(name string) (Theme, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "auto", "default":
		return Auto(), nil
	case "dark":
		return fixed(Dark(), true), nil
	case "light":
		return fixed(Light(), false), nil
	case "high-contrast", "highcontrast", "contrast":
		return fixed(HighContrast(), true), nil
	case "colorblind", "colourblind", "cvd":
		return Colorblind(), nil
	}
	return Theme{}, fmt.Errorf("unknown theme %q (choose one of %s)", name, strings.Join(Names(), ", "))
}
