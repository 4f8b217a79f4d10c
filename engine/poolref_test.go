package engine

import (
	"testing"
	"time"
)

func TestPoolRefString(t *testing.T) {
	for _, tc := range []struct {
		ref  PoolRef
		want string
	}{
		{PoolRef{Namespace: "vdi", Name: "desk"}, "vdi/desk"},
		{PoolRef{Context: "prod-eu", Namespace: "vdi", Name: "desk"}, "prod-eu/vdi/desk"},
		{PoolRef{Context: "arn:aws:eks:eu/x", Namespace: "vdi", Name: "desk"}, "arn:aws:eks:eu/x/vdi/desk"},
	} {
		if got := tc.ref.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.ref, got, tc.want)
		}
	}
}

// The cluster's context of a snapshot is the view's, whole or by difference.
func TestRefCarriesContext(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	snap := Snapshot{Context: "prod-eu", Namespace: "vdi", Pool: "desk"}
	want := PoolRef{Context: "prod-eu", Namespace: "vdi", Name: "desk"}
	v := Observe(snap, now)
	s := NewPoolState(snap, now)
	pc := PoolChanges{Context: "prod-eu", Namespace: "vdi", Pool: "desk"}
	for name, got := range map[string]PoolRef{
		"snapshot": snap.Ref(), "Observe": v.Ref(), "NewPoolState": s.View().Ref(), "PoolChanges": pc.Ref(),
	} {
		if got != want {
			t.Errorf("%s: %#v, want %#v", name, got, want)
		}
	}
	if _, ok := s.Update(PoolUpdate{}, now.Add(time.Second)); !ok || s.View().Ref() != want {
		t.Errorf("after Update: %#v", s.View().Ref())
	}
}
