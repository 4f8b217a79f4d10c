package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ---------------------------------------------------------------------------
// The report.

func median(vs []float64) float64 {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func report(w io.Writer, c config, results map[string][]run) bool {
	figure := func(tool string, f func(run) float64) (float64, string) {
		var vs []float64
		var each []string
		for _, r := range results[tool] {
			vs = append(vs, f(r))
			each = append(each, strconv.FormatFloat(f(r), 'f', 0, 64))
		}
		return median(vs), strings.Join(each, " ")
	}
	rows := []struct {
		what, unit string
		f          func(run) float64
		maxRatio   float64 // 0: no ratio target
		maxOurs    float64 // 0: no bound on ctpool-tui's figure
	}{
		{"first complete screen", "ms", func(r run) float64 { return ms(r.first) }, 0.3, 0},
		{fmt.Sprintf("RSS after %v idle", c.idle), "MiB", func(r run) float64 { return r.rssMiB }, 0.35, 0},
		{fmt.Sprintf("CPU over %v idle", c.idle), "ms", func(r run) float64 { return ms(r.idleCPU) }, 0.25, 0},
		{"claim on screen, after kubectl returned", "ms", func(r run) float64 { return ms(r.claimWall - r.kubectl) }, 0, 1000},
		{"claim on screen, from kubectl's start", "ms", func(r run) float64 { return ms(r.claimWall) }, 0, 0},
		{"CPU to show the claim", "ms", func(r run) float64 { return ms(r.claimCPU) }, 0, 0},
		{"kubectl create of the claim", "ms", func(r run) float64 { return ms(r.kubectl) }, 0, 0},
	}
	if c.churn > 0 {
		rows = append(rows, []struct {
			what, unit string
			f          func(run) float64
			maxRatio   float64
			maxOurs    float64
		}{
			{fmt.Sprintf("CPU under churn, %d changes/s for %v", c.churnRate, c.churn), "ms", func(r run) float64 { return ms(r.churnCPU) }, 0.25, 0},
			{"churn changes made", "/s", func(r run) float64 { return float64(r.churn.changes) / r.churn.elapsed.Seconds() }, 0, 0},
			{"settled after the churn", "ms", func(r run) float64 { return ms(r.churnSettled) }, 0, 0},
		}...)
	}
	fmt.Fprintf(w, "\nctpool-tui vs k9s: one pool of %d members (%d objects) in %s, %dx%d, %d rounds each (medians; each run in brackets)\n",
		c.members, 1+2*c.members+claims(c), c.namespace, c.cols, c.rows, c.rounds)
	fmt.Fprintf(w, "  %-44s %-24s %-24s %-8s %-14s %s\n", "", "ctpool-tui", "k9s", "ratio", "target", "")
	ok := true
	for _, row := range rows {
		ours, oursEach := figure("ctpool-tui", row.f)
		theirs, theirsEach := figure("k9s", row.f)
		ratio := "-"
		if theirs > 0 {
			ratio = fmt.Sprintf("%.2fx", ours/theirs)
		}
		target, verdict := "", ""
		switch {
		case row.maxRatio > 0:
			target = fmt.Sprintf("<= %.2fx", row.maxRatio)
			verdict = "PASS"
			if theirs <= 0 || ours/theirs > row.maxRatio {
				verdict, ok = "FAIL", false
			}
		case row.maxOurs > 0:
			target = fmt.Sprintf("<= %.0f %s", row.maxOurs, row.unit)
			verdict = "PASS"
			for _, r := range results["ctpool-tui"] {
				if row.f(r) > row.maxOurs {
					verdict, ok = "FAIL", false
				}
			}
		default:
			verdict = "info"
		}
		fmt.Fprintf(w, "  %-44s %-24s %-24s %-8s %-14s %s\n", row.what+" ("+row.unit+")",
			fmt.Sprintf("%.0f [%s]", ours, oursEach), fmt.Sprintf("%.0f [%s]", theirs, theirsEach), ratio, target, verdict)
	}
	var k9sSwitch []float64
	for _, r := range results["k9s"] {
		k9sSwitch = append(k9sSwitch, ms(r.claimsBeforeScreen))
	}
	fmt.Fprintf(w, "  (k9s is switched to its leases view before the claim; it showed the %d claims %.0f ms after the switch, median)\n",
		claims(c), median(k9sSwitch))
	return ok
}
