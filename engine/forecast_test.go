package engine

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// ramp is a pool's claimed count, minute by minute from trendT0.
type ramp func(minute int) int

func linearRamp(base int, perHour float64) ramp {
	return func(m int) int { return base + int(perHour*float64(m)/60) }
}

// stepRamp is flat at base until change, then claims at perHour, or the
// reverse when before > 0: claims at before per hour, then flat.
func stepRamp(base, change int, before, after float64) ramp {
	return func(m int) int {
		if m < change {
			return base + int(before*float64(m)/60)
		}
		return base + int(before*float64(change)/60) + int(after*float64(m-change)/60)
	}
}

// noisyRamp is a linear ramp plus noise of up to ±k members, the same for
// the same seed.
func noisyRamp(base int, perHour float64, k int, seed uint64) ramp {
	rng := rand.New(rand.NewPCG(seed, 1))
	noise := make([]int, 24*60)
	for i := range noise {
		noise[i] = rng.IntN(2*k+1) - k
	}
	lin := linearRamp(base, perHour)
	return func(m int) int { return max(lin(m)+noise[m], 0) }
}

// record is what a reconciler running every minute from trendT0 to minute
// now records in a pool of size members, and the counts at now.
func record(r ramp, size, now int) (h History, free, claimed int) {
	for m := 0; m <= now; m++ {
		claimed = r(m)
		free = size - claimed
		h = h.Add(Sample{At: at(float64(m)), Free: free, Claimed: claimed, Size: size})
	}
	return h, free, claimed
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

// hours converts a duration pointer to hours, NaN for nil.
func hours(d *time.Duration) float64 {
	if d == nil {
		return math.NaN()
	}
	return d.Hours()
}

// checkRate checks, at every minute from from to to, that the forecast's
// rate, ToEmpty and ToCeiling are within maxErr of a pool claiming at
// perHour; free and the ceiling are picked so that both fall within the
// horizon.
func checkRate(t *testing.T, r ramp, perHour float64, from, to int, maxErr float64) {
	t.Helper()
	worst, worstAt := 0.0, 0
	for now := from; now <= to; now++ {
		h, _, claimed := record(r, MaxPoolSize, now)
		free := int(perHour * 3) // three hours away
		ceiling := claimed + int(perHour*2)
		f := ForecastFrom(h.Samples, at(float64(now)), free, claimed, ceiling)
		if !f.OK {
			t.Fatalf("minute %d: not OK: %+v", now, f)
		}
		wantEmpty := float64(free) / perHour
		wantCeiling := float64(ceiling-claimed) / perHour
		for _, e := range []float64{relErr(f.Rate, perHour), relErr(hours(f.ToEmpty), wantEmpty), relErr(hours(f.ToCeiling), wantCeiling)} {
			if !(e <= worst) {
				worst, worstAt = e, now
			}
		}
	}
	if !(worst <= maxErr) {
		h, _, claimed := record(r, MaxPoolSize, worstAt)
		f := ForecastFrom(h.Samples, at(float64(worstAt)), int(perHour*3), claimed, claimed+int(perHour*2))
		t.Errorf("error %.3f at minute %d, more than %.2f: rate %.2f, want %.2f (%+v)", worst, worstAt, maxErr, f.Rate, perHour, f)
	}
	t.Logf("worst error %.3f", worst)
}

// Claims at a steady rate: within ForecastErrLinear once the history spans
// ForecastMinSpan and for hours after.
func TestForecastLinear(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perHour float64
	}{
		{"the resolved rate", ForecastResolvedRate},
		{"30/h", 30},
		{"one a minute", 60},
		{"2.5 a slot", 150},
		{"600/h", 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := int((ForecastMinSpan + HistoryInterval) / time.Minute)
			checkRate(t, linearRamp(10, tc.perHour), tc.perHour, from, 240, ForecastErrLinear)
		})
	}
}

// Flat, then claims at a new rate: within ForecastErrStep of the new rate
// from ForecastStepDelay after the change on; and the reverse (a rate, then
// none): "not at this rate" from ForecastStepDelay on.
func TestForecastStep(t *testing.T) {
	const change = 120
	delay := int(ForecastStepDelay / time.Minute)
	for _, tc := range []struct {
		name          string
		before, after float64
	}{
		{"flat, then the resolved rate", 0, ForecastResolvedRate},
		{"flat, then 30/h", 0, 30},
		{"flat, then 120/h", 0, 120},
		{"12/h, then 120/h", 12, 120},
		{"120/h, then 30/h", 120, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRate(t, stepRamp(10, change, tc.before, tc.after), tc.after, change+delay, change+240, ForecastErrStep)
		})
	}
	for _, tc := range []struct {
		name   string
		before float64
	}{{"30/h, then none", 30}, {"120/h, then none", 120}, {"600/h, then none", 600}} {
		t.Run(tc.name, func(t *testing.T) {
			r := stepRamp(10, change, tc.before, 0)
			for now := change + delay; now <= change+240; now++ {
				h, _, claimed := record(r, MaxPoolSize, now)
				f := ForecastFrom(h.Samples, at(float64(now)), 10, claimed, claimed+5)
				if !f.OK || f.Rate > ForecastMinRate || f.ToEmpty != nil || f.ToCeiling != nil {
					t.Fatalf("minute %d after the change: %+v, want no exhaustion", now-change, f)
				}
			}
		})
	}
}

// A ramp with noise of ±ForecastNoiseMembers on every sample, from 20 seeds:
// within ForecastErrNoisy.
func TestForecastNoisy(t *testing.T) {
	for _, perHour := range []float64{ForecastNoiseRate, 120, 600} {
		for seed := uint64(1); seed <= 20; seed++ {
			r := noisyRamp(20, perHour, ForecastNoiseMembers, seed)
			checkRate(t, r, perHour, 60, 180, ForecastErrNoisy)
		}
	}
}

// A single wild sample (a burst claimed and released within a minute, or a
// misread) barely moves the rate.
func TestForecastOutlier(t *testing.T) {
	lin := linearRamp(10, 60)
	r := func(m int) int {
		if m == 100 {
			return lin(m) + 40
		}
		return lin(m)
	}
	checkRate(t, r, 60, 100, 180, ForecastErrLinear)
}

func TestForecastNoExhaustion(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    ramp
	}{
		{"flat", func(int) int { return 7 }},
		{"flat with noise", func(m int) int { return 7 + m%3 - 1 }},
		{"releasing", func(m int) int { return max(100-m/2, 0) }},
		{"below the minimum rate", linearRamp(10, ForecastMinRate/2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, now := range []int{30, 61, 90, 119} {
				h, _, claimed := record(tc.r, 200, now)
				f := ForecastFrom(h.Samples, at(float64(now)), 5, claimed, claimed+1)
				if !f.OK || f.Rate > ForecastMinRate || f.ToEmpty != nil || f.ToCeiling != nil {
					t.Errorf("minute %d: %+v, want OK and no exhaustion", now, f)
				}
			}
		})
	}
}

func TestForecastTooFew(t *testing.T) {
	lin := linearRamp(10, 60)
	slots := func(ms ...int) []Sample {
		var s []Sample
		for _, m := range ms {
			s = append(s, Sample{At: at(float64(m)), Free: 50 - lin(m), Claimed: lin(m), Size: 50})
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		samples []Sample
		now     int
		wantOK  bool
	}{
		{"none", nil, 60, false},
		{"three slots", slots(5, 10, 15), 21, false},
		{"many samples in the slot in progress only", slots(20, 21, 22, 23, 24), 24, false},
		{"four samples in three slots", slots(5, 10, 15, 19), 25, false},
		{"four slots, the last in progress", slots(5, 10, 15, 20), 24, false},
		{"samples older than the window", slots(0, 5, 10, 15, 20, 25, 30), 30 + 60 + 10, false},
		{"samples after now", slots(35, 40, 45, 50), 30, false},
		{"four slots over the minimum span", slots(5, 10, 15, 20), 25, true},
		{"four slots with a gap", slots(5, 10, 20, 25), 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := at(float64(tc.now))
			f := ForecastFrom(tc.samples, now, 20, lin(tc.now), 0)
			if f.OK != tc.wantOK {
				t.Fatalf("OK %v, want %v: %+v", f.OK, tc.wantOK, f)
			}
			if !f.OK && (f.ToEmpty != nil || f.ToCeiling != nil) {
				t.Errorf("not OK but %+v", f)
			}
			if f.OK && relErr(f.Rate, 60) > ForecastErrLinear {
				t.Errorf("rate %.2f, want 60", f.Rate)
			}
		})
	}
}

func TestForecastCeiling(t *testing.T) {
	const perHour = 60
	h, _, claimed := record(linearRamp(10, perHour), 500, 120) // claimed 130
	now := at(120)
	d := func(h float64) *time.Duration { return durationPtr(time.Duration(h * float64(time.Hour))) }
	for _, tc := range []struct {
		name                   string
		free, claimed, ceiling int
		toEmpty, toCeiling     *time.Duration
	}{
		{"fixed pool", 30, claimed, 0, d(0.5), nil},
		{"elastic", 30, claimed, claimed + 90, d(0.5), d(1.5)},
		{"elastic, at its ceiling", 30, claimed, claimed, d(0.5), d(0)},
		{"elastic, above its ceiling", 30, claimed, claimed - 3, d(0.5), d(0)},
		{"empty already", 0, claimed, claimed + 90, d(0), d(1.5)},
		{"both beyond the horizon", perHour * 25, claimed, claimed + perHour*30, nil, nil},
		{"ceiling within, empty beyond", perHour * 25, claimed, claimed + perHour*2, nil, d(2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := ForecastFrom(h.Samples, now, tc.free, tc.claimed, tc.ceiling)
			for _, c := range []struct {
				what      string
				got, want *time.Duration
			}{{"ToEmpty", f.ToEmpty, tc.toEmpty}, {"ToCeiling", f.ToCeiling, tc.toCeiling}} {
				switch {
				case (c.got == nil) != (c.want == nil):
					t.Errorf("%s %v, want %v", c.what, hours(c.got), hours(c.want))
				case c.want != nil && *c.want == 0 && *c.got != 0:
					t.Errorf("%s %v, want 0", c.what, *c.got)
				case c.want != nil && *c.want != 0 && relErr(c.got.Hours(), c.want.Hours()) > ForecastErrLinear:
					t.Errorf("%s %v, want %v", c.what, *c.got, *c.want)
				}
			}
		})
	}
	t.Run("empty and at its ceiling with no data", func(t *testing.T) {
		f := ForecastFrom(nil, now, 0, 10, 10)
		if f.OK || f.ToEmpty == nil || *f.ToEmpty != 0 || f.ToCeiling == nil || *f.ToCeiling != 0 {
			t.Errorf("%+v", f)
		}
	})
}

// Live samples appended to the history, in any order, and duplicates give
// the forecast of the same slots.
func TestForecastLiveSamples(t *testing.T) {
	const now = 150
	lin := linearRamp(10, 60)
	h, free, claimed := record(lin, 500, 100)
	var live []Sample
	for m := now; m > 100; m-- {
		live = append(live, Sample{At: at(float64(m)), Free: 500 - lin(m), Claimed: lin(m), Size: 500})
	}
	all, _, _ := record(lin, 500, now)
	want := ForecastFrom(all.Samples, at(now), free, claimed, 0)
	got := ForecastFrom(append(append(h.Samples, live...), live...), at(now), free, claimed, 0)
	if got.Rate != want.Rate || got.Samples != want.Samples || got.Window != want.Window {
		t.Errorf("with live samples %+v, from the history %+v", got, want)
	}
	if len(h.Samples) != 21 {
		t.Errorf("the history changed: %d samples", len(h.Samples))
	}
}

func TestClaimsPerHour(t *testing.T) {
	now := at(120)
	for _, tc := range []struct {
		name                   string
		samples                []Sample
		wantClaims, wantReleas float64
	}{
		{"none", nil, 0, 0},
		{"one", []Sample{smp(100, 0, 5, 9)}, 0, 0},
		{"two at the same time", []Sample{smp(100, 0, 5, 9), smp(100, 0, 7, 9)}, 0, 0},
		{"claims over half an hour", []Sample{smp(90, 0, 5, 9), smp(100, 0, 8, 9), smp(120, 0, 10, 9)}, 10, 0},
		{"claims and releases, in any order", []Sample{smp(120, 0, 4, 9), smp(60, 0, 5, 9), smp(90, 0, 9, 9)}, 4, 5},
		{"older than an hour and after now ignored", []Sample{smp(0, 0, 100, 9), smp(60, 0, 5, 9), smp(120, 0, 6, 9), smp(121, 0, 0, 9)}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r := ClaimsPerHour(tc.samples, now)
			if math.Abs(c-tc.wantClaims) > 1e-9 || math.Abs(r-tc.wantReleas) > 1e-9 {
				t.Errorf("claims %.3f releases %.3f, want %.3f %.3f", c, r, tc.wantClaims, tc.wantReleas)
			}
		})
	}
}
