package kubetest

import (
	"strings"
	"testing"
)

// TableCell is member's cell in the column titled title of a member table
// as status and --once print it: from the column's start to the next
// column's, or to the end of the row for the last column.
func TableCell(t testing.TB, out, member, title string) string {
	t.Helper()
	var header string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "  MEMBER "):
			header = line
		case header != "" && strings.HasPrefix(line, "  "+member+" "):
			start := strings.Index(header, " "+title) + 1
			if start == 0 {
				t.Fatalf("no column %s in %q", title, header)
			}
			end := len(line)
			if next := strings.IndexFunc(header[start+len(title):], func(r rune) bool { return r != ' ' }); next >= 0 {
				end = min(start+len(title)+next, len(line))
			}
			if start > len(line) {
				return ""
			}
			return strings.TrimSpace(line[start:end])
		}
	}
	t.Fatalf("no row for %s in:\n%s", member, out)
	return ""
}
