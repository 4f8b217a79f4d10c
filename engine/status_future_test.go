package engine

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A key of the recorded status that this release does not know (written by
// a newer one) survives every write of this release: a reconcile that
// changes the counts, an elastic pool's compare-and-swap write, a broken
// definition's error. A downgrade after an upgrade loses nothing, and the
// key never makes a reader fail.
func TestStatusKeepsTheKeysOfANewerRelease(t *testing.T) {
	// What a newer release might write: a flow mapping, a block list, a
	// quoted scalar, and a key whose name this release's encoder quotes.
	future := "capacity: {\"gpus\": 4, \"zones\": [\"a\", \"b\"]}\n" +
		"notes:\n- one\n- \"two: with a colon\"\n" +
		"phase: 'Settling'\n"
	for _, tc := range []struct {
		name    string
		elastic bool
		// change makes the reconcile write the status (nil: it changes
		// nothing but the status it finds).
		change func(f *fakeCluster)
	}{
		{name: "fixed pool, a member lost", change: func(f *fakeCluster) { delete(f.pods, "desk-2") }},
		{name: "elastic pool (compare-and-swap write)", elastic: true},
		{name: "a broken definition's error", change: func(f *fakeCluster) {
			f.cms[ConfigMapName("desk")].Data[KeySpec] = "image: x:1\nsize: 2\nnewerField: 1\n"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e, f := newEngine()
			spec := baseSpec(2)
			if tc.elastic {
				spec.MinSize, spec.MaxSize, spec.Spare = 1, 4, new(1)
			}
			seedPool(f, "desk", spec, 2)
			if _, err := e.Reconcile(ctx, "desk"); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			f.mu.Lock()
			cm := f.cms[ConfigMapName("desk")]
			cm.Data[KeyStatus] += future
			if tc.change != nil {
				tc.change(f)
			}
			f.mu.Unlock()
			before, err := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
			if err != nil {
				t.Fatalf("a status with a newer release's keys does not parse: %v", err)
			}
			if len(before.Future) != 3 {
				t.Fatalf("future keys %v, want capacity, notes and phase", before.Future)
			}
			_, _ = e.Reconcile(ctx, "desk")
			// The status was written; the elastic pool's may need a second
			// reconcile to record its decision.
			_, _ = e.Reconcile(ctx, "desk")
			after := f.cm(ConfigMapName("desk")).Data[KeyStatus]
			st, err := ParseStatus(after)
			if err != nil {
				t.Fatalf("the written status does not parse: %v\n%s", err, after)
			}
			for k, want := range map[string]string{
				"capacity": `{"gpus":4,"zones":["a","b"]}`,
				"notes":    `["one","two: with a colon"]`,
				"phase":    `"Settling"`,
			} {
				if got := string(st.Future[k]); got != want {
					t.Errorf("after the writes, %s = %s, want %s\n%s", k, got, want, after)
				}
			}
			if !strings.Contains(after, "desired: 2") && !tc.elastic {
				t.Errorf("the status lost its own keys:\n%s", after)
			}
		})
	}
}

// Every key this release writes is one it knows: a status of this release
// has no future keys, and finding none costs no second decoding.
func TestStatusOfThisReleaseHasNoFutureKeys(t *testing.T) {
	now := testNow
	st := Status{
		Desired: 3, Observed: 3, Ready: 2, Claimed: 1, Free: 1, Serving: 1, Unschedulable: 1, Drifted: 1, Failed: 1, Exhausted: true,
		Source:      "abc",
		Elastic:     &ElasticStatus{Size: 3, From: 2, Reason: "grew", ChangedAt: &now},
		Rollout:     &RolloutStatus{Source: "abc", Image: "x:2", Started: now},
		History:     &History{Samples: []Sample{{At: now.Truncate(HistoryInterval), Free: 1, Claimed: 1, Size: 3}}},
		Members:     []MemberRow{{Name: "desk-1", State: StateReady, Holder: "alice"}, {Name: "desk-2", State: StateFailed, Message: "boom", Backoff: &Backoff{RetryAt: now.Add(time.Minute), Failures: 1}}},
		Errors:      []string{"create desk-3: no room"},
		Unprotected: "no budget",
		RowsCut:     1, MessagesCut: 1, ErrorsCut: 1,
		UpdatedAt: &now,
	}
	enc := st.Encode()
	future, err := futureKeys(enc)
	if err != nil || future != nil {
		t.Fatalf("a status of this release has future keys %v (%v):\n%s", future, err, enc)
	}
}
