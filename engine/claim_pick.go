package engine

// Which free member a claim tries next: the preference order and the
// spread of a crowd over it.

import (
	"hash/fnv"
	"sort"
)

// claimPicker chooses the members a claim tries, in order: among the
// candidates of the best rank left (Ready, Starting, Stopped, then those on
// a down node: sortFree's order), one at a point derived from the identity
// and the number of races lost so far, so that claimants of a crowd spread
// over the list instead of all trying its first member. The same identity
// picks the same member first: its concurrent claims meet on one member.
//
// A window (elastic growth) limits the picks to the first window untaken
// candidates, doubled after each lost race: growth stays at the lowest
// indices while a crowd still spreads.
type claimPicker struct {
	identity   string
	candidates []*Member // in preference order
	gone       map[string]bool
	window     int // 0: no window
	lost       int // races lost so far
}

func (p *claimPicker) taken(name string) {
	if p.gone == nil {
		p.gone = map[string]bool{}
	}
	p.gone[name] = true
}

// next returns the next member to try, or nil when none is left.
func (p *claimPicker) next() *Member {
	limit := 0
	if p.window > 0 {
		limit = p.window << min(p.lost, 20)
	}
	var left []*Member
	for _, m := range p.candidates {
		if p.gone[m.Name] {
			continue
		}
		if p.window == 0 && len(left) > 0 && freeRank(m) != freeRank(left[0]) {
			break // sorted by rank: every member of the best rank left is in
		}
		left = append(left, m)
		if limit > 0 && len(left) >= limit {
			break
		}
	}
	if len(left) == 0 {
		return nil
	}
	return left[claimSpread(p.identity, p.lost)%uint64(len(left))]
}

// claimSpread is the point of a list where identity starts its attempt'th
// try: FNV-1a of both, so it is the same on every machine and every run.
func claimSpread(identity string, attempt int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(identity))
	h.Write([]byte{0, byte(attempt), byte(attempt >> 8)})
	return h.Sum64()
}

// sortFree orders free members for a claim: Ready, then Starting, then
// Stopped, and after all of them the members whose node is down
// (Member.NodeDown), in the same order: they stay eligible (their desktop
// is probably fine and comes back with the node), but a user given one waits
// for the node.
func sortFree(free []*Member) {
	sort.SliceStable(free, func(i, j int) bool { return freeRank(free[i]) < freeRank(free[j]) })
}

// freeRank is a free member's place in sortFree's order.
func freeRank(m *Member) int {
	k := 0
	switch m.State {
	case StateReady:
	case StateStarting:
		k = 1
	case StateStopped:
		k = 2
	default: // recorded not free, perhaps free by now (claimRound.fast)
		k = 3
	}
	if m.NodeDown != "" {
		k += 4
	}
	return k
}
