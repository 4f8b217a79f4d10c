package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// Glyphs. Each status has a glyph and a word; colour only adds to them.
const (
	GlyphLive     = "●"
	GlyphSyncing  = "◌"
	GlyphBad      = "✗"
	GlyphOK       = "✓"
	GlyphWarn     = "⚠"
	GlyphDrift    = "⟳"
	GlyphMaint    = "⚙"
	GlyphAbove    = "↑"
	GlyphProblem  = "!"
	GlyphCursor   = "▸"
	GlyphNone     = "—"
	GlyphEllipsis = sanitize.Ellipsis
)

// Levels of a status, worst last; the dashboard maps them onto styles.
type Level int

const (
	LevelNone Level = iota
	LevelOK
	LevelInfo
	LevelWarn
	LevelError
)

// Duration formats a duration compactly: 12s, 42m, 1h05m, 3h, 2d.
func Duration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 10*time.Hour:
		h := int(d / time.Hour)
		m := int((d % time.Hour) / time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%02dm", h, m)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// Ago formats the time since t ("12s ago"), or "never" for a zero time.
func Ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	if t.After(now) {
		return "in " + Duration(t.Sub(now))
	}
	return Duration(now.Sub(t)) + " ago"
}

// Plural is n and the word for n: "1 member", "3 members".
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// OrWord is s, or word when s is blank.
func OrWord(s, word string) string {
	if strings.TrimSpace(s) == "" {
		return word
	}
	return s
}

// JoinNonEmpty joins the parts that are not empty.
func JoinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// clean sanitises cluster text.
func clean(s string) string { return sanitize.Sanitize(s) }
