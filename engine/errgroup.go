package engine

import (
	"sort"
	"strconv"
	"strings"
)

// ErrorGroup is the errors of one cause: the same step failing the same way
// for many members ("delete 1,900 members: context canceled (big-8100 …
// big-9999)").
type ErrorGroup struct {
	// Step is the step that failed ("" for an error of no member).
	Step string
	// Cause is the error with the member's name taken out ("<member>" where
	// it was), or the whole error when it is of no member.
	Cause string
	// Members are the members that failed so, in their order (big-2 before
	// big-10); empty for an error of no member.
	Members []string
	// Count is the number of errors in the group.
	Count int
	// first is the error itself, shown when the group has only it.
	first string
}

// GroupErrors groups errors of the form "<step> <member>: <cause>" (a
// reconcile's errors) by step and cause, the member's name taken out of the
// cause; other errors are a group each, identical ones together. The groups
// are in the order of their first error.
func GroupErrors(errs []string) []ErrorGroup {
	var groups []ErrorGroup
	at := map[[2]string]int{}
	for _, e := range errs {
		step, member, cause, ok := splitMemberError(e)
		key := [2]string{"", e}
		if ok {
			cause = stripName(cause, member)
			key = [2]string{step, cause}
		} else {
			step, cause = "", e
		}
		i, seen := at[key]
		if !seen {
			i = len(groups)
			at[key] = i
			groups = append(groups, ErrorGroup{Step: step, Cause: cause, first: e})
		}
		g := &groups[i]
		g.Count++
		if ok {
			g.Members = append(g.Members, member)
		}
	}
	for i := range groups {
		sortMemberNames(groups[i].Members)
	}
	return groups
}

// String is the group on one line: the error itself when it is alone,
// else "<step> <n> members: <cause> (<first three> … <last>)".
func (g ErrorGroup) String() string {
	switch {
	case g.Count == 1:
		return g.first
	case len(g.Members) == 0:
		return g.Cause + " (" + formatCount(g.Count) + " times)"
	}
	names := g.Members
	var list string
	if len(names) <= 4 {
		list = strings.Join(names, ", ")
	} else {
		list = strings.Join(names[:3], ", ") + " … " + names[len(names)-1]
	}
	return g.Step + " " + formatCount(len(names)) + " members: " + g.Cause + " (" + list + ")"
}

// SummarizeErrors groups errs (GroupErrors) into at most max lines; cut is
// the number of errors in the groups left out.
func SummarizeErrors(errs []string, max int) (lines []string, cut int) {
	for i, g := range GroupErrors(errs) {
		if i >= max {
			cut += g.Count
			continue
		}
		lines = append(lines, g.String())
	}
	return lines, cut
}

// ErrorSummary is errs grouped by cause on one line: at most max groups,
// joined with "; ", and how many errors are left out.
func ErrorSummary(errs []string, max int) string {
	lines, cut := SummarizeErrors(errs, max)
	s := strings.Join(lines, "; ")
	if cut > 0 {
		s += "; … and " + formatCount(cut) + " more errors"
	}
	return s
}

// splitMemberError splits "<step> <member>: <cause>".
func splitMemberError(e string) (step, member, cause string, ok bool) {
	head, cause, found := strings.Cut(e, ": ")
	if !found {
		return "", "", "", false
	}
	step, member, found = strings.Cut(head, " ")
	if !found || step == "" || member == "" || strings.ContainsAny(member, " ,") {
		return "", "", "", false
	}
	for i := 0; i < len(step); i++ {
		if c := step[i]; c < 'a' || c > 'z' {
			return "", "", "", false
		}
	}
	return step, member, cause, true
}

// stripName replaces each whole occurrence of name in s with "<member>" (not
// one inside a longer name: desk-1 in desk-10 or mydesk-1).
func stripName(s, name string) string {
	if !strings.Contains(s, name) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, name)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(name)
		whole := (i == 0 || !nameByte(s[i-1])) && (end == len(s) || !isAlnum(s[end]))
		if whole {
			b.WriteString(s[:i])
			b.WriteString("<member>")
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

func nameByte(c byte) bool { return isAlnum(c) || c == '-' || c == '.' }

// sortMemberNames sorts names by their text with the trailing numbers
// compared as numbers (big-2 before big-10).
func sortMemberNames(names []string) {
	split := func(s string) (string, int, bool) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		if i == len(s) || len(s)-i > 9 {
			return s, 0, false
		}
		n, _ := strconv.Atoi(s[i:])
		return s[:i], n, true
	}
	less := func(a, b string) bool {
		pa, na, oka := split(a)
		pb, nb, okb := split(b)
		if oka && okb && pa == pb {
			if na != nb {
				return na < nb
			}
			return a < b
		}
		return a < b
	}
	sort.SliceStable(names, func(i, j int) bool { return less(names[i], names[j]) })
}

// formatCount writes n with a comma between thousands (1,900).
func formatCount(n int) string {
	s := strconv.Itoa(n)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// MentionsMember reports whether the error e is of member: "<step>
// <member>: <cause>", or a group (ErrorGroup.String) that names it.
func MentionsMember(e, member string) bool {
	if _, m, _, ok := splitMemberError(e); ok {
		return m == member
	}
	if !strings.HasSuffix(e, ")") {
		return false
	}
	open := strings.LastIndex(e, " (")
	if open < 0 {
		return false
	}
	for _, part := range strings.Split(e[open+2:len(e)-1], ", ") {
		for _, name := range strings.Split(part, " … ") {
			if name == member {
				return true
			}
		}
	}
	return false
}
