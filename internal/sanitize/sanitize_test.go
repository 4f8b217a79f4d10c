package sanitize

import (
	"strings"
	"testing"
	"unicode"

	"github.com/charmbracelet/x/ansi"
)

func TestSanitize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "alice@example.com", "alice@example.com"},
		{"unicode kept", "zoë 日本 🙂", "zoë 日本 🙂"},
		{"csi colour", "\x1b[31mred\x1b[0m", "red"},
		{"csi clear screen", "a\x1b[2J\x1b[Hb", "ab"},
		{"csi private mode", "x\x1b[?1049hy", "xy"},
		{"csi cursor move", "\x1b[10;20Hpwn", "pwn"},
		{"osc title bel", "\x1b]0;evil title\x07ok", "ok"},
		{"osc 52 clipboard", "\x1b]52;c;cm0gLXJmIC8=\x07user", "user"},
		{"osc 8 hyperlink", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"dcs", "\x1bPq#0;2;0;0;0\x1b\\after", "after"},
		{"apc", "\x1b_Gf=100;AAAA\x1b\\img", "img"},
		{"pm", "\x1b^private\x1b\\x", "x"},
		{"sos", "\x1bXstring\x1b\\x", "x"},
		{"unterminated osc dropped", "ok\x1b]0;never ends", "ok"},
		{"bare esc", "a\x1bb", "a"},
		{"esc at end", "a\x1b", "a"},
		{"esc charset", "a\x1b(Bb", "ab"},
		{"c1 csi", "a\u009b31mb", "ab"},
		{"c1 osc", "a\u009d0;t\u009cb", "ab"},
		{"c1 other", "a\u0085b\u0084c", "a bc"},
		{"bel", "ding\x07dong", "dingdong"},
		{"backspace", "admin\b\b\b\b\bguest", "adminguest"},
		{"carriage return", "safe\rEVIL", "safe EVIL"},
		{"crlf", "line1\r\nline2", "line1 line2"},
		{"del", "a\x7fb", "ab"},
		{"nul", "a\x00b", "ab"},
		{"newline and tab", "a\nb\tc", "a b c"},
		{"line separator", "a\u2028b\u2029c", "a b c"},
		{"rlo override", "user\u202Etxt.exe", "usertxt.exe"},
		{"all bidi", "\u202A\u202B\u202C\u202D\u202Ex\u2066\u2067\u2068\u2069", "x"},
		{"zero width", "ad\u200Bmin\u200D\uFEFF", "admin"},
		{"lrm rlm", "a\u200Eb\u200Fc", "abc"},
		{"tag chars", "a\U000E0041b", "ab"},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Sanitize(tt.in)
			if got != tt.want {
				t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			assertHarmless(t, got)
		})
	}
}

// assertHarmless fails when s holds anything a terminal would interpret.
func assertHarmless(t *testing.T, s string) {
	t.Helper()
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) {
			t.Errorf("sanitised %q still holds %U", s, r)
		}
	}
}

func TestSanitizeFuzzish(t *testing.T) {
	// Every byte and every interesting rune, in and around sequences.
	var b strings.Builder
	for c := 0; c < 256; c++ {
		b.WriteByte(byte(c))
		b.WriteString("\x1b[")
		b.WriteByte(byte(c))
		b.WriteString("\x1b]")
		b.WriteByte(byte(c))
	}
	for r := rune(0x80); r < 0xa0; r++ {
		b.WriteRune(r)
	}
	for r := rune(0x2000); r < 0x2070; r++ {
		b.WriteRune(r)
	}
	assertHarmless(t, Sanitize(b.String()))
}

func TestTruncateAndFit(t *testing.T) {
	tests := []struct {
		in    string
		width int
		trunc string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"much longer than ten", 10, "much long…"},
		{"\x1b[31mred\x1b[0m text that is long", 8, "red tex…"},
		{"日本語のテキスト", 7, "日本語…"},
		{"anything", 0, ""},
		{"a\u202Eb", 5, "ab"},
	}
	for _, tt := range tests {
		got := Truncate(tt.in, tt.width)
		if got != tt.trunc {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.trunc)
		}
		if w := ansi.StringWidth(got); w > tt.width {
			t.Errorf("Truncate(%q, %d) is %d wide", tt.in, tt.width, w)
		}
		if tt.width > 0 {
			if f := Fit(tt.in, tt.width); ansi.StringWidth(f) != tt.width {
				t.Errorf("Fit(%q, %d) = %q, width %d", tt.in, tt.width, f, ansi.StringWidth(f))
			}
			if f := FitRight(tt.in, tt.width); ansi.StringWidth(f) != tt.width {
				t.Errorf("FitRight(%q, %d) = %q, width %d", tt.in, tt.width, f, ansi.StringWidth(f))
			}
		}
	}
	if w := Width("\x1b]8;;x\x1b\\ab\x1b]8;;\x1b\\"); w != 2 {
		t.Errorf("Width of a hyperlink = %d, want 2", w)
	}
}

// TestCutAndPad: text already safe to print (here styled by the program)
// keeps its escape sequences, which take no width; Truncate and Fit are
// Cut and Pad of the sanitised text.
func TestCutAndPad(t *testing.T) {
	const red, reset = "\x1b[31m", "\x1b[0m"
	tests := []struct {
		in       string
		width    int
		cut, pad string
	}{
		{"short", 8, "short", "short   "},
		{red + "red" + reset + " text that is long", 8, red + "red" + reset + " tex…", red + "red" + reset + " tex…"},
		{red + "red" + reset, 5, red + "red" + reset, red + "red" + reset + "  "},
		{"日本語のテキスト", 7, "日本語…", "日本語…"},
		{"日本語のテキスト", 8, "日本語…", "日本語… "},
		{"anything", 0, "", ""},
	}
	for _, tt := range tests {
		if got := Cut(tt.in, tt.width); got != tt.cut {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.cut)
		}
		if got := Pad(tt.in, tt.width); got != tt.pad {
			t.Errorf("Pad(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.pad)
		}
		if got, want := Truncate(tt.in, tt.width), Cut(Sanitize(tt.in), tt.width); got != want {
			t.Errorf("Truncate(%q, %d) = %q, Cut of the sanitised text %q", tt.in, tt.width, got, want)
		}
		if got, want := Fit(tt.in, tt.width), Pad(Sanitize(tt.in), tt.width); got != want {
			t.Errorf("Fit(%q, %d) = %q, Pad of the sanitised text %q", tt.in, tt.width, got, want)
		}
	}
}
