// Package sanitize makes cluster-provided text safe to print in a terminal.
//
// Everything the dashboard shows that came from the cluster (claim
// identities, Pod and Event messages, labels, image and node names, errors)
// goes through Sanitize before it is measured or rendered. Escape sequences
// are removed whole (CSI, OSC including OSC 8 hyperlinks and OSC 52 clipboard
// writes, DCS, SOS, PM, APC, and their 8-bit C1 forms), every other C0/C1
// control character and DEL is dropped, bidi overrides and isolates and every
// other Unicode format character (category Cf) are dropped, and line breaks
// and tabs become spaces. Widths are measured on the sanitised text.
package sanitize

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Ellipsis ends text cut to fit a column.
const Ellipsis = "…"

// Sanitize returns s with every escape sequence and control or format
// character removed, and line breaks (CR, LF, CR LF, VT, FF, NEL, U+2028,
// U+2029) and tabs turned into one space each, so that a carriage return can
// never overwrite what came before it. Invalid UTF-8 becomes U+FFFD. It never returns text that can
// move the cursor, change the terminal's state or reorder the display.
func Sanitize(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			b.WriteRune(utf8.RuneError)
			i++
			continue
		}
		switch {
		case r == 0x1b: // ESC
			i = skipEscape(s, i+size)
			continue
		case r == 0x9b: // C1 CSI
			i = skipCSI(s, i+size)
			continue
		case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f: // C1 DCS, SOS, OSC, PM, APC
			i = skipString(s, i+size)
			continue
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			// CR LF is one line break: the LF becomes the space.
		case r == '\r' || r == '\n' || r == '\t' || r == '\v' || r == '\f' || r == 0x2028 || r == 0x2029 || r == 0x85:
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			// BEL, BS, CR, NUL, DEL and the remaining C0/C1 controls.
		case unicode.Is(unicode.Cf, r):
			// Bidi embeddings, overrides and isolates (U+202A-U+202E,
			// U+2066-U+2069), marks, zero-width characters, BOM, tags.
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPlain reports whether s is printable ASCII, the common case.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// skipEscape skips the rest of an escape sequence that began with ESC at i-1.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	// ESC, intermediates (0x20-0x2F), then one final byte (0x30-0x7E).
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipCSI skips parameter and intermediate bytes and the final byte of a
// control sequence. Anything unexpected ends the sequence without being
// consumed, so it is judged on its own.
func skipCSI(s string, i int) int {
	for i < len(s) {
		c := s[i]
		switch {
		case c >= 0x20 && c <= 0x3f: // parameters and intermediates
			i++
		case c >= 0x40 && c <= 0x7e: // final byte
			return i + 1
		default:
			return i
		}
	}
	return i
}

// skipString skips a control string (OSC, DCS, SOS, PM, APC) up to and
// including its terminator: BEL, ESC \ or the C1 ST. An unterminated string
// runs to the end of s and is dropped whole.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i + 1
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + len("\u009c")
		}
		i++
	}
	return i
}

// Width is the display width of s after sanitising.
func Width(s string) int { return ansi.StringWidth(Sanitize(s)) }

// Truncate sanitises s and cuts it to at most width cells, ending with an
// ellipsis when it was cut.
func Truncate(s string, width int) string { return Cut(Sanitize(s), width) }

// Fit sanitises s, cuts it to width cells (with an ellipsis) and pads it with
// spaces to exactly width cells.
func Fit(s string, width int) string { return Pad(Sanitize(s), width) }

// FitRight is Fit with the text aligned to the right.
func FitRight(s string, width int) string {
	s = Truncate(s, width)
	if w := ansi.StringWidth(s); w < width {
		s = strings.Repeat(" ", width-w) + s
	}
	return s
}

// Cut cuts text that is already safe to print (sanitised, or styled by the
// program itself) to at most width cells, ending with an ellipsis when it
// was cut. Its escape sequences are kept and take no width: Truncate is
// Cut of the sanitised text.
func Cut(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, Ellipsis)
}

// Pad is Cut, then spaces to exactly width cells: Fit of text already
// safe to print.
func Pad(s string, width int) string {
	s = Cut(s, width)
	if w := ansi.StringWidth(s); w < width {
		s += strings.Repeat(" ", width-w)
	}
	return s
}
