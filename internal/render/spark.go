package render

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// A pool's trend: its recorded history (engine.History, written by the
// reconciler) merged with what a reader saw itself, drawn as a sparkline of
// one count over time, and told in words (the sparkline is never the only
// form: TrendText and the forecast's words carry the same trend).

// Sparkline levels: a cell's count scaled from 0 to the largest size over
// the cells drawn. The lowest level is kept for 0 alone, so an exhausted
// moment never looks like one with a member free; a cell without a sample
// (a gap: nothing was recorded or seen) is a space.
var (
	sparkUnicode = []rune("▁▂▃▄▅▆▇█")
	// sparkASCII has the same eight levels for terminals without Unicode:
	// "_" is 0, "#" is the largest size.
	sparkASCII = []rune("_.:-=+*#")
)

// SparkGap is the cell of a sparkline with no sample.
const SparkGap = ' '

// Count picks the count a sparkline draws from a sample.
type Count func(engine.Sample) int

// FreeCount and ClaimedCount are the counts the dashboard draws.
func FreeCount(s engine.Sample) int    { return s.Free }
func ClaimedCount(s engine.Sample) int { return s.Claimed }

// Sparkline draws count over width cells of step each, the last cell the
// one that holds end (cells are aligned to multiples of step, so a line
// does not shift between two frames of the same step). A cell shows the
// lowest count of its samples (for free members, the worst moment, as
// History.Add keeps); the scale is 0 to the largest Size of the samples
// drawn (at least 1). ascii draws with sparkASCII.
func Sparkline(samples []engine.Sample, count Count, end time.Time, step time.Duration, width int, ascii bool) string {
	if width <= 0 || step <= 0 {
		return ""
	}
	levels := sparkUnicode
	if ascii {
		levels = sparkASCII
	}
	last := end.Truncate(step)
	first := last.Add(-time.Duration(width-1) * step)
	vals := make([]int, width)
	have := make([]bool, width)
	scale := 0
	for _, s := range samples {
		if s.At.Before(first) || !s.At.Before(last.Add(step)) {
			continue
		}
		i := int(s.At.Sub(first) / step)
		n := count(s)
		if !have[i] || n < vals[i] {
			vals[i] = n
		}
		have[i] = true
		scale = max(scale, s.Size, n)
	}
	scale = max(scale, 1)
	top := len(levels) - 1
	var b strings.Builder
	for i := range vals {
		if !have[i] {
			b.WriteRune(SparkGap)
			continue
		}
		lv := 0
		if n := min(max(vals[i], 0), scale); n > 0 {
			lv = max(1, (n*top+scale-1)/scale)
		}
		b.WriteRune(levels[lv])
	}
	return b.String()
}

// MergeTrend merges a pool's recorded samples with those a reader saw
// live: the recorded ones first, a live sample replacing a recorded one of
// the same slot (engine.HistoryInterval); oldest first. Neither input is
// changed.
func MergeTrend(recorded, live []engine.Sample) []engine.Sample {
	if len(live) == 0 {
		return recorded
	}
	// Keyed by the slot's Unix time: a time.Time key also compares the
	// location, and a recorded sample (UTC) and a reader's own (local
	// time) of one slot must meet.
	slot := func(s engine.Sample) int64 { return s.At.Truncate(engine.HistoryInterval).Unix() }
	bySlot := make(map[int64]engine.Sample, len(recorded)+len(live))
	for _, s := range recorded {
		bySlot[slot(s)] = s
	}
	for _, s := range live {
		bySlot[slot(s)] = s
	}
	out := make([]engine.Sample, 0, len(bySlot))
	for _, s := range bySlot {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// PoolTrend is a pool's samples at now: its recorded history filled over
// the reconciler's hourly gaps (History.Filled), with live samples (a
// reader's own, oldest first) merged over it (MergeTrend).
func PoolTrend(v *engine.PoolView, live []engine.Sample, now time.Time) []engine.Sample {
	var rec []engine.Sample
	if h := v.Recorded.History; h != nil {
		rec = h.Filled(now)
	}
	return MergeTrend(rec, live)
}

// TrendSlot is all a trend drawn at a time reads of that time, when every
// sample is at the start of its slot (OnSlots, as History.Add and
// ParseHistory make them): the start of the time's slot
// (engine.HistoryInterval), and whether the time is that very start.
// PoolTrend, Sparkline in cells of a multiple of a slot and TrendText
// from the time less a multiple of a slot are the same at every time of
// one TrendSlot, so what was drawn from them holds until it changes (the
// dashboard draws its trends once a slot, not once a tick).
type TrendSlot struct {
	Start   int64 // the slot's start, Unix nanoseconds
	AtStart bool
}

// TrendSlotAt is now's TrendSlot.
func TrendSlotAt(now time.Time) TrendSlot {
	start := now.Truncate(engine.HistoryInterval)
	return TrendSlot{Start: start.UnixNano(), AtStart: now.Equal(start)}
}

// OnSlots reports whether every sample is at the start of its slot
// (engine.HistoryInterval).
func OnSlots(samples []engine.Sample) bool {
	for _, s := range samples {
		if !s.At.Truncate(engine.HistoryInterval).Equal(s.At) {
			return false
		}
	}
	return true
}

// TrendText tells the trend of free members over the samples since from,
// in words that need no sparkline: "free 3→0 ↓" (the first count, the
// last, and the direction: ↓ fewer, ↑ more, → the same); "" without
// samples. ascii writes "free 3->0 down".
func TrendText(samples []engine.Sample, from time.Time, ascii bool) string {
	var first, last *engine.Sample
	for i := range samples {
		if samples[i].At.Before(from) {
			continue
		}
		if first == nil {
			first = &samples[i]
		}
		last = &samples[i]
	}
	if first == nil {
		return ""
	}
	arrow, dir := "→", "→"
	switch {
	case last.Free < first.Free:
		dir = "↓"
	case last.Free > first.Free:
		dir = "↑"
	}
	if ascii {
		arrow = "->"
		dir = map[string]string{"↓": "down", "↑": "up", "→": "flat"}[dir]
	}
	if first == last {
		return fmt.Sprintf("free %d", last.Free)
	}
	return fmt.Sprintf("free %d%s%d %s", first.Free, arrow, last.Free, dir)
}

// SpanText names a span of time in words: "5 min", "2 h", "1 h 30 min".
func SpanText(d time.Duration) string {
	h, m := int(d/time.Hour), int((d%time.Hour)/time.Minute)
	switch {
	case h == 0:
		return fmt.Sprintf("%d min", m)
	case m == 0:
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

// approx names a duration roughly, for a forecast: "~25 min", "~1 h",
// "~3 h 10 min"; "now" for 0.
func approx(d time.Duration) string {
	switch {
	case d <= 0:
		return "now"
	case d < time.Minute:
		return "<1 min"
	case d < 10*time.Hour:
		return "~" + SpanText(d.Round(time.Minute))
	}
	return "~" + SpanText(d.Round(time.Hour))
}

// ForecastText tells a forecast in words. What holds already comes first
// ("free 0 now", "at its ceiling 40 now"), then what the rate foretells:
// "at this rate (net +6.0 claims/h): free 0 in ~25 min; at its ceiling 40
// in ~1 h", "not at this rate (net -1.0 claims/h)", or "not enough history
// yet (2 samples)". ceiling > 0 names an elastic pool's ceiling.
func ForecastText(f engine.Forecast, ceiling int) string {
	var now, later []string
	if d := f.ToEmpty; d != nil {
		if *d <= 0 {
			now = append(now, "free 0 now")
		} else {
			later = append(later, "free 0 in "+approx(*d))
		}
	}
	if d := f.ToCeiling; ceiling > 0 && d != nil {
		if *d <= 0 {
			now = append(now, fmt.Sprintf("at its ceiling %d now", ceiling))
		} else {
			later = append(later, fmt.Sprintf("at its ceiling %d in %s", ceiling, approx(*d)))
		}
	}
	rate := fmt.Sprintf("net %+.1f claims/h", roundRate(f.Rate))
	var tail string
	switch {
	case !f.OK:
		tail = fmt.Sprintf("not enough history yet (%s)", Plural(f.Samples, "sample", "samples"))
	case len(later) > 0:
		tail = "at this rate (" + rate + "): " + strings.Join(later, "; ")
	case len(now) > 0 && f.Rate <= engine.ForecastMinRate:
		tail = "not filling further at this rate (" + rate + ")"
	case len(now) > 0:
		tail = "(" + rate + ")"
	default:
		tail = "not at this rate (" + rate + ")"
	}
	return strings.Join(append(now, tail), "; ")
}

// roundRate keeps -0.0 from printing.
func roundRate(r float64) float64 {
	r = math.Round(r*10) / 10
	if r == 0 {
		return 0
	}
	return r
}

// RatesText tells ClaimsPerHour's lower bounds: "≥ 4.0 claims/h, ≥ 1.0
// releases/h (last hour)".
func RatesText(claims, releases float64) string {
	return fmt.Sprintf("at least %.1f claims/h, at least %.1f releases/h (last hour)", claims, releases)
}

// Exhaustion of an elastic pool: exhausted below its ceiling, a claim grows
// it at once (Growing); exhausted at its ceiling, nothing more can be had
// (AtCeiling), as a fixed pool's exhaustion.

// ExhaustedGrowing reports an elastic pool exhausted below its ceiling.
func ExhaustedGrowing(v *engine.PoolView) bool {
	return v.Status.Exhausted && v.Spec.Elastic() && v.Size < v.Spec.MaxSize
}

// ExhaustedAlarm reports an exhaustion that needs attention: a fixed pool's,
// or an elastic pool's at its ceiling.
func ExhaustedAlarm(v *engine.PoolView) bool {
	return v.Status.Exhausted && !ExhaustedGrowing(v)
}

// ExhaustedWords names a pool's exhaustion: "exhausted", "exhausted at
// ceiling 40", "exhausted (growing, max 40)"; "" when it is not.
func ExhaustedWords(v *engine.PoolView) string {
	switch {
	case !v.Status.Exhausted:
		return ""
	case ExhaustedGrowing(v):
		return fmt.Sprintf("exhausted (growing, max %d)", v.Spec.MaxSize)
	case v.Spec.Elastic():
		return fmt.Sprintf("exhausted at ceiling %d", v.Spec.MaxSize)
	}
	return "exhausted"
}

// ElasticText describes an elastic pool's bounds and its size: "elastic
// 2..40, spare 3, power stopped, size 7 (grew from 5 to 7: 1 free of spare
// 3, 12m ago)"; "" for a fixed pool. The reason is the reconciler's text,
// sanitised.
func ElasticText(v *engine.PoolView, now time.Time) string {
	s := v.Spec
	if !s.Elastic() {
		return ""
	}
	out := fmt.Sprintf("elastic %d..%d, spare %d, power %s, size %d", s.MinSize, s.MaxSize, s.SpareTarget(), s.PowerPolicy(), v.Size)
	if el := v.Recorded.Elastic; el != nil && el.Reason != "" {
		why := clean(el.Reason)
		if el.ChangedAt != nil {
			why += ", " + Ago(now, *el.ChangedAt)
		}
		out += " (" + why + ")"
	}
	return out
}
