package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// TestMemberColumns: every column of the set has a unique id and header, a
// width rule and a cell; a narrow screen drops columns by rank (MESSAGE
// first, never MEMBER, STATE, HOLDER or LEFT), and each fitted column shows
// its own cell.
func TestMemberColumns(t *testing.T) {
	ids, headers := map[memberColID]bool{}, map[string]bool{}
	for _, d := range memberCols {
		if d.id == "" || ids[d.id] || d.header == "" || headers[d.header] || d.layout == nil || d.cell == nil {
			t.Errorf("column %q (%s): an id and a header of its own, a layout and a cell are needed", d.id, d.header)
		}
		ids[d.id], headers[d.header] = true, true
	}

	mm := engine.Member{Name: "desk-1", State: engine.StateReady, Claimed: true, Node: "node-a", Drift: true, Created: t0.Add(-time.Hour),
		Claim: &engine.Claim{Holder: "alice@example.com", Acquired: t0.Add(-5 * time.Minute), Expires: t0.Add(2 * time.Hour)}}
	var counts widthCounts
	counts.add(&mm, 1)
	widths := counts.widths()
	r := memberCells{Row: render.MemberRow(&mm, t0), message: "a message"}
	want := map[memberColID]string{
		"member": "desk-1", "state": "Ready", "holder": "alice@example.com", "claimed": "5m", "left": "2h",
		"marks": "⟳ drift", "node": "node-a", "age": "1h", "message": "a message",
	}
	cases := []struct {
		width int
		ids   []memberColID
	}{
		{200, []memberColID{"member", "state", "holder", "claimed", "left", "marks", "node", "age", "message"}},
		{85, []memberColID{"member", "state", "holder", "claimed", "left", "marks", "node", "age"}},
		{60, []memberColID{"member", "state", "holder", "left", "marks"}},
		{40, []memberColID{"member", "state", "holder", "left"}},
	}
	for _, c := range cases {
		cols := memberColumns(c.width, widths)
		var got []memberColID
		for _, col := range cols {
			got = append(got, memberCols[col.of].id)
		}
		if strings.Join(idStrings(got), ",") != strings.Join(idStrings(c.ids), ",") {
			t.Errorf("width %d: columns %v, want %v", c.width, got, c.ids)
		}
		line := memberLine(cols, &r)
		for _, col := range cols {
			d := memberCols[col.of]
			cell := sanitize.Fit(want[d.id], col.width)
			if col.right {
				cell = sanitize.FitRight(want[d.id], col.width)
			}
			if col.title != d.header || !strings.Contains(line, cell) {
				t.Errorf("width %d: column %s (%s) does not show %q: %q", c.width, d.id, col.title, want[d.id], line)
			}
		}
	}
}

func idStrings(ids []memberColID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

// TestWidthCounts: the measured widths follow members added and taken away;
// fixed columns measure nothing.
func TestWidthCounts(t *testing.T) {
	a := engine.Member{Name: "desk-1", Node: "n"}
	b := engine.Member{Name: "a-much-longer-member-name", Node: "node-with-a-long-name"}
	var c widthCounts
	c.add(&a, 1)
	c.add(&b, 1)
	c.add(&b, -1)
	got := c.widths()
	for i, d := range memberCols {
		want := 0
		switch d.id {
		case "member":
			want = len("desk-1")
		case "node":
			want = 1
		case "holder":
			want = 1 // —, nobody
		}
		if got[i] != want {
			t.Errorf("%s: width %d, want %d", d.id, got[i], want)
		}
	}
}
