package sanitize

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
)

// FuzzSanitize checks that no input survives Sanitize with anything a
// terminal would interpret, and that widths are measured on what is shown.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"",
		"plain ascii",
		"\x1b[2J\x1b[Hscreen wiped",
		"\x1b]52;c;cm0gLXJmIH4=\x07mallory",
		"\x1b]8;;https://evil.example\x1b\\click me\x1b]8;;\x1b\\",
		"\x1bP+q544e\x1b\\dcs",
		"evil\u202Egnp.exe \u2066isolate\u2069 \u200b\ufeff",
		"line one\r\nline two\rover\x08\x08write\x07bell\x7f",
		"\x9b31m c1 csi \x9d0;title\x9c \x90dcs\x9c",
		"\x1b", "\x1b[", "\x1b]", "\x9b", "\xff\xfe invalid utf-8",
		"wide 日本語 and emoji 🎉 and combining e\u0301",
		"tab\tvt\vff\fnel\u0085ls\u2028ps\u2029",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Sanitize(in)
		if !utf8.ValidString(out) {
			t.Fatalf("Sanitize(%q) = %q: invalid UTF-8", in, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("Sanitize(%q) = %q holds %U", in, out, r)
			}
		}
		if strings.ContainsRune(out, 0x1b) || strings.ContainsRune(out, 0x07) {
			t.Fatalf("Sanitize(%q) = %q holds ESC or BEL", in, out)
		}
		if w, lw := Width(in), lipgloss.Width(out); w != lw {
			t.Fatalf("Width(%q) = %d, lipgloss.Width of the sanitised text = %d", in, w, lw)
		}
		if again := Sanitize(out); again != out {
			t.Fatalf("Sanitize is not idempotent: %q then %q", out, again)
		}
	})
}
