package engine

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// claimedAt is one sample per pair of minute (from trendT0) and claimed
// count, in a pool of 100.
func claimedAt(pairs ...int) []Sample {
	var s []Sample
	for i := 0; i+1 < len(pairs); i += 2 {
		s = append(s, Sample{At: at(float64(pairs[i])), Claimed: pairs[i+1], Free: 100 - pairs[i+1], Size: 100})
	}
	return s
}

// everySlot is one sample per slot from trendT0 on, of the claimed counts given.
func everySlot(claimed ...int) []Sample {
	var pairs []int
	for i, c := range claimed {
		pairs = append(pairs, 5*i, c)
	}
	return claimedAt(pairs...)
}

// The forecast's rules at their bounds (issue 41): each case fails when the
// rule it names is broken. now is minute 60: the points are the slots at
// minutes 0 to 55, and the recent ones those at 30 to 55.
func TestForecastRules(t *testing.T) {
	const (
		none      = time.Duration(-1) // nil wanted
		unchecked = time.Duration(-2)
	)
	// ramp: twelve slots from from, perSlot1 apart, then perSlot2 from minute 30.
	ramp := func(from, perSlot1, perSlot2 int) []Sample {
		var c []int
		y := from
		for i := 0; i < 12; i++ {
			c = append(c, y)
			if i < 6 {
				y += perSlot1
			} else {
				y += perSlot2
			}
		}
		return everySlot(c...)
	}
	for _, tc := range []struct {
		name                   string
		samples                []Sample
		free, claimed, ceiling int
		step                   bool
		samplesUsed            int
		window                 time.Duration
		rate                   float64 // NaN: not checked
		toEmpty, toCeiling     time.Duration
	}{
		{name: "a flat pool whose claims jitter by two: no step, not at this rate",
			samples: everySlot(9, 12, 11, 8, 9, 8, 11, 9, 8, 9, 11, 12), free: 10, claimed: 11,
			samplesUsed: 12, window: time.Hour, rate: 0, toEmpty: none, toCeiling: none},
		{name: "a difference of at most ForecastStepAbs per hour is no step",
			samples: claimedAt(0, 21, 5, 20, 15, 19, 30, 19, 40, 21, 45, 20, 55, 20), free: 5, claimed: 20,
			samplesUsed: 7, window: time.Hour, rate: 0, toEmpty: none, toCeiling: none},
		{name: "a change of rate of at most ForecastStepRel of it is no step",
			samples: ramp(100, 50, 53), free: 1000, claimed: 700,
			samplesUsed: 12, window: time.Hour, rate: math.NaN(), toEmpty: unchecked, toCeiling: none},
		{name: "a step: the points from ForecastStepWindow ago on are used",
			samples: everySlot(20, 20, 20, 20, 20, 20, 20, 25, 30, 35, 40, 45), free: 288, claimed: 45, ceiling: 105,
			step: true, samplesUsed: 6, window: ForecastStepWindow, rate: 60, toEmpty: 288 * time.Minute, toCeiling: time.Hour},
		{name: "a recent half hour of fewer than ForecastMinSamples points is no step",
			samples: claimedAt(0, 20, 5, 20, 10, 20, 15, 20, 20, 20, 25, 20, 45, 30, 55, 60), free: 40, claimed: 60,
			samplesUsed: 8, window: time.Hour, rate: 0, toEmpty: none, toCeiling: none},
		{name: "a rate of exactly ForecastMinRate is not at this rate",
			samples: claimedAt(0, 13, 5, 10, 10, 11, 30, 12), free: 5, claimed: 12, ceiling: 13,
			samplesUsed: 4, window: time.Hour, rate: ForecastMinRate, toEmpty: none, toCeiling: none},
		{name: "an exhaustion exactly ForecastHorizon away is forecast",
			samples: ramp(10, 1, 1), free: 288, claimed: 21, ceiling: 21 + 288,
			samplesUsed: 12, window: time.Hour, rate: 12, toEmpty: ForecastHorizon, toCeiling: ForecastHorizon},
		// The slopes (per hour) are 0, 6, 8, 12, 12 and 12: the median of
		// an even number is the mean of the middle two.
		{name: "the rate is the median of the slopes: the mean of the middle two",
			samples: claimedAt(0, 10, 5, 10, 10, 11, 15, 12), free: 90, claimed: 12,
			samplesUsed: 4, window: time.Hour, rate: 10, toEmpty: 9 * time.Hour, toCeiling: none},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := ForecastFrom(tc.samples, at(60), tc.free, tc.claimed, tc.ceiling)
			if !f.OK || f.Step != tc.step || f.Samples != tc.samplesUsed || f.Window != tc.window {
				t.Fatalf("%+v: want OK, step %v, %d samples over %s", f, tc.step, tc.samplesUsed, tc.window)
			}
			if !math.IsNaN(tc.rate) && math.Abs(f.Rate-tc.rate) > 1e-9 {
				t.Errorf("rate %v, want %v", f.Rate, tc.rate)
			}
			for _, c := range []struct {
				what string
				got  *time.Duration
				want time.Duration
			}{{"ToEmpty", f.ToEmpty, tc.toEmpty}, {"ToCeiling", f.ToCeiling, tc.toCeiling}} {
				switch {
				case c.want == none && c.got != nil:
					t.Errorf("%s %v, want none", c.what, *c.got)
				case c.want == none || c.want == unchecked:
				case c.got == nil:
					t.Errorf("%s none, want %v", c.what, c.want)
				case (*c.got - c.want).Abs() > time.Millisecond:
					t.Errorf("%s %v, want %v", c.what, *c.got, c.want)
				}
			}
		})
	}
}

// noiseOf is a standard deviation, in members, of the counts around their
// trend, from the second differences of consecutive slots only.
func TestForecastNoiseEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	slot := func(i int) time.Time { return trendT0.Add(time.Duration(i) * HistoryInterval) }
	var noisy, gapped, kinked []point
	for i := 0; i < 2000; i++ {
		noisy = append(noisy, point{slot(i), 3*float64(i) + 2*rng.NormFloat64()})
	}
	for i := 0; i < 60; i++ {
		if i%3 != 2 { // every third slot missing: no three consecutive slots
			gapped = append(gapped, point{slot(i), 5 * float64(i)})
		}
		y := float64(i)
		if i > 30 {
			y = 30 + 4*float64(i-30)
		}
		kinked = append(kinked, point{slot(i), y})
	}
	for _, tc := range []struct {
		name     string
		pts      []point
		want, by float64
	}{
		{"a steady rate with noise of 2 members", noisy, 2, 0.2},
		{"a steady rate with gaps: no noise", gapped, 0, 0},
		{"a steady rate that changes once: no noise", kinked, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := noiseOf(tc.pts); math.Abs(got-tc.want) > tc.by {
				t.Errorf("noise %.3f, want %.3f ± %.2f", got, tc.want, tc.by)
			}
		})
	}
}
