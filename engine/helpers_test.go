package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

const testNS = "vdi"

// testNow is the fixed clock of every engine test.
var testNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// baseSpec is a valid, defaulted spec of the given size.
func baseSpec(size int) Spec {
	s := Spec{Image: "ghcr.io/example/desktop:1", Size: size}
	s.Default()
	return s
}

// newEngine returns an engine on a fresh fake, one member at a time so that
// the order of writes is deterministic.
func newEngine() (*Engine, *fakeCluster) {
	f := newFake(testNS)
	return &Engine{Cluster: f, Namespace: testNS, Now: fixedClock(testNow), Concurrency: 1, WaitTimeout: 5 * time.Second}, f
}

// readyMember returns the Pod (Running and Ready) and PVC of member n built from spec.
func readyMember(pool string, n int, spec Spec) (*corev1.Pod, *corev1.PersistentVolumeClaim) {
	return readyPod(BuildPod(testNS, pool, n, spec)), BuildPVC(testNS, pool, n, spec)
}

func readyPod(p *corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	return p
}

// seedPool puts a pool definition and its members 1..members (Ready) into f.
func seedPool(f *fakeCluster, pool string, spec Spec, members int) {
	f.add(BuildConfigMap(testNS, pool, spec))
	for n := 1; n <= members; n++ {
		p, c := readyMember(pool, n, spec)
		f.add(p, c)
	}
}

// claimAt is a claim Lease of identity on member at time t.
func claimAt(pool, member, identity string, t time.Time) *coordinationv1.Lease {
	return ClaimLease(testNS, pool, member, identity, t)
}

// memberWrites filters writes that touch a member's Pod, PVC, Service or Lease.
func memberWrites(acts []act, member string) []act {
	var out []act
	for _, a := range acts {
		if a.Name == member || a.Name == PVCName(member) || a.Name == ConsoleServiceName(member) || a.Name == LeaseName(member) {
			out = append(out, a)
		}
	}
	return out
}

// withoutMarks leaves out of acts the patches of member's Pod (the claim
// marks a reconcile gives a claimed member, which change nothing of the
// desktop).
func withoutMarks(acts []act, member string) []act {
	var out []act
	for _, a := range acts {
		if a != (act{"patch", kPod, member}) {
			out = append(out, a)
		}
	}
	return out
}

// acts parses "verb Kind name" lines into act values.
func wantActs(lines ...string) []act {
	out := make([]act, len(lines))
	for i, l := range lines {
		f := strings.Fields(l)
		out[i] = act{f[0], f[1], f[2]}
	}
	return out
}

func assertActs(t *testing.T, got, want []act) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d actions, want %d:\n got: %v\nwant: %v", len(got), len(want), got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("action %d is %q, want %q\n got: %v\nwant: %v", i, got[i], want[i], got, want)
		}
	}
}

func hasAct(acts []act, verb, kind, name string) bool {
	for _, a := range acts {
		if a == (act{verb, kind, name}) {
			return true
		}
	}
	return false
}

func errIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one matching %v", err, target)
	}
}
