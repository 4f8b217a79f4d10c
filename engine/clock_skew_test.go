package engine

import (
	"context"
	"testing"
	"time"
)

// A reconciler never trusts another writer's clock for a duration after
// which something is deleted (DECISIONS, "Clocks"): the settle time before
// an elastic pool shrinks counts only from a stamp of its own clock.
func TestSettleTimeCountsOnTheReconcilersOwnClock(t *testing.T) {
	settle := DefaultSettle
	for _, tc := range []struct {
		name   string
		writer string        // the clock that stamped aboveSince first
		skew   time.Duration // of the writer's clock
	}{
		{"a reconciler an hour slow", "slow-host", -time.Hour},
		{"a reconciler an hour fast", "fast-host", time.Hour},
		{"an earlier release (a stamp of no named clock) a day slow", "", -24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFake(testNS)
			seedElastic(f, elasticSpec(3, 0, 10, 1), 3, 3) // 3 free, spare 1
			var now time.Time
			writer := &Engine{Cluster: f, Namespace: testNS, Now: func() time.Time { return testNow.Add(tc.skew) }, Concurrency: 1, WaitTimeout: 5 * time.Second, ClockID: tc.writer}
			right := &Engine{Cluster: f, Namespace: testNS, Now: func() time.Time { return now }, Concurrency: 1, WaitTimeout: 5 * time.Second, ClockID: "right-host"}
			if _, err := writer.Reconcile(ctx, "el"); err != nil {
				t.Fatal(err)
			}
			if rec := RecordedElastic(f.cm(ConfigMapName("el")).Data[KeyStatus]); rec == nil || rec.AboveSince == nil || rec.AboveSinceBy != tc.writer {
				t.Fatalf("the writer did not stamp aboveSince: %+v", rec)
			}
			for _, step := range []struct {
				at   time.Duration // after the correct reconciler first sees the stamp
				size int
			}{{0, 3}, {settle - time.Second, 3}, {settle, 1}} {
				now = testNow.Add(time.Second + step.at)
				if _, err := right.Reconcile(ctx, "el"); err != nil {
					t.Fatal(err)
				}
				if got := recordedSize(t, f); got != step.size {
					t.Fatalf("%s after the correct reconciler first saw the stamp: size %d, want %d", step.at, got, step.size)
				}
			}
		})
	}
}

// History samples stamped by a clock that runs fast count from the moment
// a correct writer first sees them: they neither freeze the history (a
// sample before the last one is ignored) nor stand in its future; and a
// writer whose own clock is far off the API server's stamps its samples on
// the server's clock, so a machine a day fast cannot cut the history.
func TestHistoryUnderSkewedClocks(t *testing.T) {
	ctx := context.Background()
	history := func(t *testing.T, f *fakeCluster) []Sample {
		t.Helper()
		st, err := ParseStatus(f.cm(ConfigMapName("el")).Data[KeyStatus])
		if err != nil || st.History == nil {
			t.Fatalf("status: %v (history %v)", err, st.History)
		}
		return st.History.Samples
	}
	claim := func(f *fakeCluster, n int, at time.Time) {
		f.add(claimAt("el", MemberName("el", n), "u", at))
	}

	t.Run("an hour fast, then correct writers", func(t *testing.T) {
		f := newFake(testNS)
		seedElastic(f, elasticSpec(6, 0, 10, 0), 6, 6)
		now := testNow
		fast := &Engine{Cluster: f, Namespace: testNS, Now: func() time.Time { return now.Add(time.Hour) }, Concurrency: 1, WaitTimeout: 5 * time.Second}
		right := &Engine{Cluster: f, Namespace: testNS, Now: func() time.Time { return now }, Concurrency: 1, WaitTimeout: 5 * time.Second}
		if _, err := fast.Reconcile(ctx, "el"); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 4; i++ { // a claim every 5 minutes
			now = testNow.Add(time.Duration(i) * HistoryInterval)
			claim(f, i, now)
			if _, err := right.Reconcile(ctx, "el"); err != nil {
				t.Fatal(err)
			}
			h := history(t, f)
			last := h[len(h)-1]
			if !last.At.Equal(now.Truncate(HistoryInterval)) || last.Claimed != i {
				t.Fatalf("after %d claims at %s the last sample is %+v: the history froze", i, now.Format("15:04"), last)
			}
		}
	})

	t.Run("a day fast, with the API server's clock known", func(t *testing.T) {
		f := newFake(testNS)
		seedElastic(f, elasticSpec(6, 0, 10, 0), 6, 6)
		now := testNow
		right := &Engine{Cluster: f, Namespace: testNS, Now: func() time.Time { return now }, Concurrency: 1, WaitTimeout: 5 * time.Second}
		for i := 1; i <= 3; i++ {
			now = testNow.Add(time.Duration(i) * HistoryInterval)
			claim(f, i, now)
			if _, err := right.Reconcile(ctx, "el"); err != nil {
				t.Fatal(err)
			}
		}
		before := len(history(t, f))
		now = now.Add(HistoryInterval)
		fast := &Engine{Cluster: f, Namespace: testNS, Now: func() time.Time { return now.Add(24 * time.Hour) }, Concurrency: 1, WaitTimeout: 5 * time.Second,
			ServerOffset: func() (time.Duration, bool) { return -24 * time.Hour, true }}
		claim(f, 4, now)
		if _, err := fast.Reconcile(ctx, "el"); err != nil {
			t.Fatal(err)
		}
		h := history(t, f)
		if len(h) != before+1 || !h[len(h)-1].At.Equal(now.Truncate(HistoryInterval)) {
			t.Fatalf("a writer a day fast left %d samples (had %d), the last at %s; want them kept and its own at %s", len(h), before, h[len(h)-1].At, now.Truncate(HistoryInterval))
		}
	})
}
