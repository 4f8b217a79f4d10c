//go:build e2e

package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// The colours the dashboard writes follow the terminal: 24-bit where
// COLORTERM says so, 16 colours for TERM=xterm-16color, none at all with
// NO_COLOR. The screen reads the same in each.
func TestE2EColours(t *testing.T) {
	env := kubetest.Require(t)
	for _, tc := range []struct {
		name string
		env  []string
		// The colour sequences allowed and required.
		trueColour, colour256, colour16 bool
	}{
		{"truecolor", []string{"TERM=xterm-256color", "COLORTERM=truecolor"}, true, false, false},
		{"xterm-16color", []string{"TERM=xterm-16color"}, false, false, true},
		{"NO_COLOR", []string{"TERM=xterm-256color", "COLORTERM=truecolor", "NO_COLOR=1"}, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			term := start(t, 100, 24, append(tc.env, "KUBECONFIG="+kubeconfig(env, "admin")), "-n", env.Namespace)
			// The pools list with the connection's state: the header, the
			// empty namespace's word and the key help are all drawn.
			term.waitText(startTimeout, "ns: "+env.Namespace, "● live", "q quit")
			term.waitScreen("the empty namespace explained", keyTimeout, func(rows []string) bool { return rowWith(rows, "no pools") >= 0 })
			term.send("q")
			if err := term.wait(exitTimeout); err != nil {
				t.Fatalf("the dashboard ended with %v; screen:\n%s", err, dump(term.screen()))
			}
			checkRestored(t, term)
			got := colours(term.rawSince(0))
			t.Logf("colour parameters written: %v", got)
			for _, c := range []struct {
				kind string
				n    int
				want bool
			}{{"24-bit", got.trueColour, tc.trueColour}, {"256-colour", got.colour256, tc.colour256}, {"16-colour", got.colour16, tc.colour16}} {
				if (c.n > 0) != c.want {
					t.Errorf("%d %s colour parameters written, want them %s", c.n, c.kind, map[bool]string{true: "present", false: "absent"}[c.want])
				}
			}
		})
	}
}

// colourCount counts the colour parameters of SGR sequences by kind.
type colourCount struct{ trueColour, colour256, colour16 int }

var sgr = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// colours parses every SGR sequence of out: 38/48/58;2;r;g;b (or with
// colons) is 24-bit, 38/48/58;5;n 256-colour, 30–37, 40–47, 90–97 and
// 100–107 the 16 colours.
func colours(out []byte) colourCount {
	var c colourCount
	for _, m := range sgr.FindAllSubmatch(out, -1) {
		params := strings.FieldsFunc(string(m[1]), func(r rune) bool { return r == ';' || r == ':' })
		for i := 0; i < len(params); i++ {
			n, err := strconv.Atoi(params[i])
			if err != nil {
				continue
			}
			switch {
			case n == 38 || n == 48 || n == 58:
				if i+1 < len(params) && params[i+1] == "2" {
					c.trueColour++
					i += 4
				} else if i+1 < len(params) && params[i+1] == "5" {
					c.colour256++
					i += 2
				}
			case n >= 30 && n <= 37, n >= 40 && n <= 47, n >= 90 && n <= 97, n >= 100 && n <= 107:
				c.colour16++
			}
		}
	}
	return c
}
