package render

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestASCII(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"● live  ◌ syncing  ✗ error  ✓ ok  ⚠ low  ⟳ drift  ⚙ maint  ↑ above  ▸ desk  — …", "* live  o syncing  x error  v ok  ! low  ~ drift  % maint  ^ above  > desk  - ."},
		{"┌ desk ──┐\n│ 1 free │\n└────────┘", "+ desk --+\n| 1 free |\n+--------+"},
		{"⣾ reconcile desk…", ". reconcile desk."},
		{"▁▂▃▄▅▆▇█", "_.:-=+*#"},
		{"\x1b[1;31m✗ failed\x1b[0m", "\x1b[1;31mx failed\x1b[0m"},
		{"josé 東京", "jos? ????"},
	} {
		got := ASCII(tc.in)
		if got != tc.want {
			t.Errorf("ASCII(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for i := range got {
			if got[i] >= 0x80 {
				t.Errorf("ASCII(%q) left %q", tc.in, got)
				break
			}
		}
		if ansi.StringWidth(got) != ansi.StringWidth(tc.in) {
			t.Errorf("ASCII(%q): width %d, was %d", tc.in, ansi.StringWidth(got), ansi.StringWidth(tc.in))
		}
	}
}
