package render

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// asciiGlyphs are the plain stand-ins of the glyphs the dashboard and the
// report draw: each status keeps a distinct character (the word beside it
// says the rest), box drawing becomes +, - and |.
var asciiGlyphs = map[rune]byte{
	'●': '*', '◌': 'o', '✗': 'x', '✓': 'v', '⚠': '!', '⟳': '~', '⚙': '%', '▸': '>', '▾': 'v', '▲': '^', '▼': 'v', '▶': '>', '•': '*',
	'↑': '^', '↓': 'v', '←': '<', '→': '>', '—': '-', '–': '-', '…': '.', '·': '.', '×': 'x',
	'─': '-', '━': '-', '│': '|', '┃': '|', '┌': '+', '┐': '+', '└': '+', '┘': '+',
	'├': '+', '┤': '+', '┬': '+', '┴': '+', '┼': '+', '╭': '+', '╮': '+', '╰': '+', '╯': '+',
	'▁': '_', '▂': '.', '▃': ':', '▄': '-', '▅': '=', '▆': '+', '▇': '*', '█': '#',
	'▀': '"', '▌': '|', '▐': '|', '░': ':', '▒': '%', '▓': '#',
	'‘': '\'', '’': '\'', '“': '"', '”': '"',
}

// ASCII rewrites s, a screen or a report (with or without colour
// sequences, which are ASCII and pass), in plain ASCII for terminals and
// screen readers that need it (--ascii): every glyph by its stand-in,
// braille (a spinner's frames) by '.', any other character by '?', each
// taking the cells the character took, so that columns and boxes stay
// aligned.
func ASCII(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case asciiGlyphs[r] != 0:
			b.WriteByte(asciiGlyphs[r])
		case r >= 0x2800 && r <= 0x28ff:
			b.WriteByte('.')
		default:
			b.WriteString(strings.Repeat("?", ansi.StringWidth(string(r))))
		}
	}
	return b.String()
}
