package controller

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// docNames are the metric names of a table cell of docs/operations.md:
// `a_b_c`, `_d` is a_b_c and a_b_d (an abbreviation replaces as many of the
// first name's last words as it has).
func docNames(cell string) []string {
	var out []string
	for _, part := range strings.Split(cell, ",") {
		name := strings.Trim(strings.TrimSpace(part), "`")
		if strings.HasPrefix(name, "_") && len(out) > 0 {
			words := strings.Split(out[0], "_")
			name = strings.Join(words[:len(words)-strings.Count(name, "_")], "_") + name
		}
		out = append(out, name)
	}
	return out
}

// TestMetricsDocumented: the metrics table of docs/operations.md lists every
// metric the controller registers (Metrics) with its type and labels, and
// nothing else; its table of deprecated names lists the aliases.
func TestMetricsDocumented(t *testing.T) {
	raw, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ typ, labels string }
	documented, deprecated := map[string]row{}, map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`ctpool_") {
			continue
		}
		names := docNames(cells[1])
		if len(cells) == 4 { // | deprecated | use |
			for _, n := range names {
				deprecated[n] = true
			}
			continue
		}
		for _, n := range names {
			documented[n] = row{strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3])}
		}
	}
	if len(documented) == 0 || len(deprecated) == 0 {
		t.Fatalf("no metrics table in docs/operations.md: %d metrics, %d deprecated", len(documented), len(deprecated))
	}
	registered := map[string]bool{}
	for _, m := range Metrics() {
		registered[m.Name] = true
		if m.Deprecated {
			if !deprecated[m.Name] {
				t.Errorf("the deprecated %s is not in docs/operations.md's table of deprecated names", m.Name)
			}
			continue
		}
		r, ok := documented[m.Name]
		if !ok {
			t.Errorf("%s is not in docs/operations.md's metrics table", m.Name)
			continue
		}
		if want := (row{m.Type, strings.Join(m.Labels, ", ")}); r != want {
			t.Errorf("docs/operations.md: %s is a %s with the labels %q; it is registered as a %s with %q", m.Name, r.typ, r.labels, want.typ, want.labels)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(documented)) {
		if !registered[n] || deprecated[n] {
			t.Errorf("docs/operations.md's metrics table lists %s, which the controller does not register", n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(deprecated)) {
		if !registered[n] {
			t.Errorf("docs/operations.md's table of deprecated names lists %s, which the controller does not register", n)
		}
	}
}
