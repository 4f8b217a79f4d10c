package themes

import (
	"fmt"
	"sort"
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
}

func ac(light, dark string) lipgloss.AdaptiveColor {
	return lipgloss.AdaptiveColor{Light: light, Dark: dark}
}

// Dark is the default theme, tuned for a dark background (it still adapts
// when the terminal reports a light one).
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

// Light is tuned for a light background.
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
// displays and terminals with custom palettes.
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

// Names lists the theme names ByName accepts.
func Names() []string {
	names := []string{"dark", "light", "high-contrast"}
	sort.Strings(names)
	return names
}

// ByName returns the named theme. The empty name is the default (dark).
func ByName(name string) (Theme, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "dark", "default":
		return Dark(), nil
	case "light":
		return Light(), nil
	case "high-contrast", "highcontrast", "contrast":
		return HighContrast(), nil
	}
	return Theme{}, fmt.Errorf("unknown theme %q (choose one of %s)", name, strings.Join(Names(), ", "))
}
