package render

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Row is one member as a table shows it: sanitised text without styling,
// its marks and how urgent it is. The dashboard styles its cells; --once
// prints them. Both take it from MemberRow, so that they say the same.
type Row struct {
	Name   string
	State  string
	Holder Holder
	Claim  Claim // zero when the member is not claimed
	Marks  Marks
	Node   string
	Age    string // since the member was created ("" unknown)
	// Retry is a failing member's replacement backoff: "retry in 4m",
	// "retry due" once it ended ("" when the member has none).
	Retry string
	// Level is the worse of the member's own (MemberLevel) and its claim's.
	Level Level
}

// MemberRow is mm's row at now.
func MemberRow(mm *engine.Member, now time.Time) Row {
	r := Row{
		Name: clean(mm.Name), State: string(mm.State), Holder: HolderOf(mm), Claim: ClaimOf(mm, now),
		Marks: MarksOf(mm), Node: clean(mm.Node), Level: MemberLevel(mm),
	}
	if !mm.Created.IsZero() {
		r.Age = Duration(now.Sub(mm.Created))
	}
	r.Level = max(r.Level, r.Claim.Level)
	r.Retry = RetryOf(mm, now)
	return r
}

// RetryOf is mm's replacement backoff at now, in words: "retry in 4m", or
// "retry due" once its wait ended (the next reconcile rebuilds it); "" when
// the member is not failing under a backoff.
func RetryOf(mm *engine.Member, now time.Time) string {
	if mm.Backoff == nil || mm.State != engine.StateFailed || mm.Claimed {
		return ""
	}
	if left := mm.Backoff.RetryAt.Sub(now); left > 0 {
		return "retry in " + Duration(left)
	}
	return "retry due"
}

// SearchText is what a filter matches, lower-cased once per snapshot.
func SearchText(mm *engine.Member) string {
	parts := []string{mm.Name, string(mm.State), mm.Holder(), mm.Node, mm.Message, MarksText(mm)}
	parts = append(parts, mm.Problems...)
	if mm.Claim != nil && mm.Claim.Expired {
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

// Mark is one marker a member carries: its glyph and its words, Short for
// the dashboard's narrow MARKS column, Long for the --once table.
type Mark struct {
	Glyph, Short, Long string
}

// The marks, in the order a member lists them (a member with problems also
// gets the mark problemsMark makes).
var (
	markDrift      = Mark{Glyph: GlyphDrift, Short: "drift", Long: "drift"}
	markMaint      = Mark{Glyph: GlyphMaint, Short: "maint", Long: "maintenance"}
	markStaleMaint = Mark{Glyph: GlyphMaint, Short: "stale maint", Long: "stale maintenance"}
	markAboveSize  = Mark{Glyph: GlyphAbove, Short: "above size", Long: "above size"}
	markBlocked    = Mark{Glyph: GlyphProblem, Short: "blocked", Long: "blocked"}
	markNodeDown   = Mark{Glyph: GlyphBad, Short: "node down", Long: "node down"}
	// markDraining: the member's node is cordoned (a drain has begun): a
	// free member is evicted, a claimed one holds the drain.
	markDraining = Mark{Glyph: GlyphWarn, Short: "node draining", Long: "node draining"}
)

// problemsMark is the mark of a member with n problems.
func problemsMark(n int) Mark {
	w := Plural(n, "problem", "problems")
	return Mark{Glyph: GlyphProblem, Short: w, Long: w}
}

// Marks are a member's marks, in order.
type Marks []Mark

// MarksOf lists mm's marks.
func MarksOf(mm *engine.Member) Marks {
	var marks Marks
	if mm.Drift {
		marks = append(marks, markDrift)
	}
	if mm.InMaintenance() {
		if mm.HoldStale() {
			marks = append(marks, markStaleMaint)
		} else {
			marks = append(marks, markMaint)
		}
	}
	if mm.AboveSize {
		marks = append(marks, markAboveSize)
	}
	if mm.Blocked != "" {
		marks = append(marks, markBlocked)
	}
	if mm.NodeDown != "" {
		marks = append(marks, markNodeDown)
	}
	if mm.NodeDraining {
		marks = append(marks, markDraining)
	}
	if n := len(mm.Problems); n > 0 {
		marks = append(marks, problemsMark(n))
	}
	return marks
}

// Short is the dashboard's MARKS cell: each mark's glyph and short word.
func (m Marks) Short() string {
	var b strings.Builder
	for i, mk := range m {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(mk.Glyph + " " + mk.Short)
	}
	return b.String()
}

// Long is the --once table's MARKS cell: the long words, comma-separated.
func (m Marks) Long() string {
	var b strings.Builder
	for i, mk := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(mk.Long)
	}
	return b.String()
}

// MarksText is mm's MARKS cell as the dashboard shows it (Marks.Short).
func MarksText(mm *engine.Member) string { return MarksOf(mm).Short() }

// Claim is a claim's cells: how long ago it was taken, how long it has
// left, and how urgent that is.
type Claim struct {
	Claimed string // since the claim was taken ("" unknown)
	Left    string // "1h05m"; "⚠ 4m" when expiring soon; "✗ expired"
	Level   Level  // LevelWarn expiring soon, LevelError expired
	// Expired: the claim has no expiry or it has passed.
	Expired bool
}

// ClaimOf is mm's claim at now (zero when mm is not claimed).
func ClaimOf(mm *engine.Member, now time.Time) Claim {
	if mm.Claim == nil {
		return Claim{}
	}
	c := mm.Claim
	var out Claim
	if !c.Acquired.IsZero() {
		out.Claimed = Duration(now.Sub(c.Acquired))
	}
	switch {
	case c.Expires.IsZero() || !now.Before(c.Expires):
		out.Left, out.Level, out.Expired = GlyphBad+" expired", LevelError, true
	case c.Expires.Sub(now) <= engine.ExpiringSoon:
		out.Left, out.Level = GlyphWarn+" "+Duration(c.Expires.Sub(now)), LevelWarn
	default:
		out.Left = Duration(c.Expires.Sub(now))
	}
	return out
}

// Holder is who holds a member: a user's claim, the reconciler (a
// maintenance Lease), or nobody.
type Holder struct {
	// Glyph is GlyphMaint for the reconciler, GlyphNone for nobody, and ""
	// for a user.
	Glyph string
	// Name is the claim's identity (sanitised), "reconciler", or "".
	Name string
}

// HolderOf is who holds mm.
func HolderOf(mm *engine.Member) Holder {
	switch {
	case mm.InMaintenance():
		return Holder{Glyph: GlyphMaint, Name: "reconciler"}
	case mm.Holder() == "":
		return Holder{Glyph: GlyphNone}
	}
	return Holder{Name: clean(mm.Holder())}
}

// Cell is the dashboard's HOLDER cell: "alice@example.com", "⚙ reconciler", "—".
func (h Holder) Cell() string {
	switch {
	case h.Glyph == "":
		return h.Name
	case h.Name == "":
		return h.Glyph
	}
	return h.Glyph + " " + h.Name
}

// Plain is the --once table's HOLDER cell, without glyphs: the name, or "-".
func (h Holder) Plain() string { return OrWord(h.Name, "-") }

// HolderCell is mm's HOLDER cell as the dashboard shows it (Holder.Cell).
func HolderCell(mm *engine.Member) string { return HolderOf(mm).Cell() }

// MemberLevel is how urgent a member's own state is.
func MemberLevel(mm *engine.Member) Level {
	switch {
	case mm.State == engine.StateFailed || len(mm.Problems) > 0:
		return LevelError
	case mm.State == engine.StateUnschedulable || (mm.InMaintenance() && mm.HoldStale()) || mm.NodeDown != "":
		return LevelWarn
	}
	return LevelNone
}

// Diagnose is the engine's diagnosis of a member of v (which may be nil),
// with the Events read for a detail pane and the nodes when readable, its
// fix pointing at actions by hints (none for --once).
func Diagnose(v *engine.PoolView, mm *engine.Member, events []corev1.Event, nodes []*corev1.Node, hints engine.Hints) engine.Diagnosis {
	var errs []string
	if v != nil {
		errs = v.Recorded.Errors
	}
	return engine.DiagnoseWith(mm, events, nodes, errs, hints)
}

// Reason is the short reason a table shows for a member that is not
// Ready and fine: the diagnosis, else the cluster's message, else problems.
func Reason(v *engine.PoolView, mm *engine.Member, nodes []*corev1.Node) string {
	if d := Diagnose(v, mm, nil, nodes, engine.Hints{}); d.Reason != "" {
		return d.Reason
	}
	if mm.Message != "" {
		return mm.Message
	}
	return JoinNonEmpty("; ", mm.Problems...)
}
