//go:build integration

package systest_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// TestChaosReplayBrokerAndClaimSource feeds the replay crafted histories
// (no plane needed): a broker's claim that ends without a release asked, and
// a claimed member started again from a changed definition, are violations;
// the same histories with the release asked, or the claim's own source, are
// not.
func TestChaosReplayBrokerAndClaimSource(t *testing.T) {
	const m = "chaos-1"
	lease := func(rv int64, holder string, gone bool) objEvent {
		return objEvent{rv: rv, kind: "Lease", member: m, uid: "lease-1", holder: holder, gone: gone}
	}
	pvc := func(rv int64, uid types.UID, src string) objEvent {
		return objEvent{rv: rv, kind: "PVC", member: m, uid: uid, source: src}
	}
	pod := func(rv int64, uid types.UID, src string, gone bool) objEvent {
		return objEvent{rv: rv, kind: "Pod", member: m, uid: uid, source: src, gone: gone}
	}
	broker, user := chaosBrokers[0], chaosIdentities[0]
	cases := []struct {
		name   string
		asked  int // releases asked of the broker's claim
		byTest []types.UID
		events []objEvent
		want   string // a part of the one violation; "" for none
	}{
		{
			name:   "broker claim taken by the reconciler with no release asked",
			events: []objEvent{pvc(1, "pvc-1", "a"), pod(2, "pod-1", "a", false), lease(3, broker, false), lease(4, engine.ReconcilerIdentity, false)},
			want:   "no release of it was asked",
		},
		{
			name:   "broker claim deleted with no release asked",
			events: []objEvent{pvc(1, "pvc-1", "a"), lease(2, broker, false), lease(3, broker, true)},
			want:   "no release of it was asked",
		},
		{
			name:   "broker claim released as asked",
			asked:  1,
			events: []objEvent{pvc(1, "pvc-1", "a"), lease(2, broker, false), lease(3, engine.ReconcilerIdentity, false), lease(4, engine.ReconcilerIdentity, true)},
		},
		{
			name:   "broker claim given back as asked",
			asked:  1,
			events: []objEvent{pvc(1, "pvc-1", "a"), lease(2, broker, false), lease(3, broker, true)},
		},
		{
			name:   "broker claim handed straight to a user",
			asked:  1,
			events: []objEvent{lease(1, broker, false), lease(2, user, false)},
			want:   "straight to",
		},
		{
			name:   "claimed member started again from the pool's new source",
			byTest: []types.UID{"pod-1"},
			events: []objEvent{pvc(1, "pvc-1", "a"), pod(2, "pod-1", "a", false), lease(3, user, false), pod(4, "pod-1", "a", true), pod(5, "pod-2", "b", false)},
			want:   "was started from source b, not from a",
		},
		{
			name:   "claimed member started again from its claim's source",
			byTest: []types.UID{"pod-1"},
			events: []objEvent{pvc(1, "pvc-1", "a"), pod(2, "pod-1", "a", false), lease(3, user, false), pod(4, "pod-1", "a", true), pod(5, "pod-2", "a", false)},
		},
		{
			name:   "claimed member rebuilt on new data takes the new source",
			byTest: []types.UID{"pod-1", "pvc-1"},
			events: []objEvent{pvc(1, "pvc-1", "a"), pod(2, "pod-1", "a", false), lease(3, user, false), pod(4, "pod-1", "a", true), pvc(5, "pvc-1", "a"),
				{rv: 6, kind: "PVC", member: m, uid: "pvc-1", gone: true}, pvc(7, "pvc-2", "b"), pod(8, "pod-2", "b", false)},
		},
		{
			name:   "an unclaimed member replaced from the new source",
			events: []objEvent{pvc(1, "pvc-1", "a"), pod(2, "pod-1", "a", false), lease(3, engine.ReconcilerIdentity, false), pod(4, "pod-1", "a", true), pod(5, "pod-2", "b", false), lease(6, engine.ReconcilerIdentity, true)},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newReplay()
			p.releaseAsked[m] = c.asked
			for _, uid := range c.byTest {
				p.byTest[uid] = true
			}
			var got []string
			for _, e := range c.events {
				p.apply(e, func(format string, a ...any) { got = append(got, fmt.Sprintf(format, a...)) })
			}
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("violations %q, want none", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("violations %q, want one that says %q", got, c.want)
			}
		})
	}
}
