package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// TestRecordedErrorsAreGroupedByCause: a status of an earlier version lists
// every error (1,951 of one cause here); the dashboard shows one line per
// cause with a count and a few members, and how many it left out.
func TestRecordedErrorsAreGroupedByCause(t *testing.T) {
	var errs []string
	for n := 1; n <= 1951; n++ {
		errs = append(errs, fmt.Sprintf("delete big-%d: context canceled", n))
	}
	for n := 1; n <= 10; n++ {
		errs = append(errs, fmt.Sprintf("create big-%d: cause %d", n, n))
	}
	cases := []struct {
		name string
		rec  engine.Status
		want []string
	}{
		{"none", engine.Status{}, nil},
		{"one", engine.Status{Errors: []string{"create big-1: boom"}}, []string{"create big-1: boom"}},
		{"many of one cause and more causes than lines", engine.Status{Errors: errs}, []string{
			"delete 1,951 members: context canceled (big-1, big-2, big-3 … big-1951)",
			"create big-1: cause 1", "create big-2: cause 2", "create big-3: cause 3", "create big-4: cause 4",
			"create big-5: cause 5", "create big-6: cause 6", "create big-7: cause 7", "… and 3 more errors",
		}},
		{"the ones the status left out are counted", engine.Status{Errors: []string{"create big-1: boom"}, ErrorsCut: 40},
			[]string{"create big-1: boom", "… and 40 more errors"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := &engine.PoolView{Name: "big", Recorded: c.rec}
			got := recordedErrors(v)
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", c.want) {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
			if len(c.want) > 0 {
				if line := poolExplanation(v); !strings.Contains(line, c.want[0]) || len(line) > 2000 {
					t.Errorf("pool line of %d bytes: %.200s", len(line), line)
				}
			}
		})
	}
}
