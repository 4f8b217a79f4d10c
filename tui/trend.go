package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// A pool's trend as the dashboard shows it: the history its reconciler
// recorded (engine.History in its status) and what the dashboard saw itself
// since it started, a sample per engine.HistoryInterval slot, merged (the
// live sample of a slot wins). A dashboard started against a pool that ran
// for an hour shows that hour on its first screen.

// sampleLive adds every watched pool's counts at `at` (a load's or a tick's
// time; never read from a clock here) to its live history. Within the slot
// of the last sample, a sample is added only when it has fewer free members
// (History.Add keeps the worse), so a load in a fleet of thousands of pools
// copies nothing in the common case.
func (f *feed) sampleLive(at time.Time) {
	if at.IsZero() {
		return
	}
	if f.live == nil {
		f.live = make(map[engine.PoolRef]engine.History, len(f.watched))
	}
	slot := at.Truncate(engine.HistoryInterval).UTC()
	for i := range f.watched {
		v := &f.watched[i]
		if !v.Defined || v.SpecError != nil {
			continue
		}
		s := engine.Sample{At: at, Free: v.Status.Free, Claimed: v.Status.Claimed, Size: v.Size}
		ref := v.Ref()
		h := f.live[ref]
		if last, ok := h.Last(); ok && (slot.Before(last.At) || (slot.Equal(last.At) && last.Free <= s.Free)) {
			continue
		}
		h = h.Add(s)
		// Only liveWindow is kept: the recorded history has the rest, and
		// a fleet of thousands of pools keeps a dashboard for days.
		for len(h.Samples) > 0 && !h.Samples[0].At.After(slot.Add(-liveWindow)) {
			h.Samples = h.Samples[1:]
		}
		f.live[ref] = h
		f.liveTrend = f.liveTrend || len(h.Samples) > 1
		f.trendGen++
	}
	if slot.After(f.liveSlot) {
		f.liveSlot = slot
	}
}

// liveWindow is how far back the dashboard keeps its own samples: the
// widest trend it draws (the pools table's).
const liveWindow = trendCells * trendStep

// tickLive samples the watched pools at a tick's time once per slot: the
// counts stay as last loaded while nothing changes.
func (f *feed) tickLive(now time.Time) {
	if !f.loaded || !now.Truncate(engine.HistoryInterval).After(f.liveSlot) {
		return
	}
	f.sampleLive(now)
}

// forgetLive drops the live history of pools no longer watched.
func (f *feed) forgetLive() {
	if len(f.live) == 0 {
		return
	}
	keep := make(map[engine.PoolRef]bool, len(f.watched))
	for i := range f.watched {
		keep[f.watched[i].Ref()] = true
	}
	for ref := range f.live {
		if !keep[ref] {
			delete(f.live, ref)
			f.trendGen++
		}
	}
}

// trend is a pool's samples at this frame's time: recorded, filled over the
// reconciler's hourly gaps, and the dashboard's own merged over them.
func (c *viewContext) trend(v *engine.PoolView) []engine.Sample {
	if c.trends == nil {
		return render.PoolTrend(v, c.live[v.Ref()].Samples, c.now)
	}
	samples, _ := c.trends.samples(c, v)
	return samples
}

// trendCache keeps what the views drew of the pools' trends, so that a
// frame draws a trend again only when it may have changed: when the data
// it is drawn from changed (feed.trendGen) or the clock entered another
// render.TrendSlot, once a slot. An idle dashboard's tick changes neither:
// its frame merges no history and draws no sparkline (issue 41: the trend
// doubled an idle dashboard's CPU).
//
// It holds the drawings of one generation and one slot, a few short
// strings per pool drawn, and the merged samples of the last pool asked
// (the detail pane's, every frame); a pool whose samples are not on slots
// (render.OnSlots: no history the reconciler or the dashboard wrote) is
// drawn at every frame.
type trendCache struct {
	gen  int
	slot render.TrendSlot
	// drawn is each drawing of a pool's trend, by pool and form.
	drawn map[trendDrawing]string
	// last is the last pool's merged samples (ok: valid).
	last struct {
		ref     engine.PoolRef
		samples []engine.Sample
		ok      bool
	}
	// merges counts the trends merged from the data (render.PoolTrend):
	// an idle frame merges none (tests).
	merges int
}

// trendDrawing names one drawing of a pool's trend: a trend cell of the
// pools table in a form, or a wall tile's trend line in a width.
type trendDrawing struct {
	ref   engine.PoolRef
	kind  int // drawCell or drawWall
	n     int // the cell's form, the line's width
	ascii bool
}

const (
	drawCell = iota
	drawWall
)

// at forgets every drawing when the data or the clock's slot changed.
func (t *trendCache) at(ctx *viewContext) {
	slot := render.TrendSlotAt(ctx.now)
	if t.drawn != nil && t.gen == ctx.trendGen && t.slot == slot {
		return
	}
	t.gen, t.slot = ctx.trendGen, slot
	t.drawn = make(map[trendDrawing]string)
	t.last.ok = false
}

// samples is the pool's trend (viewContext.trend), merged once per
// generation and slot for the last pool asked; stable reports whether it
// holds for the whole slot (its samples are on slots).
func (t *trendCache) samples(ctx *viewContext, v *engine.PoolView) (samples []engine.Sample, stable bool) {
	t.at(ctx)
	ref := v.Ref()
	if t.last.ok && t.last.ref == ref {
		return t.last.samples, true
	}
	live := ctx.live[ref].Samples
	samples = render.PoolTrend(v, live, ctx.now)
	t.merges++
	if h := v.Recorded.History; (h != nil && !render.OnSlots(h.Samples)) || !render.OnSlots(live) {
		return samples, false
	}
	t.last.ref, t.last.samples, t.last.ok = ref, samples, true
	return samples, true
}

// draw returns the drawing d of the pool's trend made by draw from its
// samples, kept for the generation and slot when they are stable.
func (t *trendCache) draw(ctx *viewContext, v *engine.PoolView, d trendDrawing, draw func([]engine.Sample) string) string {
	t.at(ctx)
	d.ref, d.ascii = v.Ref(), ctx.ascii
	if s, ok := t.drawn[d]; ok {
		return s
	}
	samples, stable := t.samples(ctx, v)
	s := draw(samples)
	if stable {
		t.drawn[d] = s
	}
	return s
}

// trendDraw is ctx's trends.draw, or draw itself without a cache.
func (c *viewContext) trendDraw(v *engine.PoolView, d trendDrawing, draw func([]engine.Sample) string) string {
	if c.trends == nil {
		return draw(c.trend(v))
	}
	return c.trends.draw(c, v, d, draw)
}

// hasTrend reports whether any pool has a trend to draw: a recorded history
// (read once per snapshot: recorded), or two slots of the dashboard's own.
func (c *viewContext) hasTrend(recorded bool) bool { return recorded || c.liveTrend }

// Trend cells of the pools table: trendStep a cell (each the lowest free
// count of its slots), trendCells of them when they fit (6 h), else
// trendCellsNarrow (4 h), else the trend in words (trendText).
const (
	trendStep        = 15 * time.Minute
	trendCells       = 24
	trendCellsNarrow = 16
)

// trendCell is a pool's trend in the pools table: the sparkline of free
// members in `form` cells of trendStep, or in words over the last hour
// ("3→0 ↓", the column's title says free).
func trendCell(ctx viewContext, v *engine.PoolView, form int) string {
	return ctx.trendDraw(v, trendDrawing{kind: drawCell, n: form}, func(samples []engine.Sample) string {
		if form == trendWords {
			return strings.TrimPrefix(render.TrendText(samples, ctx.now.Add(-time.Hour), ctx.ascii), "free ")
		}
		return render.Sparkline(samples, render.FreeCount, ctx.now, trendStep, form, ctx.ascii)
	})
}

// wallTrend is a wall tile's trend line in width cells: the sparkline of
// free members (a cell per trendStep) and the last hour in words ("3→0 ↓");
// "" when the pool has fewer than two samples.
func wallTrend(ctx viewContext, v *engine.PoolView, width int) string {
	return ctx.trendDraw(v, trendDrawing{kind: drawWall, n: width}, func(samples []engine.Sample) string {
		return wallTrendOf(ctx, samples, width)
	})
}

func wallTrendOf(ctx viewContext, samples []engine.Sample, width int) string {
	if len(samples) < 2 || width < 8 {
		return ""
	}
	words := strings.TrimPrefix(render.TrendText(samples, ctx.now.Add(-time.Hour), ctx.ascii), "free ")
	cells := min(width-len([]rune(words))-1, trendCells)
	if cells < 4 {
		words, cells = "", min(width, trendCells)
	}
	// The span in words when there is room: "free 6 h ▁▂▃ 3→1 ↓".
	label := "free " + render.SpanText(time.Duration(cells)*trendStep) + " "
	if len([]rune(label))+cells+1+len([]rune(words)) > width {
		label = ""
	}
	return strings.TrimRight(label+render.Sparkline(samples, render.FreeCount, ctx.now, trendStep, cells, ctx.ascii)+" "+words, " ")
}

// Detail's trend: a cell per slot (engine.HistoryInterval), up to
// detailTrendCells of them (4 h).
const detailTrendCells = 48

// showTrend reports whether the detail pane has a Trend section for the
// pool: it is elastic, has a recorded history, or the dashboard saw it in
// two slots.
func showTrend(ctx viewContext, v *engine.PoolView) bool {
	if v.Spec.Elastic() {
		return true
	}
	if h := v.Recorded.History; h != nil && len(h.Samples) > 0 {
		return true
	}
	return len(ctx.live[v.Ref()].Samples) > 1
}

// trendLine is a labelled line of the detail pane's Trend section; raw
// lines (sparklines, whose blank cells are gaps) are neither wrapped nor
// have their spaces collapsed.
type trendLine struct {
	label, text string
	raw         bool
}

// trendLines are the detail pane's Trend section of a pool, as label and
// text pairs (the pane sanitises and wraps them): the span; free and
// claimed members as sparklines with their counts at the start and now;
// claims and releases per hour (lower bounds); the forecast in words; for
// an elastic pool its bounds, size and why it last changed.
func trendLines(ctx viewContext, v *engine.PoolView, textW int) []trendLine {
	samples := ctx.trend(v)
	cells := max(min(detailTrendCells, textW-16), 8)
	span := time.Duration(cells) * engine.HistoryInterval
	from := ctx.now.Truncate(engine.HistoryInterval).Add(-span + engine.HistoryInterval)
	var out []trendLine
	if el := render.ElasticText(v, ctx.now); el != "" {
		line := el
		if w := render.ExhaustedWords(v); w != "" {
			line += " · " + w
		}
		out = append(out, trendLine{label: "Elastic", text: line})
	}
	in := 0
	scale := 0
	for _, s := range samples {
		if !s.At.Before(from) {
			in++
			scale = max(scale, s.Size)
		}
	}
	if in == 0 {
		return append(out, trendLine{label: "Trend", text: "no history recorded yet"})
	}
	out = append(out, trendLine{label: "Trend", text: fmt.Sprintf("pool %s, last %s, a cell per %s, scaled 0..%d (blank: nothing recorded)",
		ctx.title(v), render.SpanText(span), render.SpanText(engine.HistoryInterval), max(scale, 1))})
	series := func(count render.Count) string {
		first, last := -1, 0
		for _, s := range samples {
			if s.At.Before(from) {
				continue
			}
			if first < 0 {
				first = count(s)
			}
			last = count(s)
		}
		arrow := "→"
		if ctx.ascii {
			arrow = "->"
		}
		return render.Sparkline(samples, count, ctx.now, engine.HistoryInterval, cells, ctx.ascii) + fmt.Sprintf("  %d%s%d", first, arrow, last)
	}
	out = append(out, trendLine{"Free", series(render.FreeCount), true}, trendLine{"Claimed", series(render.ClaimedCount), true})
	claims, releases := engine.ClaimsPerHour(samples, ctx.now)
	out = append(out, trendLine{label: "Rates", text: render.RatesText(claims, releases)})
	ceiling := 0
	if v.Spec.Elastic() {
		ceiling = v.Spec.MaxSize
	}
	f := engine.ForecastFrom(samples, ctx.now, v.Status.Free, v.Status.Claimed, ceiling)
	out = append(out, trendLine{label: "Forecast", text: render.ForecastText(f, ceiling)})
	return out
}
