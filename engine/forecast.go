package engine

import (
	"math"
	"sort"
	"time"
)

// Forecast is the time to exhaustion from the recent claim rate.
type Forecast struct {
	// Rate is the net change of claimed members per hour over the window
	// (claims minus releases); meaningful when OK.
	Rate float64
	// OK: enough data: at least ForecastMinSamples points (complete slots
	// of the window) from first to last at least ForecastMinSpan apart.
	OK bool
	// ToEmpty: at this rate, when free reaches 0 at the current size; 0 when
	// free is already 0 (whatever the data); nil when the rate does not
	// exhaust it ("not at this rate": Rate at most ForecastMinRate, or later
	// than ForecastHorizon) or when not OK.
	ToEmpty *time.Duration
	// ToCeiling: for an elastic pool (ceiling > 0), when claimed reaches the
	// ceiling (its maxSize); 0 when it already has; nil for a fixed pool, when
	// not at this rate, or when not OK.
	ToCeiling *time.Duration
	// Window is the span of the data used: from the oldest point used to now.
	Window time.Duration
	// Samples is the number of points used: slots of HistoryInterval that
	// hold a sample.
	Samples int
	// Step: a change of rate was detected and only the last
	// ForecastStepWindow was used.
	Step bool
}

// The forecast's parameters and its stated error bounds (tested in
// forecast_test.go, quoted in docs/elastic.md).
const (
	// ForecastWindow is how far back the forecast looks.
	ForecastWindow = 60 * time.Minute
	// ForecastStepWindow is the recent part of the window that replaces it
	// when its rate differs from the whole window's (a change of rate).
	ForecastStepWindow = 30 * time.Minute
	// ForecastMinSamples and ForecastMinSpan: less data is no forecast.
	ForecastMinSamples = 4
	ForecastMinSpan    = 15 * time.Minute
	// ForecastMinRate (claims per hour): a net rate at most this is "not at
	// this rate" (flat, or releasing).
	ForecastMinRate = 0.5
	// ForecastHorizon: an exhaustion later than this is "not at this rate".
	ForecastHorizon = 24 * time.Hour
	// The recent rate replaces the window's when they differ by more than
	// ForecastStepAbs claims per hour, by more than ForecastStepRel times the
	// larger of the two, and by more than ForecastStepNoise times the noise
	// of the counts (noiseOf) over the recent points' span: a difference that
	// whole numbers and noise alone seldom make.
	ForecastStepAbs   = 1.5
	ForecastStepRel   = 0.10
	ForecastStepNoise = 3.0

	// The stated errors hold for rates of at least ForecastResolvedRate
	// claims per hour (one claim per HistoryInterval): below it, the counts'
	// whole numbers in slots of HistoryInterval hide the slope, and a
	// forecast may be missing or further off.
	ForecastResolvedRate = 12.0
	// ForecastErrLinear: on a steady rate, Rate, ToEmpty and ToCeiling are
	// within this fraction of the truth as soon as the forecast is OK.
	ForecastErrLinear = 0.10
	// ForecastStepDelay and ForecastErrStep: after a change of rate (a steady
	// rate, then another one, or none), the forecast is within
	// ForecastErrStep of the new rate at the latest ForecastStepDelay after
	// the change (the recent window, plus the slot in progress).
	ForecastStepDelay = ForecastStepWindow + HistoryInterval
	ForecastErrStep   = 0.15
	// ForecastErrNoisy: on a steady rate of at least ForecastNoiseRate with
	// noise of up to ±ForecastNoiseMembers members on each sample, within
	// this fraction.
	ForecastErrNoisy     = 0.25
	ForecastNoiseMembers = 2
	ForecastNoiseRate    = 60.0
)

// ForecastFrom computes the forecast at now from samples (a history's, plus
// any live samples the caller appends, in any order; those after now are
// ignored) and the current counts; ceiling is an elastic pool's maxSize, 0 for
// a fixed pool.
//
// The method: the samples are put in slots of HistoryInterval as History.Add
// does (each slot's lowest-free moment, at the slot's start); the points are
// the slots of the last ForecastWindow but the one in progress, which holds a
// part of a slot only. Rate is the Theil–Sen slope of Claimed over time: the
// median of the slopes between every two points, which noise of a few members
// or a single outlier barely moves. To follow a change of rate within a
// bounded delay, the same slope is taken on the points of the last
// ForecastStepWindow alone; when the two differ by more than ForecastStepAbs
// per hour, by more than ForecastStepRel of the larger and by more than
// ForecastStepNoise times the counts' noise over the recent span, the recent
// one is used (Step). With Rate >
// ForecastMinRate, ToEmpty = free / Rate and ToCeiling = (ceiling - claimed)
// / Rate, each only when within ForecastHorizon.
func ForecastFrom(samples []Sample, now time.Time, free, claimed, ceiling int) Forecast {
	var f Forecast
	if free <= 0 {
		f.ToEmpty = durationPtr(0)
	}
	if ceiling > 0 && claimed >= ceiling {
		f.ToCeiling = durationPtr(0)
	}
	pts := forecastPoints(samples, now)
	if len(pts) < ForecastMinSamples || pts[len(pts)-1].at.Sub(pts[0].at) < ForecastMinSpan {
		f.Samples = len(pts)
		if len(pts) > 0 {
			f.Window = now.Sub(pts[0].at)
		}
		return f
	}
	f.OK = true
	used := pts
	rate := theilSen(pts)
	recentFrom := now.Add(-ForecastStepWindow)
	i := sort.Search(len(pts), func(i int) bool { return !pts[i].at.Before(recentFrom) })
	if recent := pts[i:]; i > 0 && len(recent) >= ForecastMinSamples {
		r := theilSen(recent)
		span := recent[len(recent)-1].at.Sub(recent[0].at).Hours()
		if d := math.Abs(r - rate); d > ForecastStepAbs && d > ForecastStepRel*math.Max(math.Abs(r), math.Abs(rate)) && d > ForecastStepNoise*noiseOf(pts)/span {
			rate, used, f.Step = r, recent, true
		}
	}
	f.Rate, f.Samples, f.Window = rate, len(used), now.Sub(used[0].at)
	if rate <= ForecastMinRate {
		return f
	}
	if free > 0 {
		f.ToEmpty = within(float64(free) / rate)
	}
	if ceiling > 0 && claimed < ceiling {
		f.ToCeiling = within(float64(ceiling-claimed) / rate)
	}
	return f
}

type point struct {
	at time.Time
	y  float64
}

// forecastPoints: the samples put in HistoryInterval slots as History.Add
// does (the lowest free moment of each slot, at the slot's start), the slots
// from ForecastWindow before now to the last complete one, oldest first. The
// slot in progress at now is left out: it holds a part of a slot only, so its
// moment is not comparable with the others'.
func forecastPoints(samples []Sample, now time.Time) []point {
	from, current := now.Add(-ForecastWindow), now.Truncate(HistoryInterval)
	in := make([]Sample, 0, len(samples))
	for _, s := range samples {
		if slot := s.At.Truncate(HistoryInterval); !slot.Before(from) && slot.Before(current) {
			in = append(in, s)
		}
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].At.Before(in[j].At) })
	var slots []Sample
	for _, s := range in {
		slots = addSample(slots, s)
	}
	pts := make([]point, len(slots))
	for i, s := range slots {
		pts[i] = point{at: s.At, y: float64(s.Claimed)}
	}
	return pts
}

// theilSen is the median of the slopes (per hour) between every two points.
func theilSen(pts []point) float64 {
	slopes := make([]float64, 0, len(pts)*(len(pts)-1)/2)
	for i := range pts {
		for j := i + 1; j < len(pts); j++ {
			if dt := pts[j].at.Sub(pts[i].at).Hours(); dt > 0 {
				slopes = append(slopes, (pts[j].y-pts[i].y)/dt)
			}
		}
	}
	return median(slopes)
}

// noiseOf estimates the noise of the points' counts (a standard deviation,
// in members) from the second differences of three consecutive slots, which
// a steady rate does not change and a change of rate changes only once:
// 1.4826 times their median absolute value, over sqrt(6).
func noiseOf(pts []point) float64 {
	var d2 []float64
	for i := 2; i < len(pts); i++ {
		if pts[i].at.Sub(pts[i-1].at) == HistoryInterval && pts[i-1].at.Sub(pts[i-2].at) == HistoryInterval {
			d2 = append(d2, math.Abs(pts[i].y-2*pts[i-1].y+pts[i-2].y))
		}
	}
	return 1.4826 * median(d2) / math.Sqrt(6)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// within returns hours as a duration, or nil beyond ForecastHorizon.
func within(hours float64) *time.Duration {
	if hours > ForecastHorizon.Hours() {
		return nil
	}
	return durationPtr(time.Duration(hours * float64(time.Hour)))
}

func durationPtr(d time.Duration) *time.Duration { return &d }

// ClaimsPerHour returns the claims and releases per hour over the samples of
// the last hour before now (and at now): claims are the sum of the increases
// of Claimed between consecutive samples, releases the sum of its decreases,
// each divided by the time between the first and the last of those samples.
// They are lower bounds: the samples hide what happens between them (a claim
// and a release between two samples cancel out, and a gap hides everything
// but the net change across it). Both are 0 with fewer than two samples.
func ClaimsPerHour(samples []Sample, now time.Time) (claims, releases float64) {
	from := now.Add(-time.Hour)
	in := make([]Sample, 0, len(samples))
	for _, s := range samples {
		if !s.At.Before(from) && !s.At.After(now) {
			in = append(in, s)
		}
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].At.Before(in[j].At) })
	if len(in) < 2 {
		return 0, 0
	}
	span := in[len(in)-1].At.Sub(in[0].At).Hours()
	if span <= 0 {
		return 0, 0
	}
	for i := 1; i < len(in); i++ {
		if d := in[i].Claimed - in[i-1].Claimed; d > 0 {
			claims += float64(d)
		} else {
			releases -= float64(d)
		}
	}
	return claims / span, releases / span
}
