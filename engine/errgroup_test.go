package engine

import (
	"fmt"
	"strings"
	"testing"
)

func TestGroupErrors(t *testing.T) {
	canceled := func(from, to int) []string {
		var out []string
		for n := from; n <= to; n++ {
			out = append(out, fmt.Sprintf("delete big-%d: context canceled", n))
		}
		return out
	}
	cases := []struct {
		name string
		in   []string
		want []string
	}{
		{"none", nil, nil},
		{"one error stays as it is", []string{"create desk-3: create PVC: boom"}, []string{"create desk-3: create PVC: boom"}},
		{"one cause of many members, in their order", canceled(8100, 9999),
			[]string{"delete 1,900 members: context canceled (big-8100, big-8101, big-8102 … big-9999)"}},
		{"a few members are all named", []string{"start desk-10: no room", "start desk-2: no room", "start desk-1: no room"},
			[]string{"start 3 members: no room (desk-1, desk-2, desk-10)"}},
		{"the member's name is taken out of the cause", []string{
			`create desk-1: create Pod: pods "desk-1" already exists`,
			`create desk-2: create Pod: pods "desk-2" already exists`,
		}, []string{`create 2 members: create Pod: pods "<member>" already exists (desk-1, desk-2)`}},
		{"a longer name that holds it is kept", []string{
			"delete desk-1: PVC desk-1-data and desk-10 stuck",
			"delete desk-2: PVC desk-2-data and desk-10 stuck",
		}, []string{"delete 2 members: PVC <member>-data and desk-10 stuck (desk-1, desk-2)"}},
		{"steps and causes apart, in the order met", []string{
			"create desk-1: boom", "delete desk-5: boom", "create desk-2: boom", "create desk-3: other",
		}, []string{"create 2 members: boom (desk-1, desk-2)", "delete desk-5: boom", "create desk-3: other"}},
		{"errors of no member", []string{"status: re-read pool: timeout", "spec: invalid size", "status: re-read pool: timeout"},
			[]string{"status: re-read pool: timeout (2 times)", "spec: invalid size"}},
		{"a grouped line is left as it is", []string{"delete 1,900 members: context canceled (big-8100 … big-9999)"},
			[]string{"delete 1,900 members: context canceled (big-8100 … big-9999)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, g := range GroupErrors(c.in) {
				got = append(got, g.String())
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", c.want) {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestErrorSummary(t *testing.T) {
	var errs []string
	for n := 1; n <= 1951; n++ {
		errs = append(errs, fmt.Sprintf("delete big-%d: context canceled", n))
	}
	for n := 1; n <= 15; n++ {
		errs = append(errs, fmt.Sprintf("create big-%d: cause %d", n, n))
	}
	s := ErrorSummary(errs, 10)
	if len(s) > 1000 || !strings.HasPrefix(s, "delete 1,951 members: context canceled (big-1, big-2, big-3 … big-1951); create big-1: cause 1") ||
		!strings.HasSuffix(s, "; … and 6 more errors") {
		t.Errorf("summary of %d bytes: %s", len(s), s)
	}
	se := &StepError{Errors: errs}
	if msg := se.Error(); len(msg) > 1000 || !strings.Contains(msg, "1,966 steps failed: delete 1,951 members") {
		t.Errorf("StepError of %d bytes: %.300s", len(msg), msg)
	}
}

func TestFormatCount(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1900: "1,900", 99999: "99,999", 1234567: "1,234,567"} {
		if got := formatCount(n); got != want {
			t.Errorf("formatCount(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMentionsMember(t *testing.T) {
	cases := []struct {
		e, member string
		want      bool
	}{
		{"create desk-1: boom", "desk-1", true},
		{"create desk-10: boom", "desk-1", false},
		{"create 2 members: boom (desk-1, desk-2)", "desk-2", true},
		{"create 2 members: boom (desk-1, desk-2)", "desk-3", false},
		{"delete 1,900 members: context canceled (big-8100, big-8101, big-8102 … big-9999)", "big-9999", true},
		{"delete 1,900 members: context canceled (big-8100, big-8101, big-8102 … big-9999)", "big-8102", true},
		{"delete 1,900 members: context canceled (big-8100, big-8101, big-8102 … big-9999)", "big-9000", false},
		{"status: re-read pool: timeout (2 times)", "desk-1", false},
	}
	for _, c := range cases {
		if got := MentionsMember(c.e, c.member); got != c.want {
			t.Errorf("MentionsMember(%q, %q) = %v, want %v", c.e, c.member, got, c.want)
		}
	}
}
