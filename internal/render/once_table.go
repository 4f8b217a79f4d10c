// The --once and status table: the pools, then each pool with its members.

package render

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// writeTable writes the pools table, then each pool's members (writePool).
func writeTable(w io.Writer, r OnceReport, wide bool) {
	if r.Error != "" {
		fmt.Fprintln(w, sanitize.Sanitize(r.Error))
		return
	}
	if r.Contexts != nil {
		writeContexts(w, r.Contexts, wide)
		fmt.Fprintln(w)
	}
	if len(r.Pools) == 0 {
		fmt.Fprintf(w, "no pools in %s\n", sanitize.Sanitize(r.where()))
		return
	}
	fleet := r.AllNamespaces || len(r.Namespaces) > 0 || r.Contexts != nil
	clusters := r.Contexts != nil
	writePools(w, r, fleet, clusters, wide)
	for _, p := range r.Pools {
		writePool(w, p, fleet, clusters, wide)
	}
}

// writePools writes the pools table, a row per pool; in a fleet with the
// namespace, of several contexts with the context first.
func writePools(w io.Writer, r OnceReport, fleet, clusters, wide bool) {
	head := []string{"POOL", "BACKEND", "SIZE", "READY", "CLAIMED", "FREE", "UNSCHED", "DRIFT", "FAILED", "STATUS", "LAST RECONCILE"}
	if fleet {
		head = append([]string{"NAMESPACE"}, head...)
	}
	if clusters {
		head = append([]string{"CONTEXT"}, head...)
	}
	rows := [][]string{head}
	for _, p := range r.Pools {
		last := "never"
		if p.LastReconcile != nil {
			last = Ago(r.ObservedAt, *p.LastReconcile)
		}
		row := []string{p.Name, OrWord(p.Backend, "-"), fmt.Sprint(p.Size), fmt.Sprint(p.Ready), fmt.Sprint(p.Claimed),
			fmt.Sprint(p.Free), fmt.Sprint(p.Unschedulable), fmt.Sprint(p.Drifted), fmt.Sprint(p.Failed), p.Status, last}
		if fleet {
			row = append([]string{p.Namespace}, row...)
		}
		if clusters {
			row = append([]string{p.Context}, row...)
		}
		rows = append(rows, row)
	}
	writeRows(w, rows, wide)
}

// writePool writes one pool's section: its heading, problems and errors,
// then its members. A member's MESSAGE is the cluster's own words (the
// scheduler's message for an Unschedulable member), cut to its first
// sentence unless wide; DIAGNOSIS is engine.Diagnose's reason, in a column
// of its own so that it never stands in for the cluster's message.
func writePool(w io.Writer, p OncePool, fleet, clusters, wide bool) {
	name := p.Name
	if fleet {
		name = p.Namespace + "/" + p.Name
	}
	if clusters {
		name = p.Context + ": " + name
	}
	fmt.Fprintf(w, "\n%s (%s, image %s)\n", sanitize.Sanitize(name), sanitize.Sanitize(OrWord(p.Backend, "no definition")), sanitize.Sanitize(OrWord(p.Image, "-")))
	if iv := p.Isolation; iv != nil {
		fmt.Fprintf(w, "  isolation: NetworkPolicy %s %s\n", sanitize.Sanitize(iv.Policy), sanitize.Sanitize(IsolationText(*iv)))
	}
	if pv := p.Protection; pv != nil {
		fmt.Fprintf(w, "  protection: %s\n", sanitize.Sanitize(pv.Text()))
	}
	for _, h := range p.DrainHolds {
		fmt.Fprintf(w, "  drain: %s (%s)\n", sanitize.Sanitize(engine.DrainHoldText(h)), sanitize.Sanitize(strings.Join(h.Members, ", ")))
	}
	if p.elasticLine != "" {
		fmt.Fprintf(w, "  %s\n", sanitize.Sanitize(p.elasticLine))
	}
	if p.Rollout != nil {
		fmt.Fprintf(w, "  rollout: %s\n", sanitize.Sanitize(RolloutText(p.Name, p.Rollout)))
	}
	if p.trendLine != "" {
		fmt.Fprintf(w, "  trend: %s\n", p.trendLine) // sparkline gaps are spaces: not collapsed
	}
	for _, e := range p.Problems {
		fmt.Fprintf(w, "  problem: %s\n", sanitize.Sanitize(e))
	}
	for _, e := range p.Errors {
		fmt.Fprintf(w, "  error: %s\n", sanitize.Sanitize(e))
	}
	if len(p.Members) == 0 {
		fmt.Fprintln(w, "  no members")
		return
	}
	rows := [][]string{{"  MEMBER", "STATE", "HOLDER", "EXPIRES", "MARKS", "NODE", "DIAGNOSIS", "MESSAGE"}}
	for _, m := range p.Members {
		rows = append(rows, memberCells(m, wide))
	}
	writeRows(w, rows, wide)
}

// memberCells is a member's row of the --once table.
func memberCells(m OnceMember, wide bool) []string {
	expires := ""
	if m.ClaimExpires != nil {
		expires = m.ClaimExpires.UTC().Format(time.RFC3339)
	}
	if m.ClaimExpired {
		expires = "expired"
	}
	diagnosis := ""
	if m.Diagnosis != nil {
		diagnosis = m.Diagnosis.Reason
	}
	if m.row.Retry != "" {
		diagnosis = strings.TrimSuffix(m.row.Retry+"; "+diagnosis, "; ")
	}
	msg := m.headline
	if wide {
		msg = m.Message
	}
	if msg == "" {
		msg = m.NodeDown // the node's words, when the Pod has none
	}
	if msg == "" {
		msg = strings.Join(m.Problems, "; ")
	}
	return []string{"  " + m.Name, m.State, m.row.Holder.Plain(), expires, m.row.Marks.Long(), m.Node, diagnosis, msg}
}

// writeRows aligns sanitised cells on display width (the last column is not
// padded). Unless wide, a cell is cut at 60 columns and the last one at 200.
func writeRows(w io.Writer, rows [][]string, wide bool) {
	maxCell, maxLast := 60, 200
	if wide {
		maxCell, maxLast = math.MaxInt, math.MaxInt
	}
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row[:len(row)-1] {
			widths[i] = max(widths[i], min(sanitize.Width(c), maxCell))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		for i, c := range row {
			if i == len(row)-1 {
				b.WriteString(sanitize.Truncate(c, maxLast))
				break
			}
			b.WriteString(sanitize.Fit(c, widths[i]))
			b.WriteString("  ")
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
