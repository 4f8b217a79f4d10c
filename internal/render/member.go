package render

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// SearchText is what a filter matches, lower-cased once per snapshot.
func SearchText(mm *engine.Member) string {
	parts := []string{mm.Name, string(mm.State), mm.Holder(), mm.Node, mm.Message, MarksText(mm)}
	parts = append(parts, mm.Problems...)
	if mm.Claimed && mm.Claim != nil && mm.Claim.Expired {
		parts = append(parts, "expired")
	}
	if mm.Free {
		parts = append(parts, "free")
	}
	if mm.Claimed {
		parts = append(parts, "claimed")
	}
	return strings.ToLower(clean(strings.Join(parts, " ")))
}

// MarksText lists a member's markers, each a glyph and a word.
func MarksText(mm *engine.Member) string {
	var marks []string
	if mm.Drift {
		marks = append(marks, GlyphDrift+" drift")
	}
	if mm.Maintenance {
		if mm.MaintenanceStale {
			marks = append(marks, GlyphMaint+" stale maint")
		} else {
			marks = append(marks, GlyphMaint+" maint")
		}
	}
	if mm.AboveSize {
		marks = append(marks, GlyphAbove+" above size")
	}
	if mm.Blocked != "" {
		marks = append(marks, GlyphProblem+" blocked")
	}
	if mm.NodeDown != "" {
		marks = append(marks, GlyphBad+" node down")
	}
	if n := len(mm.Problems); n > 0 {
		marks = append(marks, GlyphProblem+" "+Plural(n, "problem", "problems"))
	}
	return strings.Join(marks, " ")
}

// ClaimCells returns the CLAIMED and LEFT cells and how urgent the claim is.
func ClaimCells(mm *engine.Member, now time.Time) (claimed, left string, level Level) {
	if !mm.Claimed || mm.Claim == nil {
		return "", "", LevelNone
	}
	c := mm.Claim
	if !c.Acquired.IsZero() {
		claimed = Duration(now.Sub(c.Acquired))
	}
	switch {
	case c.Expires.IsZero() || !now.Before(c.Expires):
		return claimed, GlyphBad + " expired", LevelError
	case c.Expires.Sub(now) <= engine.ExpiringSoon:
		return claimed, GlyphWarn + " " + Duration(c.Expires.Sub(now)), LevelWarn
	}
	return claimed, Duration(c.Expires.Sub(now)), LevelNone
}

// HolderCell is the HOLDER cell: the claim holder, the reconciler, or a dash.
func HolderCell(mm *engine.Member) string {
	switch {
	case mm.Maintenance:
		return GlyphMaint + " reconciler"
	case mm.Holder() == "":
		return GlyphNone
	}
	return mm.Holder()
}

// MemberLevel is how urgent a member's own state is.
func MemberLevel(mm *engine.Member) Level {
	switch {
	case mm.State == engine.StateFailed || len(mm.Problems) > 0:
		return LevelError
	case mm.State == engine.StateUnschedulable || mm.MaintenanceStale || mm.NodeDown != "":
		return LevelWarn
	}
	return LevelNone
}

// Diagnose is the engine's diagnosis of a member of v (which may be nil),
// with the Events read for a detail pane and the nodes when readable.
func Diagnose(v *engine.PoolView, mm *engine.Member, events []corev1.Event, nodes []*corev1.Node) engine.Diagnosis {
	var errs []string
	if v != nil {
		errs = v.Recorded.Errors
	}
	return engine.Diagnose(mm, events, nodes, errs)
}

// Reason is the short reason a table shows for a member that is not
// Ready and fine: the diagnosis, else the cluster's message, else problems.
func Reason(v *engine.PoolView, mm *engine.Member, nodes []*corev1.Node) string {
	if d := Diagnose(v, mm, nil, nodes); d.Reason != "" {
		return d.Reason
	}
	if mm.Message != "" {
		return mm.Message
	}
	return JoinNonEmpty("; ", mm.Problems...)
}
