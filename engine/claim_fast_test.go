package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// countingCluster counts the reads of a whole pool.
type countingCluster struct {
	*fakeCluster
	whole *atomic.Int64
}

func (c countingCluster) Snapshot(ctx context.Context, pool string) (Snapshot, error) {
	c.whole.Add(1)
	return c.fakeCluster.Snapshot(ctx, pool)
}

// A claim works from the pool's recorded status and reads by name and label;
// it reads the whole pool only when the status cannot tell, and what it
// hands out is decided on a fresh read of the member either way.
func TestClaimFromTheRecordedStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int
		change  func(f *fakeCluster) // after the status was recorded
		want    string               // the member; "" for no free member
		wantErr error
		whole   int64 // reads of the whole pool
	}{
		{name: "a free member, read by name only", size: 1, want: "desk-1"},
		{name: "the status is stale: the member is Terminating now", size: 1, change: func(f *fakeCluster) {
			f.mu.Lock()
			f.pods["desk-1"].DeletionTimestamp = &metav1.Time{Time: testNow}
			f.mu.Unlock()
		}, wantErr: ErrNoFreeMembers, whole: 1},
		{name: "the status is stale: a broker claimed the member by name", size: 1, change: func(f *fakeCluster) {
			l := claimAt("desk", "desk-1", "bob", testNow)
			l.Labels = nil
			f.add(l)
		}, wantErr: ErrNoFreeMembers, whole: 1},
		{name: "the identity claimed since the status was written", size: 2, change: func(f *fakeCluster) {
			f.add(claimAt("desk", "desk-2", "alice", testNow))
		}, want: "desk-2", whole: 1},
		{name: "the status records the identity's claim (a Lease without the holder's label)", size: 2, change: func(f *fakeCluster) {
			l := claimAt("desk", "desk-2", "alice", testNow)
			delete(l.Labels, LabelHolder)
			f.add(l)
			e := &Engine{Cluster: f, Namespace: testNS, Now: fixedClock(testNow), Concurrency: 1, WaitTimeout: 5e9}
			if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
				panic(err)
			}
		}, want: "desk-2", whole: 1},
		{name: "the definition changed since: the status is of another source", size: 1, change: func(f *fakeCluster) {
			f.mu.Lock()
			f.cms[ConfigMapName("desk")].Data[KeySpec] = driftedSpec(1).Encode()
			f.mu.Unlock()
			// desk-1 is of the earlier source now: the whole read hands it
			// out, a rollout's old member serving while none is free
		}, want: "desk-1", whole: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(testNS)
			seedPool(f, "desk", baseSpec(tc.size), tc.size)
			rec := &Engine{Cluster: f, Namespace: testNS, Now: fixedClock(testNow), Concurrency: 1, WaitTimeout: 5e9}
			if _, err := rec.Reconcile(context.Background(), "desk"); err != nil {
				t.Fatal(err)
			}
			if tc.change != nil {
				tc.change(f)
			}
			var whole atomic.Int64
			e := &Engine{Cluster: countingCluster{f, &whole}, Namespace: testNS, Now: fixedClock(testNow), Concurrency: 1, WaitTimeout: 5e9}
			res, err := e.Claim(context.Background(), "desk", "alice")
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Claim = %+v, %v; want %v", res, err, tc.wantErr)
				}
			case err != nil || res.Member != tc.want:
				t.Fatalf("Claim = %+v, %v; want %s", res, err, tc.want)
			}
			if whole.Load() != tc.whole {
				t.Errorf("%d reads of the whole pool, want %d", whole.Load(), tc.whole)
			}
			// No Lease of alice's is left but the one she was answered.
			for _, name := range sortedKeys(f.leases) {
				l := f.lease(name)
				if *l.Spec.HolderIdentity == "alice" && name != LeaseName(tc.want) {
					t.Errorf("alice holds %s too", name)
				}
			}
		})
	}
}
