package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A pool's recent history: one sample of its counts per HistoryInterval over
// the last HistoryWindow, recorded in its status in a compact one-line form
// (History.Encode) bounded by HistoryMaxBytes whatever the pool's size.

// Sample is one point of a pool's history: the counts at a moment.
type Sample struct {
	At      time.Time
	Free    int // free members (a claim could be given one now)
	Claimed int // members claimed by users
	Size    int // the pool's (effective) size
}

// History is the recent history of a pool that the reconciler records in its
// status: at most one sample per HistoryInterval slot over the last
// HistoryWindow, so at most HistoryMaxSamples samples and at most
// HistoryMaxBytes encoded, whatever the pool's size.
//
// A History made by Add (or ParseHistory) is canonical: Samples are oldest
// first, each At is the start of its slot (a multiple of HistoryInterval, in
// UTC), no two share a slot, the first is less than HistoryWindow before the
// last, and every count is within 0..MaxPoolSize. Slots without a sample are
// gaps: nothing was recorded then, and nothing is invented for them.
type History struct {
	Samples []Sample // oldest first, At aligned to HistoryInterval
}

// The history's bounds.
const (
	// HistoryInterval is the width of a slot: one sample per slot.
	HistoryInterval = 5 * time.Minute
	// HistoryWindow is how far back the history reaches from its last sample.
	HistoryWindow = 24 * time.Hour
	// HistoryMaxSamples is the most samples a History holds (288).
	HistoryMaxSamples = int(HistoryWindow / HistoryInterval)
	// HistoryMaxBytes bounds the encoded history (Encode, and the JSON
	// string MarshalJSON writes): 288 samples of three counts of up to five
	// digits (MaxPoolSize) take about 5.3 KiB.
	HistoryMaxBytes = 6 << 10
)

// Add records s and returns the new history; the receiver is never changed,
// nor is any array a copy of it shares.
//
//   - s.At is taken to the start of its slot (Truncate(HistoryInterval), in
//     UTC) and its counts are clamped to 0..MaxPoolSize.
//   - A sample in the slot of the last sample keeps the worse of the two: the
//     one with fewer Free members (on a tie, the newer). The whole sample is
//     kept, so Free, Claimed and Size are always the counts of one real
//     moment, the slot's lowest free one, which is the one an admin who cares
//     about exhaustion wants to see.
//   - A sample in a later slot is appended; slots skipped between stay gaps.
//   - Samples HistoryWindow or more before s's slot are dropped.
//   - A sample in a slot before the last one is ignored (the clock went
//     back, or a slower writer came late).
func (h History) Add(s Sample) History {
	out := make([]Sample, len(h.Samples), len(h.Samples)+1)
	copy(out, h.Samples)
	return History{Samples: addSample(out, s)}
}

// addSample adds s to the canonical samples in place (see Add).
func addSample(samples []Sample, s Sample) []Sample {
	s = normalSample(s)
	if n := len(samples); n > 0 {
		last := samples[n-1]
		switch {
		case s.At.Before(last.At):
			return samples
		case s.At.Equal(last.At):
			if s.Free <= last.Free {
				samples[n-1] = s
			}
			return samples
		}
	}
	samples = append(samples, s)
	oldest := s.At.Add(-HistoryWindow)
	i := 0
	for i < len(samples) && !samples[i].At.After(oldest) {
		i++
	}
	return samples[i:]
}

func normalSample(s Sample) Sample {
	s.At = s.At.Truncate(HistoryInterval).UTC()
	s.Free, s.Claimed, s.Size = clampCount(s.Free), clampCount(s.Claimed), clampCount(s.Size)
	return s
}

func clampCount(n int) int {
	return min(max(n, 0), MaxPoolSize)
}

// Since returns the samples at or after t, oldest first. The result shares
// the history's array but has no spare capacity, so appending to it copies.
func (h History) Since(t time.Time) []Sample {
	i := sort.Search(len(h.Samples), func(i int) bool { return !h.Samples[i].At.Before(t) })
	return h.Samples[i:len(h.Samples):len(h.Samples)]
}

// Last returns the newest sample; ok is false for an empty history.
func (h History) Last() (s Sample, ok bool) {
	if len(h.Samples) == 0 {
		return Sample{}, false
	}
	return h.Samples[len(h.Samples)-1], true
}

// The encoded history is one line of JSON, so also one line of YAML (a flow
// mapping):
//
//	{"start":"2026-12-05T10:00:00Z","step":300,"free":"3 3 4 - 5","claimed":"2 2 1 - 0","size":"5 5 5 - 5"}
//
// start is the first sample's slot, step the slot width in seconds
// (HistoryInterval); each series has one word per slot from start to the last
// sample: the count in decimal, or "-" for a gap (in every series at once).
// An empty history is {}.
type wireHistory struct {
	Start   *string `json:"start,omitempty"`
	Step    *int    `json:"step,omitempty"`
	Free    *string `json:"free,omitempty"`
	Claimed *string `json:"claimed,omitempty"`
	Size    *string `json:"size,omitempty"`
}

const historyGap = "-"

// Encode returns the history in its compact one-line form (see wireHistory),
// at most HistoryMaxBytes long. A History not made by Add is first made
// canonical as Add would have (its samples added in their order).
func (h History) Encode() string {
	samples := h.Samples
	if !canonical(samples) {
		samples = nil
		for _, s := range h.Samples {
			samples = addSample(samples, s)
		}
	}
	if len(samples) == 0 {
		return "{}"
	}
	var free, claimed, size strings.Builder
	start := samples[0].At
	slot := 0
	for _, s := range samples {
		k := int(s.At.Sub(start) / HistoryInterval)
		for ; slot < k; slot++ {
			for _, b := range []*strings.Builder{&free, &claimed, &size} {
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(historyGap)
			}
		}
		for _, f := range []struct {
			b *strings.Builder
			n int
		}{{&free, s.Free}, {&claimed, s.Claimed}, {&size, s.Size}} {
			if f.b.Len() > 0 {
				f.b.WriteByte(' ')
			}
			f.b.WriteString(strconv.Itoa(f.n))
		}
		slot++
	}
	var b strings.Builder
	b.WriteString(`{"start":"`)
	b.WriteString(start.Format(time.RFC3339))
	b.WriteString(`","step":`)
	b.WriteString(strconv.Itoa(int(HistoryInterval / time.Second)))
	for _, f := range []struct {
		k string
		b *strings.Builder
	}{{"free", &free}, {"claimed", &claimed}, {"size", &size}} {
		b.WriteString(`,"`)
		b.WriteString(f.k)
		b.WriteString(`":"`)
		b.WriteString(f.b.String())
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// canonical reports whether samples are as Add makes them.
func canonical(samples []Sample) bool {
	for i, s := range samples {
		if s != normalSample(s) || s.At.Location() != time.UTC {
			return false
		}
		if i > 0 && !samples[i-1].At.Before(s.At) {
			return false
		}
	}
	return len(samples) == 0 || samples[len(samples)-1].At.Sub(samples[0].At) < HistoryWindow
}

// ParseHistory decodes the form Encode writes. It is strict about the shape
// (a start that is not a slot's start, a step other than HistoryInterval,
// series of different lengths or more than HistoryMaxSamples slots, a word
// that is not a canonical decimal within 0..MaxPoolSize, a gap in some series
// but not all, a gap first or last: an error) but ignores keys it does not
// know, which a later version may add. It never panics. An empty string, {}
// and null are the empty history.
func ParseHistory(s string) (History, error) {
	if strings.TrimSpace(s) == "" {
		return History{}, nil
	}
	var w wireHistory
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &w); err != nil {
		return History{}, historyError("not a JSON object: %v", err)
	}
	return w.history()
}

func historyError(format string, args ...any) error {
	return &InvalidError{Field: "history", Reason: fmt.Sprintf(format, args...)}
}

func (w wireHistory) history() (History, error) {
	if w.Start == nil && w.Step == nil && w.Free == nil && w.Claimed == nil && w.Size == nil {
		return History{}, nil
	}
	if w.Start == nil || w.Step == nil || w.Free == nil || w.Claimed == nil || w.Size == nil {
		return History{}, historyError("want start, step, free, claimed and size, or none")
	}
	start, err := time.Parse(time.RFC3339, *w.Start)
	if err != nil {
		return History{}, historyError("bad start %q", *w.Start)
	}
	start = start.UTC()
	if !start.Truncate(HistoryInterval).Equal(start) {
		return History{}, historyError("start %s is not at a multiple of %s", *w.Start, HistoryInterval)
	}
	if want := int(HistoryInterval / time.Second); *w.Step != want {
		return History{}, historyError("step %d, want %d", *w.Step, want)
	}
	var series [3][]string
	for i, f := range []struct {
		k string
		v string
	}{{"free", *w.Free}, {"claimed", *w.Claimed}, {"size", *w.Size}} {
		words := strings.Split(f.v, " ")
		if len(words) > HistoryMaxSamples {
			return History{}, historyError("%s has %d slots, at most %d", f.k, len(words), HistoryMaxSamples)
		}
		if i > 0 && len(words) != len(series[0]) {
			return History{}, historyError("%s has %d slots, free has %d", f.k, len(words), len(series[0]))
		}
		series[i] = words
	}
	n := len(series[0])
	samples := make([]Sample, 0, n)
	for k := 0; k < n; k++ {
		gaps := 0
		var counts [3]int
		for i := range series {
			word := series[i][k]
			if word == historyGap {
				gaps++
				continue
			}
			v, err := strconv.Atoi(word)
			if err != nil || v < 0 || v > MaxPoolSize || strconv.Itoa(v) != word {
				return History{}, historyError("slot %d: bad count %q", k, word)
			}
			counts[i] = v
		}
		switch {
		case gaps == len(series):
			if k == 0 || k == n-1 {
				return History{}, historyError("slot %d: a gap first or last", k)
			}
			continue
		case gaps > 0:
			return History{}, historyError("slot %d: a gap in some series only", k)
		}
		samples = append(samples, Sample{
			At:   start.Add(time.Duration(k) * HistoryInterval),
			Free: counts[0], Claimed: counts[1], Size: counts[2],
		})
	}
	return History{Samples: samples}, nil
}

// MarshalJSON writes the history as a JSON string holding Encode's form, so
// that a Status field `History *History` is one line of its YAML.
func (h History) MarshalJSON() ([]byte, error) {
	return json.Marshal(h.Encode())
}

// UnmarshalJSON reads what MarshalJSON writes, and also Encode's form as a
// JSON object (what YAML's flow mapping becomes when a status written with
// `history: {...}` is read through sigs.k8s.io/yaml). null leaves h as it is.
func (h *History) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	var (
		parsed History
		err    error
	)
	switch {
	case string(b) == "null":
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return historyError("%v", err)
		}
		parsed, err = ParseHistory(s)
	default:
		parsed, err = ParseHistory(string(b))
	}
	if err != nil {
		return err
	}
	*h = parsed
	return nil
}

// HistoryHeartbeat is how often a reconcile records a sample of counts that
// did not change (recordHistory); a slot without a sample within it after a
// sample means the counts stayed (Filled).
const HistoryHeartbeat = time.Hour

// recordHistory adds the counts at now to prev (nil: none yet) when they
// changed since the last sample or the last sample is HistoryHeartbeat old,
// so that a pool at rest writes its status once an hour, not once a slot.
//
// Samples stamped ahead of s (by more than SkewTolerance: a writer whose
// clock runs fast) count from the moment this writer first sees them
// (DECISIONS, "Clocks"): they are taken into s's slot, keeping the worse
// one, so that they neither freeze the history (a sample before the last
// one is ignored) nor stand in for its future.
func recordHistory(prev *History, s Sample) *History {
	var h History
	if prev != nil {
		h = *prev
		if last, ok := h.Last(); ok && last.At.After(s.At.Add(SkewTolerance)) {
			h = h.pullBack(s.At)
			prev = &h
		}
	}
	if last, ok := h.Last(); ok && last.Free == s.Free && last.Claimed == s.Claimed && last.Size == s.Size &&
		s.At.Sub(last.At) < HistoryHeartbeat && !s.At.Before(last.At) {
		return prev
	}
	h = h.Add(s)
	return &h
}

// pullBack returns the history with each sample stamped after at (by more
// than SkewTolerance) moved into at's slot, the worse of them kept there.
func (h History) pullBack(at time.Time) History {
	slot := at.Truncate(HistoryInterval).UTC()
	var out []Sample
	for _, s := range h.Samples {
		if s.At.After(at.Add(SkewTolerance)) {
			s.At = slot
		}
		out = addSample(out, s)
	}
	return History{Samples: out}
}

// Filled returns the samples with each slot that has none, up to
// HistoryHeartbeat after a sample and before now, filled with that sample's
// counts (the reconciler writes unchanged counts once an hour only), and
// the samples past the window's start dropped. A longer gap stays a gap
// (no reconciler wrote).
func (h History) Filled(now time.Time) []Sample {
	out := make([]Sample, 0, len(h.Samples)+8)
	start := now.Add(-HistoryWindow)
	for i, s := range h.Samples {
		if !s.At.After(start) {
			continue // past the window's start (no reconciler wrote since)
		}
		out = append(out, s)
		end := now
		if i+1 < len(h.Samples) {
			end = h.Samples[i+1].At
		}
		for t := s.At.Add(HistoryInterval); t.Before(end) && t.Sub(s.At) < HistoryHeartbeat && now.Sub(t) >= HistoryInterval; t = t.Add(HistoryInterval) {
			f := s
			f.At = t
			out = append(out, f)
		}
	}
	return out
}
