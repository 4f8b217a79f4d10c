package engine

import "testing"

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
