package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// seedMember adds member n of pool desk in the given state built from spec.
func seedMember(f *fakeCluster, n int, spec Spec, state State) {
	p, c := readyMember("desk", n, spec)
	switch state {
	case StateReady:
	case StateStarting:
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	case StateStopped:
		p = nil
	case StateFailed:
		p.Status.Phase = corev1.PodFailed
	case StateUnschedulable:
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "no room"}}}
	case StateMissing:
		return
	default:
		panic("seedMember: " + state)
	}
	if p != nil {
		f.add(p)
	}
	f.add(c)
}

func TestClaimPicksAFreeMember(t *testing.T) {
	spec := baseSpec(4)
	tests := []struct {
		name   string
		states []State // of desk-1, desk-2, ...
		extra  func(f *fakeCluster)
		want   string
	}{
		{name: "Ready before Starting before Stopped", states: []State{StateStopped, StateStarting, StateReady, StateStopped}, want: "desk-3"},
		{name: "Starting before Stopped", states: []State{StateStopped, StateStarting, StateStopped, StateMissing}, want: "desk-2"},
		{name: "Stopped when nothing else", states: []State{StateFailed, StateStopped, StateUnschedulable, StateMissing}, want: "desk-2"},
		{name: "the identity's own point among equals", states: []State{StateMissing, StateReady, StateReady, StateReady}, want: MemberName("desk", 2+int(claimSpread("alice@example.com", 0)%3))},
		{name: "skips claimed, maintenance and drifted", states: []State{StateReady, StateReady, StateReady, StateStarting}, extra: func(f *fakeCluster) {
			f.add(claimAt("desk", "desk-1", "bob", testNow), ReconcilerLease(testNS, "desk", "desk-2", testNow))
			p, c := readyMember("desk", 3, driftedSpec(4))
			f.add(p, c)
		}, want: "desk-4"},
		{name: "skips members above size", states: []State{StateFailed, StateFailed, StateFailed, StateStopped}, extra: func(f *fakeCluster) {
			seedMember(f, 5, spec, StateReady)
		}, want: "desk-4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", spec, 0)
			for i, s := range tt.states {
				seedMember(f, i+1, spec, s)
			}
			if tt.extra != nil {
				tt.extra(f)
			}
			res, err := e.Claim(context.Background(), "desk", "alice@example.com")
			if err != nil || res.Member != tt.want {
				t.Fatalf("Claim = %+v, %v; want %s", res, err, tt.want)
			}
			want := []string{"create Lease " + LeaseName(tt.want), "patch PersistentVolumeClaim " + PVCName(tt.want)}
			if res.Started {
				want = append(want, "create Pod "+tt.want)
			} else {
				// its claim marks first
				want = []string{want[0], "patch Pod " + tt.want, want[1]}
			}
			assertActs(t, f.writes(), wantActs(want...))
			l := f.lease(LeaseName(tt.want))
			if *l.Spec.HolderIdentity != "alice@example.com" || *l.Spec.LeaseDurationSeconds != 3600 || !l.Spec.AcquireTime.Time.Equal(testNow) {
				t.Fatalf("claim Lease %+v", l.Spec)
			}
			if got := f.pvc(PVCName(tt.want)).Annotations[AnnotationAssignedTo]; got != "alice@example.com" {
				t.Fatalf("PVC annotation %q", got)
			}
		})
	}
}

func TestClaimStartsAStoppedMember(t *testing.T) {
	e, f := newEngine()
	spec := baseSpec(1)
	seedPool(f, "desk", spec, 0)
	seedMember(f, 1, spec, StateStopped)
	res, err := e.Claim(context.Background(), "desk", "alice")
	if err != nil || !res.Started || res.Existing || res.Member != "desk-1" {
		t.Fatalf("Claim = %+v, %v", res, err)
	}
	assertActs(t, f.writes(), wantActs("create Lease corral-vdi-ct-desk-1", "patch PersistentVolumeClaim desk-1-data", "create Pod desk-1"))
	if p := f.pod("desk-1"); p == nil || p.Labels[LabelSource] != spec.SourceHash() {
		t.Fatalf("pod %v", p)
	}
}

func TestClaimSameIdentity(t *testing.T) {
	spec := baseSpec(2)
	tests := []struct {
		name        string
		claimedAt   time.Duration // before testNow
		stopped     bool
		missing     bool
		wantRenewed bool
		wantStarted bool
		wantWrites  []act
	}{
		{name: "fresh claim: same member, no write", claimedAt: time.Minute},
		{name: "expired claim is renewed", claimedAt: 2 * time.Hour, wantRenewed: true, wantWrites: wantActs("update Lease corral-vdi-ct-desk-2")},
		{name: "stopped member is started", claimedAt: time.Minute, stopped: true, wantStarted: true, wantWrites: wantActs("create Pod desk-2")},
		{name: "expired and stopped", claimedAt: 3 * time.Hour, stopped: true, wantRenewed: true, wantStarted: true, wantWrites: wantActs("update Lease corral-vdi-ct-desk-2", "create Pod desk-2")},
		{name: "missing member is built", claimedAt: time.Minute, missing: true, wantStarted: true, wantWrites: wantActs("create PersistentVolumeClaim desk-2-data", "create Pod desk-2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", spec, 1)
			state := StateReady
			if tt.stopped {
				state = StateStopped
			}
			if tt.missing {
				state = StateMissing
			}
			seedMember(f, 2, spec, state)
			f.add(claimAt("desk", "desk-2", "alice", testNow.Add(-tt.claimedAt)))

			res, err := e.Claim(context.Background(), "desk", "alice")
			if err != nil || res.Member != "desk-2" || !res.Existing || res.Renewed != tt.wantRenewed || res.Started != tt.wantStarted {
				t.Fatalf("Claim = %+v, %v", res, err)
			}
			assertActs(t, f.writes(), tt.wantWrites)
			l := f.lease(LeaseName("desk-2"))
			if *l.Spec.HolderIdentity != "alice" {
				t.Fatalf("holder %q", *l.Spec.HolderIdentity)
			}
			wantRenew := testNow.Add(-tt.claimedAt)
			if tt.wantRenewed {
				wantRenew = testNow
			}
			if !l.Spec.RenewTime.Time.Equal(wantRenew) || !l.Spec.AcquireTime.Time.Equal(testNow.Add(-tt.claimedAt)) {
				t.Fatalf("renew %v acquire %v", l.Spec.RenewTime, l.Spec.AcquireTime)
			}
		})
	}
}

func TestClaimRenewConflict(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(1), 1)
	f.add(claimAt("desk", "desk-1", "alice", testNow.Add(-2*time.Hour)))
	f.fail("update", kLease, LeaseName("desk-1"), fmt.Errorf("stale: %w", ErrConflict), 0)
	_, err := e.Claim(context.Background(), "desk", "alice")
	if !errors.Is(err, ErrConflict) || !strings.HasPrefix(err.Error(), "renew claim on desk-1: ") {
		t.Fatalf("Claim = %v", err)
	}
}

func TestClaimNoFreeMembers(t *testing.T) {
	spec := baseSpec(3)
	tests := []struct {
		name string
		size int
		seed func(f *fakeCluster)
		want string
	}{
		{"expired claim of another identity is not given away", 1, func(f *fakeCluster) {
			seedMember(f, 1, spec, StateReady)
			f.add(claimAt("desk", "desk-1", "bob", testNow.Add(-5*time.Hour)))
		}, "pool has no free members (desired 1, claimed 1, unschedulable 0)"},
		{"all claimed or unschedulable", 3, func(f *fakeCluster) {
			seedMember(f, 1, spec, StateReady)
			seedMember(f, 2, spec, StateUnschedulable)
			seedMember(f, 3, spec, StateStarting)
			f.add(claimAt("desk", "desk-1", "bob", testNow), claimAt("desk", "desk-3", "carol", testNow))
		}, "pool has no free members (desired 3, claimed 2, unschedulable 1)"},
		{"only Missing, Failed and drifted members that do not serve", 3, func(f *fakeCluster) {
			seedMember(f, 2, spec, StateFailed)
			// of an earlier source, but not Ready: a rollout's old
			// member serves only while Ready
			p, c := readyMember("desk", 3, driftedSpec(3))
			p.Status.Conditions = nil
			f.add(p, c)
		}, "pool has no free members (desired 3, claimed 0, unschedulable 0)"},
		{"a drifted member whose release did not finish", 1, func(f *fakeCluster) {
			p, c := readyMember("desk", 1, driftedSpec(1))
			c.Annotations = map[string]string{AnnotationReleased: "bob"}
			f.add(p, c)
		}, "pool has no free members (desired 1, claimed 0, unschedulable 0)"},
		{"size zero", 0, func(f *fakeCluster) { seedMember(f, 1, spec, StateReady) }, "pool has no free members (desired 0, claimed 0, unschedulable 0)"},
		{"every member under maintenance", 1, func(f *fakeCluster) {
			seedMember(f, 1, spec, StateReady)
			f.add(ReconcilerLease(testNS, "desk", "desk-1", testNow))
		}, "pool has no free members (desired 1, claimed 0, unschedulable 0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			s := spec
			s.Size = tt.size
			seedPool(f, "desk", s, 0)
			tt.seed(f)
			res, err := e.Claim(context.Background(), "desk", "alice")
			var nf *NoFreeMembersError
			if !errors.As(err, &nf) || !errors.Is(err, ErrNoFreeMembers) || err.Error() != tt.want {
				t.Fatalf("Claim = %v, want %q", err, tt.want)
			}
			if res.Member != "" || len(f.writes()) != 0 {
				t.Fatalf("result %+v, writes %v", res, f.writes())
			}
		})
	}
}

// firstPick is the member identity's claim tries first in a pool "desk" of
// n Ready members (as seedPool makes them), and another of those members.
func firstPick(t *testing.T, identity string, n int) (first, other string) {
	t.Helper()
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(n), n)
	res, err := e.Claim(context.Background(), "desk", identity)
	if err != nil {
		t.Fatal(err)
	}
	other = "desk-1"
	if res.Member == other {
		other = "desk-2"
	}
	return res.Member, other
}

func TestClaimLosesTheRace(t *testing.T) {
	first, other := firstPick(t, "alice", 2)
	tests := []struct {
		name  string
		setup func(f *fakeCluster)
	}{
		{"AlreadyExists injected", func(f *fakeCluster) {
			f.fail("create", kLease, LeaseName(first), fmt.Errorf("leases: %w", ErrAlreadyExists), 0)
		}},
		{"another identity claims first", func(f *fakeCluster) {
			f.hook = func(a act) {
				if a == (act{"create", kLease, LeaseName(first)}) {
					f.hook = nil
					f.add(claimAt("desk", first, "bob", testNow))
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", baseSpec(2), 2)
			tt.setup(f)
			res, err := e.Claim(context.Background(), "desk", "alice")
			if err != nil || res.Member != other {
				t.Fatalf("Claim = %+v, %v; want %s", res, err, other)
			}
			assertActs(t, f.writes(), wantActs("create Lease "+LeaseName(first), "create Lease "+LeaseName(other), "patch Pod "+other, "patch PersistentVolumeClaim "+PVCName(other)))
		})
	}

	t.Run("every member lost", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(1), 1)
		f.fail("create", kLease, LeaseName("desk-1"), ErrAlreadyExists, 0)
		_, err := e.Claim(context.Background(), "desk", "alice")
		errIs(t, err, ErrNoFreeMembers)
	})
}

func TestClaimWriteFailures(t *testing.T) {
	tests := []struct {
		name               string
		verb, kind, target string
		wantErr            string
		wantWarning        string
		wantMember         string
	}{
		{name: "lease forbidden", verb: "create", kind: kLease, target: "corral-vdi-ct-desk-1", wantErr: "claim desk-1: boom"},
		{name: "annotation fails: claim kept, warning", verb: "patch", kind: kPVC, target: "desk-1-data", wantWarning: "display annotation on desk-1-data: boom", wantMember: "desk-1"},
		{name: "start fails", verb: "create", kind: kPod, target: "desk-1", wantErr: "start desk-1: create Pod: boom", wantMember: "desk-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", baseSpec(1), 0)
			seedMember(f, 1, baseSpec(1), StateStopped)
			f.fail(tt.verb, tt.kind, tt.target, errBoom, 0)
			res, err := e.Claim(context.Background(), "desk", "alice")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, errBoom) {
					t.Fatalf("Claim = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Claim: %v", err)
			}
			if res.Member != tt.wantMember {
				t.Fatalf("member %q, want %q", res.Member, tt.wantMember)
			}
			if tt.wantWarning != "" && (len(res.Warnings) != 1 || res.Warnings[0] != tt.wantWarning) {
				t.Fatalf("warnings %q", res.Warnings)
			}
		})
	}
}

// Bad input is refused before anything is read or written.
func TestClaimRefusesBadInput(t *testing.T) {
	tests := []struct {
		name, pool, identity string
		wantIs               error
		wantErr              string
	}{
		{name: "reserved identity", pool: "desk", identity: ReconcilerIdentity, wantIs: ErrReservedIdentity},
		{name: "empty identity", pool: "desk", identity: "", wantErr: "invalid identity: must not be empty"},
		{name: "oversized identity", pool: "desk", identity: strings.Repeat("x", 254), wantErr: "at most 253"},
		{name: "ESC in identity", pool: "desk", identity: "al\x1bice", wantErr: "control or format characters"},
		{name: "bidi override", pool: "desk", identity: "alice\u202e", wantErr: "U+202E"},
		{name: "invalid pool name", pool: "Desk!", identity: "alice", wantErr: "invalid pool"},
		{name: "pool not found", pool: "nope", identity: "alice", wantIs: ErrPoolNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", baseSpec(1), 1)
			_, err := e.Claim(context.Background(), tt.pool, tt.identity)
			if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Claim = %v, want %v %q", err, tt.wantIs, tt.wantErr)
			}
			if len(f.writes()) != 0 {
				t.Fatalf("writes %v", f.writes())
			}
		})
	}
}

func TestClaimAudit(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(1), 1)
	var got []AuditEntry
	e.Audit = func(_ context.Context, a AuditEntry) { got = append(got, a) }
	if _, err := e.Claim(context.Background(), "desk", "alice"); err != nil {
		t.Fatal(err)
	}
	_, err := e.Claim(context.Background(), "desk", "bob")
	if len(got) != 2 || got[0].Action != "claim" || got[0].Member != "desk-1" || got[0].Identity != "alice" || got[0].Err != nil {
		t.Fatalf("audit %+v", got)
	}
	if got[1].Identity != "bob" || got[1].Member != "" || got[1].Err != err {
		t.Fatalf("audit of the failed claim %+v", got[1])
	}
}
