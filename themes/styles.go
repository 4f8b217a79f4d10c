package themes

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Styles are the lipgloss styles the views use, built from a Theme.
type Styles struct {
	Theme    Theme
	Renderer *lipgloss.Renderer

	Text, Muted, Bold, Accent lipgloss.Style
	OK, Warn, Error, Info     lipgloss.Style

	ColumnHeader  lipgloss.Style // table column titles
	Selected      lipgloss.Style // the row under the cursor
	Button        lipgloss.Style
	ButtonFocused lipgloss.Style
	DangerButton  lipgloss.Style // a focused destructive button
	Key, KeyDesc  lipgloss.Style // help
}

// NewStyles builds the styles of a theme for a renderer. A nil renderer is
// the default renderer (which detects the terminal's colour support).
func NewStyles(t Theme, r *lipgloss.Renderer) Styles {
	if r == nil {
		r = lipgloss.DefaultRenderer()
	}
	ns := r.NewStyle
	s := Styles{Theme: t, Renderer: r}
	s.Text = ns().Foreground(t.Text)
	s.Muted = ns().Foreground(t.Muted)
	s.Bold = ns().Bold(true)
	s.Accent = ns().Foreground(t.Accent).Bold(true)
	s.OK = ns().Foreground(t.OK)
	s.Warn = ns().Foreground(t.Warn).Bold(true)
	s.Error = ns().Foreground(t.Error).Bold(true)
	s.Info = ns().Foreground(t.Info)
	s.ColumnHeader = ns().Foreground(t.Muted).Bold(true)
	s.Selected = ns().Foreground(t.SelectedText).Background(t.SelectedBg)
	if t.ReverseSelection {
		s.Selected = ns().Reverse(true)
	}
	s.Button = ns().Foreground(t.Muted).Padding(0, 1)
	s.ButtonFocused = ns().Foreground(t.SelectedText).Background(t.Accent).Bold(true).Padding(0, 1)
	s.DangerButton = ns().Foreground(t.SelectedText).Background(t.Error).Bold(true).Padding(0, 1)
	s.Key = ns().Foreground(t.Accent).Bold(true)
	s.KeyDesc = ns().Foreground(t.Muted)
	return s
}

// NoColorRenderer returns a renderer that writes no colour or attribute
// sequences at all: for NO_COLOR, pipes, and golden tests.
func NoColorRenderer(w io.Writer) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(w, termenv.WithProfile(termenv.Ascii))
	r.SetColorProfile(termenv.Ascii)
	return r
}
