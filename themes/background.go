package themes

import (
	"io"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Background says whether the terminal's background can be asked (OSC 11)
// and, when it cannot, whether it is dark. Under tmux or screen (TERM
// tmux* or screen*, or $TMUX set) the question reaches tmux, not the
// terminal, and goes unanswered; the background is then read from
// COLORFGBG ("fg;bg" or "fg;default;bg", as rxvt, Konsole and iTerm2 set
// it): a bg of 7 (white) or 9–15 (the bright colours) is light, any other
// colour dark. Without COLORFGBG it is taken as dark.
func Background(getenv func(string) string) (dark, queryable bool) {
	term := getenv("TERM")
	if getenv("TMUX") == "" && !strings.HasPrefix(term, "tmux") && !strings.HasPrefix(term, "screen") {
		return true, true
	}
	dark = true
	if fgbg := getenv("COLORFGBG"); strings.Contains(fgbg, ";") {
		parts := strings.Split(fgbg, ";")
		if bg, err := strconv.Atoi(parts[len(parts)-1]); err == nil && bg >= 0 && bg <= 15 {
			dark = bg != 7 && bg < 9
		}
	}
	return dark, false
}

// TerminalRenderer is the renderer of the terminal w for theme t: a fixed
// theme never asks the background (its colours are the same on any); the
// adaptive one asks the terminal, or, where it cannot be asked, reads
// COLORFGBG (Background).
func TerminalRenderer(w io.Writer, t Theme, getenv func(string) string) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(w)
	if !t.Adaptive() {
		r.SetHasDarkBackground(true) // either side: they are the same
		return r
	}
	if dark, queryable := Background(getenv); !queryable {
		r.SetHasDarkBackground(dark)
	}
	return r
}
