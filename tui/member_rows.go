package tui

import (
	"cmp"
	"slices"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// sortKey is a column the members view can sort by (S cycles).
type sortKey int

const (
	sortIndex sortKey = iota
	sortState
	sortHolder
	sortLeft
	sortNode
	sortAge
	numSortKeys
)

func (k sortKey) String() string {
	switch k {
	case sortState:
		return "state"
	case sortHolder:
		return "holder"
	case sortLeft:
		return "time left"
	case sortNode:
		return "node"
	case sortAge:
		return "age"
	}
	return "member"
}

func (l *membersView) sortRows() {
	if l.sort == sortIndex {
		return // Observe already orders by index
	}
	slices.SortFunc(l.rows, l.cmp)
}

// cmp orders members i and j (indices into all) by the sort key, then by
// their place: a total order, so that a row's place can be searched.
func (l *membersView) cmp(i, j int) int {
	if i == j {
		return 0
	}
	if less, decided := l.less(&l.all[i], &l.all[j]); decided {
		if less {
			return -1
		}
		return 1
	}
	return cmp.Compare(i, j)
}

// less compares two members by the sort key; decided is false when the
// key does not tell them apart.
func (l *membersView) less(a, b *engine.Member) (less, decided bool) {
	switch l.sort {
	case sortState:
		ra, rb := stateRank(a.State), stateRank(b.State)
		return ra < rb, ra != rb
	case sortHolder:
		return lessEmptyLast(a.Holder(), b.Holder())
	case sortLeft:
		ea, eb := expiry(a), expiry(b)
		switch {
		case ea.IsZero() && eb.IsZero():
			return false, false
		case ea.IsZero() || eb.IsZero():
			return eb.IsZero(), true
		}
		return ea.Before(eb), !ea.Equal(eb)
	case sortNode:
		return lessEmptyLast(a.Node, b.Node)
	case sortAge:
		ca, cb := a.Created, b.Created
		switch {
		case ca.IsZero() && cb.IsZero():
			return false, false
		case ca.IsZero() || cb.IsZero():
			return cb.IsZero(), true
		}
		return ca.Before(cb), !ca.Equal(cb)
	}
	return false, false
}

func lessEmptyLast(a, b string) (bool, bool) {
	switch {
	case a == b:
		return false, false
	case a == "":
		return false, true
	case b == "":
		return true, true
	}
	return a < b, true
}

// stateRank orders states worst first.
func stateRank(s engine.State) int {
	switch s {
	case engine.StateFailed:
		return 0
	case engine.StateUnschedulable:
		return 1
	case engine.StateTerminating:
		return 2
	case engine.StateMissing:
		return 3
	case engine.StateStopped:
		return 4
	case engine.StateStarting:
		return 5
	}
	return 6
}

func expiry(mm *engine.Member) time.Time {
	if mm.Claim != nil {
		return mm.Claim.Expires
	}
	return time.Time{}
}

// marksText lists a member's markers, each a glyph and a word.
func marksText(mm *engine.Member) string { return render.MarksText(mm) }

// memberLevel is how urgent a member's own state is.
func memberLevel(mm *engine.Member) int { return int(render.MemberLevel(mm)) }
