package engine

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

var trendT0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

// at is trendT0 plus m minutes.
func at(m float64) time.Time { return trendT0.Add(time.Duration(m * float64(time.Minute))) }

func smp(m float64, free, claimed, size int) Sample {
	return Sample{At: at(m), Free: free, Claimed: claimed, Size: size}
}

func historyOf(samples ...Sample) History {
	var h History
	for _, s := range samples {
		h = h.Add(s)
	}
	return h
}

func TestHistoryAdd(t *testing.T) {
	plus1 := time.FixedZone("plus1", 3600)
	for _, tc := range []struct {
		name string
		add  []Sample
		want []Sample
	}{
		{name: "empty"},
		{name: "first, its time taken to its slot",
			add:  []Sample{smp(7.5, 3, 2, 5)},
			want: []Sample{smp(5, 3, 2, 5)}},
		{name: "same slot, fewer free: the newer replaces it whole",
			add:  []Sample{smp(0, 3, 2, 5), smp(4, 1, 3, 4)},
			want: []Sample{smp(0, 1, 3, 4)}},
		{name: "same slot, more free: the older stays",
			add:  []Sample{smp(0, 3, 2, 5), smp(4, 4, 1, 5)},
			want: []Sample{smp(0, 3, 2, 5)}},
		{name: "same slot, as many free: the newer",
			add:  []Sample{smp(0, 3, 2, 5), smp(1, 3, 1, 4)},
			want: []Sample{smp(0, 3, 1, 4)}},
		{name: "later slots append; skipped slots stay gaps",
			add:  []Sample{smp(0, 3, 2, 5), smp(5, 2, 3, 5), smp(21, 5, 0, 5)},
			want: []Sample{smp(0, 3, 2, 5), smp(5, 2, 3, 5), smp(20, 5, 0, 5)}},
		{name: "clock went back: ignored",
			add:  []Sample{smp(10, 3, 2, 5), smp(9, 0, 5, 5), smp(-60, 0, 5, 5)},
			want: []Sample{smp(10, 3, 2, 5)}},
		{name: "a sample a window after the first drops it",
			add:  []Sample{smp(0, 1, 1, 2), smp(5, 2, 2, 4), smp(24*60, 3, 3, 6)},
			want: []Sample{smp(5, 2, 2, 4), smp(24*60, 3, 3, 6)}},
		{name: "a window less one slot keeps it",
			add:  []Sample{smp(0, 1, 1, 2), smp(24*60-1, 3, 3, 6)},
			want: []Sample{smp(0, 1, 1, 2), smp(24*60-5, 3, 3, 6)}},
		{name: "a sample long after drops everything before",
			add:  []Sample{smp(0, 1, 1, 2), smp(5, 2, 2, 4), smp(3*24*60, 3, 3, 6)},
			want: []Sample{smp(3*24*60, 3, 3, 6)}},
		{name: "counts clamped to 0..MaxPoolSize",
			add:  []Sample{smp(0, -1, MaxPoolSize+1, 1<<40)},
			want: []Sample{smp(0, 0, MaxPoolSize, MaxPoolSize)}},
		{name: "another zone: UTC",
			add:  []Sample{{At: at(12).In(plus1), Free: 1}},
			want: []Sample{smp(10, 1, 0, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := historyOf(tc.add...)
			if !reflect.DeepEqual(got.Samples, tc.want) {
				t.Errorf("got  %v\nwant %v", got.Samples, tc.want)
			}
			for _, s := range got.Samples {
				if s.At.Location() != time.UTC {
					t.Errorf("%v not in UTC", s.At)
				}
			}
		})
	}
}

func TestHistoryAddFull(t *testing.T) {
	var h History
	for m := 0; m < 3*24*60; m++ {
		h = h.Add(smp(float64(m), m%7, m%5, 12))
	}
	if n := len(h.Samples); n != HistoryMaxSamples {
		t.Fatalf("%d samples, want %d", n, HistoryMaxSamples)
	}
	if first, last := h.Samples[0].At, h.Samples[len(h.Samples)-1].At; last.Sub(first) != HistoryWindow-HistoryInterval {
		t.Errorf("span %v", last.Sub(first))
	}
}

// Add never changes what another copy of the history sees, whether it
// appends or replaces the last sample.
func TestHistoryAddDoesNotMutate(t *testing.T) {
	base := historyOf(smp(0, 3, 2, 5), smp(5, 3, 2, 5))
	// Give base spare capacity, as a history built by append would have.
	base.Samples = append(make([]Sample, 0, 16), base.Samples...)
	before := append([]Sample(nil), base.Samples...)
	for _, tc := range []struct {
		name string
		a, b Sample
	}{
		{"append twice", smp(10, 1, 4, 5), smp(15, 0, 5, 5)},
		{"replace twice", smp(6, 1, 4, 5), smp(7, 0, 5, 5)},
		{"drop", smp(24*60+1, 1, 4, 5), smp(24*60+6, 0, 5, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := base.Add(tc.a)
			firstWas := append([]Sample(nil), first.Samples...)
			base.Add(tc.b)
			if !reflect.DeepEqual(base.Samples, before) {
				t.Errorf("base changed: %v", base.Samples)
			}
			if !reflect.DeepEqual(first.Samples, firstWas) {
				t.Errorf("an earlier result changed: %v, was %v", first.Samples, firstWas)
			}
		})
	}
}

func TestHistorySince(t *testing.T) {
	h := historyOf(smp(0, 1, 1, 2), smp(5, 2, 2, 4), smp(15, 3, 3, 6))
	for _, tc := range []struct {
		name string
		t    time.Time
		want int
	}{
		{"before all", at(-100), 3},
		{"at the first", at(0), 3},
		{"between", at(1), 2},
		{"at the last", at(15), 1},
		{"after all", at(16), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.Since(tc.t)
			if len(got) != tc.want {
				t.Fatalf("%d samples, want %d", len(got), tc.want)
			}
			if len(got) > 0 && got[len(got)-1] != h.Samples[len(h.Samples)-1] {
				t.Errorf("the last is %v", got[len(got)-1])
			}
			_ = append(got, smp(100, 0, 0, 0))
			if len(h.Samples) != 3 || h.Samples[2] != smp(15, 3, 3, 6) {
				t.Errorf("appending to Since's result changed the history: %v", h.Samples)
			}
		})
	}
}

func TestHistoryEncode(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    History
		want string
	}{
		{"empty", History{}, `{}`},
		{"one", historyOf(smp(3, 3, 2, 5)),
			`{"start":"2026-12-05T10:00:00Z","step":300,"free":"3","claimed":"2","size":"5"}`},
		{"a gap", historyOf(smp(0, 3, 2, 5), smp(5, 3, 2, 5), smp(10, 4, 1, 5), smp(20, 5, 0, 5)),
			`{"start":"2026-12-05T10:00:00Z","step":300,"free":"3 3 4 - 5","claimed":"2 2 1 - 0","size":"5 5 5 - 5"}`},
		{"made by hand: canonical first", History{Samples: []Sample{
			{At: at(11).In(time.FixedZone("x", -7200)), Free: 9, Claimed: -1, Size: 9},
			smp(3, 1, 1, 2), // older than the one before: ignored
			smp(12, 8, 1, 9),
			smp(16, 7, 2, 9),
		}}, `{"start":"2026-12-05T10:10:00Z","step":300,"free":"8 7","claimed":"1 2","size":"9 9"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.h.Encode()
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			back, err := ParseHistory(got)
			if err != nil {
				t.Fatal(err)
			}
			if again := back.Encode(); again != got {
				t.Errorf("parsed back and encoded: %s", again)
			}
			if canonical(tc.h.Samples) && !reflect.DeepEqual(back.Samples, tc.h.Samples) {
				t.Errorf("parsed back: %v, want %v", back.Samples, tc.h.Samples)
			}
		})
	}
}

func TestParseHistory(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Sample
		wantErr  string
	}{
		{name: "empty string", in: ""},
		{name: "empty object", in: "{}"},
		{name: "null", in: "null"},
		{name: "another zone", in: `{"start":"2026-12-05T11:05:00+01:00","step":300,"free":"1","claimed":"2","size":"3"}`,
			want: []Sample{smp(5, 1, 2, 3)}},
		{name: "two spaces", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"1  2","claimed":"2  3","size":"3  5"}`,
			wantErr: `bad count ""`},
		{name: "unknown keys ignored", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"1 - 2","claimed":"2 - 3","size":"3 - 5","later":"9 9 9"}`,
			want: []Sample{smp(0, 1, 2, 3), smp(10, 2, 3, 5)}},
		{name: "not JSON", in: `start: x`, wantErr: "not a JSON object"},
		{name: "a list", in: `[1]`, wantErr: "not a JSON object"},
		{name: "a key missing", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"1","claimed":"2"}`, wantErr: "want start, step"},
		{name: "bad start", in: `{"start":"today","step":300,"free":"1","claimed":"2","size":"3"}`, wantErr: "bad start"},
		{name: "start not a slot's", in: `{"start":"2026-12-05T10:01:00Z","step":300,"free":"1","claimed":"2","size":"3"}`, wantErr: "not at a multiple"},
		{name: "other step", in: `{"start":"2026-12-05T10:00:00Z","step":60,"free":"1","claimed":"2","size":"3"}`, wantErr: "step 60"},
		{name: "lengths differ", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"1 2","claimed":"2","size":"3"}`, wantErr: "claimed has 1 slots, free has 2"},
		{name: "negative", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"-1","claimed":"2","size":"3"}`, wantErr: `bad count "-1"`},
		{name: "too large", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"100000","claimed":"2","size":"3"}`, wantErr: `bad count "100000"`},
		{name: "leading zero", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"01","claimed":"2","size":"3"}`, wantErr: `bad count "01"`},
		{name: "plus sign", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"+1","claimed":"2","size":"3"}`, wantErr: `bad count "+1"`},
		{name: "empty series", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"","claimed":"","size":""}`, wantErr: `bad count ""`},
		{name: "a gap in one series only", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"1 - 1","claimed":"2 2 2","size":"3 - 3"}`, wantErr: "some series only"},
		{name: "a gap first", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"- 1","claimed":"- 2","size":"- 3"}`, wantErr: "gap first or last"},
		{name: "a gap last", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"1 -","claimed":"2 -","size":"3 -"}`, wantErr: "gap first or last"},
		{name: "too many slots", in: `{"start":"2026-12-05T10:00:00Z","step":300,"free":"` + strings.Repeat("1 ", HistoryMaxSamples) + `1","claimed":"2","size":"3"}`, wantErr: "289 slots, at most 288"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseHistory(tc.in)
			if tc.wantErr != "" {
				var inv *InvalidError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &inv) {
					t.Fatalf("err %v, want an InvalidError with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h.Samples, tc.want) {
				t.Errorf("got  %v\nwant %v", h.Samples, tc.want)
			}
		})
	}
}

// The encoded history stays within HistoryMaxBytes at its largest: every
// slot of the window with every count at MaxPoolSize, and a hand-made history
// of far more samples.
func TestHistoryMaxBytes(t *testing.T) {
	var full History
	for i := 0; i < HistoryMaxSamples; i++ {
		full.Samples = append(full.Samples, Sample{At: trendT0.Add(time.Duration(i) * HistoryInterval), Free: MaxPoolSize, Claimed: MaxPoolSize, Size: MaxPoolSize})
	}
	if !canonical(full.Samples) {
		t.Fatal("the full history is not canonical")
	}
	var many History
	for i := 0; i < 10*HistoryMaxSamples; i++ {
		many.Samples = append(many.Samples, Sample{At: trendT0.Add(time.Duration(i) * time.Minute), Free: 1 << 40, Claimed: MaxPoolSize, Size: MaxPoolSize})
	}
	for _, tc := range []struct {
		name string
		h    History
	}{{"full", full}, {"many", many}} {
		t.Run(tc.name, func(t *testing.T) {
			enc := tc.h.Encode()
			js, err := tc.h.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			y, err := yaml.Marshal(struct {
				History *History `json:"history"`
			}{&tc.h})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Encode %d bytes, JSON %d, YAML %d", len(enc), len(js), len(y))
			for what, n := range map[string]int{"Encode": len(enc), "MarshalJSON": len(js), "YAML": len(y) - len("history: \n")} {
				if n > HistoryMaxBytes {
					t.Errorf("%s: %d bytes, more than HistoryMaxBytes %d", what, n, HistoryMaxBytes)
				}
			}
			if strings.Contains(enc, "\n") {
				t.Error("Encode wrote more than one line")
			}
			back, err := ParseHistory(enc)
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Samples) != HistoryMaxSamples {
				t.Errorf("%d samples back", len(back.Samples))
			}
		})
	}
}

// A Status-like struct with a History field round-trips through
// sigs.k8s.io/yaml, and reads the history written as a flow mapping too.
func TestHistoryYAML(t *testing.T) {
	type status struct {
		Free    int      `json:"free"`
		History *History `json:"history,omitempty"`
	}
	h := historyOf(smp(0, 3, 2, 5), smp(5, 3, 2, 5), smp(10, 4, 1, 5), smp(20, 5, 0, 5))
	for _, tc := range []struct {
		name string
		in   status
	}{
		{"with a history", status{Free: 5, History: &h}},
		{"without", status{Free: 5}},
		{"empty", status{Free: 5, History: &History{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := yaml.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(b), "free: 5\n") || strings.Contains(string(b), "history") != (tc.in.History != nil) {
				t.Errorf("wrote\n%s", b)
			}
			var back status
			if err := yaml.Unmarshal(b, &back); err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			if !reflect.DeepEqual(back, tc.in) && !(tc.in.History != nil && len(tc.in.History.Samples) == 0 && back.History != nil && len(back.History.Samples) == 0) {
				t.Errorf("got %+v\nwant %+v\n%s", back, tc.in, b)
			}
		})
	}
	t.Run("flow mapping", func(t *testing.T) {
		var back status
		if err := yaml.Unmarshal([]byte("free: 5\nhistory: "+h.Encode()+"\n"), &back); err != nil {
			t.Fatal(err)
		}
		if back.History == nil || !reflect.DeepEqual(back.History.Samples, h.Samples) {
			t.Errorf("got %+v", back.History)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		var back status
		err := yaml.Unmarshal([]byte(`history: '{"start":"x","step":300,"free":"1","claimed":"1","size":"1"}'`+"\n"), &back)
		if err == nil || !strings.Contains(err.Error(), "bad start") {
			t.Errorf("err %v", err)
		}
	})
}

// FuzzParseHistory: any input either fails cleanly or yields a canonical
// history whose encoding, within HistoryMaxBytes, parses back to it.
func FuzzParseHistory(f *testing.F) {
	for _, s := range []string{
		"", "{}", "null", "[]", `"x"`,
		`{"start":"2026-12-05T10:00:00Z","step":300,"free":"3 3 4 - 5","claimed":"2 2 1 - 0","size":"5 5 5 - 5"}`,
		`{"start":"2026-12-05T11:05:00+01:00","step":300,"free":"1","claimed":"2","size":"3"}`,
		`{"start":"2026-12-05T10:00:00Z","step":300,"free":"1 - 1","claimed":"2 2 2","size":"3 - 3"}`,
		`{"start":"2026-12-05T10:00:00Z","step":300,"free":"99999 0","claimed":"0 99999","size":"99999 99999","x":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHistory(s)
		if err != nil {
			return
		}
		if !canonical(h.Samples) {
			t.Fatalf("not canonical: %v", h.Samples)
		}
		enc := h.Encode()
		if len(enc) > HistoryMaxBytes {
			t.Fatalf("%d bytes", len(enc))
		}
		back, err := ParseHistory(enc)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if !reflect.DeepEqual(back.Samples, h.Samples) || back.Encode() != enc {
			t.Fatalf("round trip: %v, want %v", back.Samples, h.Samples)
		}
	})
}
