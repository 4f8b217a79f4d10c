package engine

import (
	"reflect"
	"testing"
	"time"
)

// Two appends to results of Since never write into each other, nor into the
// history, even when the history has spare capacity.
func TestHistorySinceAppendsCopy(t *testing.T) {
	h := historyOf(smp(0, 1, 1, 2), smp(5, 2, 2, 4), smp(15, 3, 3, 6))
	h.Samples = append(make([]Sample, 0, 16), h.Samples...)
	for _, from := range []time.Time{at(0), at(5), at(16)} {
		a := append(h.Since(from), smp(100, 7, 7, 7))
		b := append(h.Since(from), smp(105, 8, 8, 8))
		if a[len(a)-1] != smp(100, 7, 7, 7) || b[len(b)-1] != smp(105, 8, 8, 8) {
			t.Errorf("since %s: appends wrote into each other: %v and %v", from.Format("15:04"), a, b)
		}
	}
}

// Encode makes a hand-made history canonical first, as Add would have, even
// when each sample is already at a slot's start in UTC.
func TestHistoryEncodeHandMade(t *testing.T) {
	var day []Sample
	for i := 0; i <= HistoryMaxSamples; i++ { // 289 slots: exactly HistoryWindow from the first to the last
		day = append(day, Sample{At: trendT0.Add(time.Duration(i) * HistoryInterval), Free: i % 7, Claimed: 1, Size: 9})
	}
	for _, tc := range []struct {
		name string
		h    History
		want []Sample // what ParseHistory reads back
	}{
		{"out of order: the older one is ignored", History{Samples: []Sample{smp(10, 3, 2, 5), smp(5, 1, 1, 5)}},
			[]Sample{smp(10, 3, 2, 5)}},
		{"exactly a window from first to last: the first is dropped", History{Samples: day}, day[1:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := tc.h.Encode()
			back, err := ParseHistory(enc)
			if err != nil {
				t.Fatalf("%v\n%s", err, enc)
			}
			if !reflect.DeepEqual(back.Samples, tc.want) {
				t.Errorf("read back %v\nwant %v", back.Samples, tc.want)
			}
		})
	}
}

// recordHistory adds a sample when any count changed, or when the last one
// is HistoryHeartbeat old; otherwise it returns prev itself (no write).
func TestRecordHistoryRules(t *testing.T) {
	prev := historyOf(smp(0, 3, 2, 5))
	for _, tc := range []struct {
		name string
		prev *History
		s    Sample
		add  bool
	}{
		{"the first sample", nil, smp(0, 3, 2, 5), true},
		{"nothing changed", &prev, smp(30, 3, 2, 5), false},
		{"nothing changed, just short of the heartbeat", &prev, smp(59, 3, 2, 5), false},
		{"nothing changed for the heartbeat", &prev, smp(60, 3, 2, 5), true},
		{"free changed", &prev, smp(5, 2, 2, 5), true},
		{"claimed changed", &prev, smp(5, 3, 3, 5), true},
		{"size changed", &prev, smp(5, 3, 2, 6), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recordHistory(tc.prev, tc.s)
			if !tc.add {
				if got != tc.prev {
					t.Fatalf("recorded %v, want prev unchanged", got)
				}
				return
			}
			if got == nil || got == tc.prev {
				t.Fatalf("got prev back, want %v added", tc.s)
			}
			if last, _ := got.Last(); last != normalSample(tc.s) {
				t.Errorf("last sample %v, want %v", last, normalSample(tc.s))
			}
			if tc.prev != nil && len(tc.prev.Samples) != 1 {
				t.Errorf("prev changed: %v", tc.prev.Samples)
			}
		})
	}
}

// Filled fills each slot after a sample, up to HistoryHeartbeat after it,
// before the next sample and before the slot in progress at now.
func TestHistoryFilledRules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []Sample
		now     float64 // minutes
		want    []Sample
	}{
		{"the slot in progress is not filled", []Sample{smp(0, 3, 2, 5)}, 32,
			[]Sample{smp(0, 3, 2, 5), smp(5, 3, 2, 5), smp(10, 3, 2, 5), smp(15, 3, 2, 5), smp(20, 3, 2, 5), smp(25, 3, 2, 5)}},
		{"fills stop at the next sample", []Sample{smp(0, 3, 2, 5), smp(10, 1, 4, 5)}, 20,
			[]Sample{smp(0, 3, 2, 5), smp(5, 3, 2, 5), smp(10, 1, 4, 5), smp(15, 1, 4, 5)}},
		{"beyond the heartbeat a gap stays a gap", []Sample{smp(0, 3, 2, 5), smp(120, 1, 4, 5)}, 121,
			append(append([]Sample{smp(0, 3, 2, 5)}, func() (fill []Sample) {
				for m := 5; m < 60; m += 5 {
					fill = append(fill, smp(float64(m), 3, 2, 5))
				}
				return fill
			}()...), smp(120, 1, 4, 5))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := historyOf(tc.samples...).Filled(at(tc.now))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

// Filled keeps only the window before now: a history whose reconciler
// stopped writing days ago fills nothing and shows nothing of those days.
func TestHistoryFilledDropsSamplesPastTheWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	h := History{}.Add(Sample{At: t0, Free: 3, Size: 5}).Add(Sample{At: t0.Add(time.Hour), Free: 2, Size: 5})
	for _, tc := range []struct {
		now  time.Time
		want int
	}{
		{t0.Add(3 * 24 * time.Hour), 0},
		{t0.Add(HistoryWindow + 30*time.Minute), 12}, // the second sample and its hour of fill
		{t0.Add(2 * time.Hour), 24},
	} {
		if got := h.Filled(tc.now); len(got) != tc.want {
			t.Errorf("Filled(%s) gave %d samples, want %d", tc.now.Sub(t0), len(got), tc.want)
		}
	}
}
