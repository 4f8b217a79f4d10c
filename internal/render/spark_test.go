package render

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// t10 is a slot's start: sparkline cells align to it.
var t10 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

// series makes one sample per 5-minute slot from start, free counts from
// frees (-1: a gap), size size and claimed size-free.
func series(start time.Time, size int, frees ...int) []engine.Sample {
	var out []engine.Sample
	for i, f := range frees {
		if f < 0 {
			continue
		}
		out = append(out, engine.Sample{At: start.Add(time.Duration(i) * engine.HistoryInterval), Free: f, Claimed: size - f, Size: size})
	}
	return out
}

func TestSparkline(t *testing.T) {
	step := engine.HistoryInterval
	tests := []struct {
		name    string
		samples []engine.Sample
		end     time.Time
		step    time.Duration
		width   int
		ascii   bool
		count   Count
		want    string
	}{
		{name: "empty", end: t10, step: step, width: 4, want: "    "},
		{name: "zero width", samples: series(t10, 7, 7), end: t10, step: step, width: 0, want: ""},
		{name: "full to empty", samples: series(t10, 7, 7, 6, 5, 4, 3, 2, 1, 0), end: t10.Add(35 * time.Minute), step: step, width: 8,
			want: "█▇▆▅▄▃▂▁"},
		{name: "ascii", samples: series(t10, 7, 7, 6, 5, 4, 3, 2, 1, 0), end: t10.Add(35 * time.Minute), step: step, width: 8, ascii: true,
			want: "#*+=-:._"},
		{name: "a gap is a space", samples: series(t10, 4, 4, -1, 0), end: t10.Add(10 * time.Minute), step: step, width: 3,
			want: "█ ▁"},
		{name: "older samples than the cells are left out, newer cells are gaps", samples: series(t10, 4, 4, 4, 2),
			end: t10.Add(20 * time.Minute), step: step, width: 3, want: "▅  "},
		{name: "one of forty free is not zero", samples: series(t10, 40, 1, 0), end: t10.Add(5 * time.Minute), step: step, width: 2,
			want: "▂▁"},
		{name: "a wider cell keeps its lowest count", samples: series(t10, 8, 8, 2, 8, 8), end: t10.Add(15 * time.Minute), step: 10 * time.Minute, width: 2,
			want: "▃█"},
		{name: "claimed", samples: series(t10, 4, 4, 0), end: t10.Add(5 * time.Minute), step: step, width: 2, count: ClaimedCount,
			want: "▁█"},
		{name: "scaled to the largest size drawn", samples: []engine.Sample{{At: t10, Free: 2, Size: 2}, {At: t10.Add(step), Free: 2, Size: 8}},
			end: t10.Add(step), step: step, width: 2, want: "▃▃"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			count := tt.count
			if count == nil {
				count = FreeCount
			}
			got := Sparkline(tt.samples, count, tt.end, tt.step, tt.width, tt.ascii)
			if got != tt.want {
				t.Errorf("Sparkline = %q, want %q", got, tt.want)
			}
			if n := len([]rune(got)); n != max(tt.width, 0) {
				t.Errorf("%d cells, want %d", n, tt.width)
			}
			if tt.ascii && strings.ContainsFunc(got, func(r rune) bool { return r > 127 }) {
				t.Errorf("ascii sparkline %q has non-ASCII runes", got)
			}
		})
	}
}

func TestMergeTrend(t *testing.T) {
	rec := series(t10, 4, 4, 3, 2)
	live := []engine.Sample{{At: t10.Add(7 * time.Minute), Free: 1, Claimed: 3, Size: 4}, {At: t10.Add(15 * time.Minute), Free: 0, Claimed: 4, Size: 4}}
	got := MergeTrend(rec, live)
	var frees []int
	for _, s := range got {
		frees = append(frees, s.Free)
	}
	if want := []int{4, 1, 2, 0}; !equalInts(frees, want) {
		t.Errorf("frees %v, want %v (a live sample replaces the recorded one of its slot)", frees, want)
	}
	if rec[1].Free != 3 {
		t.Error("MergeTrend changed its input")
	}
	// A recorded sample decoded from the status is in UTC; a reader's own
	// sample is in its local time: the same slot all the same.
	east := time.FixedZone("east", 2*3600)
	got = MergeTrend(series(t10.UTC(), 4, 4), []engine.Sample{{At: t10.In(east).Add(2 * time.Minute), Free: 1, Claimed: 3, Size: 4}})
	if len(got) != 1 || got[0].Free != 1 {
		t.Errorf("a live sample in another location did not replace the recorded one of its slot: %+v", got)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTrendSlot: what a trend draws at a time is the same at every time of
// its TrendSlot (samples on slots, as a reconciler records them with its
// hourly gaps, and a reader's own), so that a reader may draw it once a
// slot; and a slot's very start is a TrendSlot of its own.
func TestTrendSlot(t *testing.T) {
	slot := engine.HistoryInterval
	var h engine.History
	for i := range 48 { // 4 h: a sample a slot at first, then hourly
		if i < 24 || i%12 == 0 {
			h = h.Add(engine.Sample{At: t10.Add(time.Duration(i) * slot), Free: 9 - i%7, Claimed: i % 7, Size: 9})
		}
	}
	v := &engine.PoolView{Recorded: engine.Status{History: &h}}
	live := series(t10.Add(3*time.Hour), 9, 4, -1, 2)
	if !OnSlots(h.Samples) || !OnSlots(live) {
		t.Fatal("the samples are not on slots")
	}
	draw := func(now time.Time) string {
		s := PoolTrend(v, live, now)
		return fmt.Sprint(s) + "|" + Sparkline(s, FreeCount, now, 15*time.Minute, 24, false) + "|" +
			Sparkline(s, ClaimedCount, now, slot, 48, true) + "|" + TrendText(s, now.Add(-time.Hour), false)
	}
	atStartDiffers := false
	for start := t10.Add(3 * time.Hour); start.Before(t10.Add(5 * time.Hour)); start = start.Add(slot) {
		after := draw(start.Add(time.Nanosecond))
		for _, d := range []time.Duration{time.Nanosecond, time.Second, 150 * time.Second, slot - time.Nanosecond} {
			now := start.Add(d)
			if k := TrendSlotAt(now); k != TrendSlotAt(start.Add(time.Nanosecond)) || k.AtStart {
				t.Fatalf("TrendSlotAt(%s) = %+v", now, k)
			}
			if got := draw(now); got != after {
				t.Errorf("at %s: %s, want as at %s: %s", now.Format("15:04:05.000000000"), got, start.Add(time.Nanosecond).Format("15:04:05.000000000"), after)
			}
		}
		if !TrendSlotAt(start).AtStart || TrendSlotAt(start).Start != start.UnixNano() {
			t.Fatalf("TrendSlotAt(%s) = %+v", start, TrendSlotAt(start))
		}
		atStartDiffers = atStartDiffers || draw(start) != after
	}
	if !atStartDiffers {
		t.Error("a slot's very start never draws otherwise (then AtStart need not be in TrendSlot)")
	}
	if OnSlots([]engine.Sample{{At: t10.Add(time.Minute)}}) {
		t.Error("a sample a minute into its slot is on its slot")
	}
}

func TestTrendText(t *testing.T) {
	s := series(t10, 5, 3, 2, 0)
	for _, tt := range []struct {
		from  time.Time
		ascii bool
		want  string
	}{
		{t10, false, "free 3→0 ↓"},
		{t10, true, "free 3->0 down"},
		{t10.Add(10 * time.Minute), false, "free 0"},
		{t10.Add(time.Hour), false, ""},
	} {
		if got := TrendText(s, tt.from, tt.ascii); got != tt.want {
			t.Errorf("TrendText(from %s, ascii %v) = %q, want %q", tt.from.Format("15:04"), tt.ascii, got, tt.want)
		}
	}
	if got := TrendText(series(t10, 5, 0, 4), t10, false); got != "free 0→4 ↑" {
		t.Errorf("rising: %q", got)
	}
}

func TestForecastText(t *testing.T) {
	d := func(x time.Duration) *time.Duration { return &x }
	for _, tt := range []struct {
		name    string
		f       engine.Forecast
		ceiling int
		want    string
	}{
		{"too little", engine.Forecast{Samples: 2}, 0, "not enough history yet (2 samples)"},
		{"too little but empty", engine.Forecast{Samples: 1, ToEmpty: d(0)}, 0, "free 0 now; not enough history yet (1 sample)"},
		{"flat", engine.Forecast{OK: true, Rate: -0.01}, 0, "not at this rate (net +0.0 claims/h)"},
		{"fixed", engine.Forecast{OK: true, Rate: 6, ToEmpty: d(25 * time.Minute)}, 0, "at this rate (net +6.0 claims/h): free 0 in ~25 min"},
		{"elastic", engine.Forecast{OK: true, Rate: 12, ToEmpty: d(25 * time.Minute), ToCeiling: d(62 * time.Minute)}, 40,
			"at this rate (net +12.0 claims/h): free 0 in ~25 min; at its ceiling 40 in ~1 h 2 min"},
		{"elastic growing", engine.Forecast{OK: true, Rate: 4, ToEmpty: d(0), ToCeiling: d(time.Hour)}, 8,
			"free 0 now; at this rate (net +4.0 claims/h): at its ceiling 8 in ~1 h"},
		{"at its ceiling, flat", engine.Forecast{OK: true, ToEmpty: d(0), ToCeiling: d(0)}, 3,
			"free 0 now; at its ceiling 3 now; not filling further at this rate (net +0.0 claims/h)"},
	} {
		if got := ForecastText(tt.f, tt.ceiling); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestExhaustion(t *testing.T) {
	elastic := engine.Spec{Size: 5, MinSize: 2, MaxSize: 40}
	for _, tt := range []struct {
		name  string
		v     engine.PoolView
		alarm bool
		words string
	}{
		{"fixed", engine.PoolView{Spec: engine.Spec{Size: 3}, Size: 3, Status: engine.Status{Exhausted: true}}, true, "exhausted"},
		{"elastic growing", engine.PoolView{Spec: elastic, Size: 7, Status: engine.Status{Exhausted: true}}, false, "exhausted (growing, max 40)"},
		{"elastic at ceiling", engine.PoolView{Spec: elastic, Size: 40, Status: engine.Status{Exhausted: true}}, true, "exhausted at ceiling 40"},
		{"not exhausted", engine.PoolView{Spec: elastic, Size: 40, Status: engine.Status{Free: 1}}, false, ""},
	} {
		if got := ExhaustedAlarm(&tt.v); got != tt.alarm {
			t.Errorf("%s: alarm %v, want %v", tt.name, got, tt.alarm)
		}
		if got := ExhaustedWords(&tt.v); got != tt.words {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.words)
		}
	}
}

func TestElasticText(t *testing.T) {
	spare := 3
	at := t10.Add(-12 * time.Minute)
	v := engine.PoolView{Spec: engine.Spec{Size: 5, MinSize: 2, MaxSize: 40, Spare: &spare, Power: engine.PowerStopped}, Size: 7,
		Recorded: engine.Status{Elastic: &engine.ElasticStatus{Size: 7, From: 5, Reason: "grew from 5 to 7: 1 free of spare 3\x1b[2J", ChangedAt: &at}}}
	want := "elastic 2..40, spare 3, power stopped, size 7 (grew from 5 to 7: 1 free of spare 3, 12m ago)"
	if got := ElasticText(&v, t10); got != want {
		t.Errorf("ElasticText = %q, want %q", got, want)
	}
	if got := ElasticText(&engine.PoolView{Spec: engine.Spec{Size: 3}, Size: 3}, t10); got != "" {
		t.Errorf("fixed pool: %q", got)
	}
}
