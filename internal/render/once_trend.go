package render

import (
	"fmt"
	"math"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The elastic bounds and the trend of a pool in --once and status: their
// JSON objects and table lines.

// OnceElastic is an elastic pool's definition and the reconciler's record
// of its size.
type OnceElastic struct {
	MinSize int `json:"minSize"`
	MaxSize int `json:"maxSize"`
	Spare   int `json:"spare"`
	// Power is running or stopped; Settle the time above the spare before
	// a shrink (a Go duration: 10m0s).
	Power  string `json:"power"`
	Settle string `json:"settle"`
	// Reason is the reconciler's words on the last change of size, and
	// ChangedAt its time (absent before any).
	Reason    string     `json:"reason,omitempty"`
	ChangedAt *time.Time `json:"changedAt,omitempty"`
	// AtCeiling: exhausted at maxSize (an attention state, as a fixed
	// pool's exhaustion); exhausted below it, a claim grows the pool.
	AtCeiling bool `json:"atCeiling"`
}

// OnceTrend is a pool's recorded history, filled over the reconciler's
// hourly gaps (engine.History.Filled), with the claim rates and the
// forecast computed at the report's time from it and the current counts.
type OnceTrend struct {
	Samples []OnceSample `json:"samples"`
	// ClaimsPerHour and ReleasesPerHour over the last hour are lower
	// bounds (engine.ClaimsPerHour).
	ClaimsPerHour   float64      `json:"claimsPerHour"`
	ReleasesPerHour float64      `json:"releasesPerHour"`
	Forecast        OnceForecast `json:"forecast"`
}

// OnceSample is one slot of a pool's history.
type OnceSample struct {
	At      time.Time `json:"at"`
	Free    int       `json:"free"`
	Claimed int       `json:"claimed"`
	Size    int       `json:"size"`
}

// OnceForecast is engine.Forecast: the net claim rate per hour, whether
// there was enough history (ok), and the seconds until no member is free
// and until an elastic pool is at its ceiling: 0 when already, null when
// not at this rate (or not ok).
type OnceForecast struct {
	RatePerHour      float64  `json:"ratePerHour"`
	OK               bool     `json:"ok"`
	ToEmptySeconds   *float64 `json:"toEmptySeconds"`
	ToCeilingSeconds *float64 `json:"toCeilingSeconds"`
}

// onceElastic sets an elastic pool's Elastic and its table line.
func onceElastic(p *OncePool, v *engine.PoolView, now time.Time) {
	s := v.Spec
	if !s.Elastic() || !v.Defined || v.SpecError != nil {
		return
	}
	el := &OnceElastic{MinSize: s.MinSize, MaxSize: s.MaxSize, Spare: s.SpareTarget(), Power: s.PowerPolicy(),
		Settle: s.SettleTime().String(), AtCeiling: ExhaustedAlarm(v)}
	if rec := v.Recorded.Elastic; rec != nil {
		el.Reason, el.ChangedAt = clean(rec.Reason), rec.ChangedAt
	}
	p.Elastic = el
	p.elasticLine = ElasticText(v, now) + ", settle " + el.Settle
	if w := ExhaustedWords(v); w != "" {
		p.elasticLine += " · " + w
	}
}

// onceTrend sets a pool's Trend (when it has a recorded history) and its
// table line. The rates and the forecast also take the current counts as a
// sample at now, as the dashboard takes what it sees.
func onceTrend(p *OncePool, v *engine.PoolView, now time.Time, ascii bool) {
	h := v.Recorded.History
	if h == nil || len(h.Samples) == 0 || !v.Defined {
		return
	}
	filled := h.Filled(now)
	t := &OnceTrend{Samples: make([]OnceSample, 0, len(filled))}
	for _, s := range filled {
		t.Samples = append(t.Samples, OnceSample{At: s.At, Free: s.Free, Claimed: s.Claimed, Size: s.Size})
	}
	all := MergeTrend(filled, []engine.Sample{{At: now.Truncate(engine.HistoryInterval), Free: v.Status.Free, Claimed: v.Status.Claimed, Size: v.Size}})
	t.ClaimsPerHour, t.ReleasesPerHour = claimsPerHour(all, now)
	ceiling := 0
	if v.Spec.Elastic() {
		ceiling = v.Spec.MaxSize
	}
	f := engine.ForecastFrom(all, now, v.Status.Free, v.Status.Claimed, ceiling)
	t.Forecast = OnceForecast{RatePerHour: math.Round(f.Rate*100) / 100, OK: f.OK, ToEmptySeconds: seconds(f.ToEmpty), ToCeilingSeconds: seconds(f.ToCeiling)}
	p.Trend = t
	const cells, step = 24, 15 * time.Minute
	words := TrendText(all, now.Add(-time.Hour), ascii)
	p.trendLine = fmt.Sprintf("free, last %s: %s  %s · %s · %s", SpanText(cells*step), Sparkline(all, FreeCount, now, step, cells, ascii),
		OrWord(words, "-"), RatesText(t.ClaimsPerHour, t.ReleasesPerHour), ForecastText(f, ceiling))
}

// claimsPerHour is engine.ClaimsPerHour rounded to hundredths (the JSON
// document's precision).
func claimsPerHour(samples []engine.Sample, now time.Time) (claims, releases float64) {
	c, r := engine.ClaimsPerHour(samples, now)
	return math.Round(c*100) / 100, math.Round(r*100) / 100
}

func seconds(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := math.Round(d.Seconds())
	return &s
}
