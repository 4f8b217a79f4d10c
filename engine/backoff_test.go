package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// recordBackoff writes the pool's status as a reconcile would record it
// now, with b as the named member's backoff.
func recordBackoff(t *testing.T, f *fakeCluster, member string, b *Backoff) {
	t.Helper()
	v := Observe(mustSnapshot(t, f), testNow)
	st := v.Status
	for i := range st.Members {
		if st.Members[i].Name == member {
			st.Members[i].Backoff = b
		}
	}
	f.cms[ConfigMapName("desk")].Data[KeyStatus] = st.Encode()
}

// recordedBackoff is the named member's backoff in the pool's recorded
// status (nil when none).
func recordedBackoff(t *testing.T, f *fakeCluster, member string) *Backoff {
	t.Helper()
	st, err := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
	if err != nil {
		t.Fatalf("recorded status: %v", err)
	}
	for _, r := range st.Members {
		if r.Name == member {
			return r.Backoff
		}
	}
	return nil
}

// replaced reports whether the reconcile destroyed and built the member again.
func replaced(f *fakeCluster, member string) bool {
	w := memberWrites(f.writes(), member)
	return hasAct(w, "delete", kPod, member) && hasAct(w, "create", kPod, member)
}

func TestBackoffDelay(t *testing.T) {
	for n, want := range map[int]time.Duration{
		0: 30 * time.Second, 1: 30 * time.Second, 2: time.Minute, 3: 2 * time.Minute, 4: 4 * time.Minute,
		6: 16 * time.Minute, 7: 30 * time.Minute, 8: 30 * time.Minute, 1000: 30 * time.Minute,
	} {
		if got := BackoffDelay(n); got != want {
			t.Errorf("BackoffDelay(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestReconcileBacksOffFailingMembers: an unclaimed member whose own Pod
// fails on the current source is not rebuilt by every reconcile: its first
// failure waits 30 s, each one after twice as long, at most 30 minutes;
// its count survives in the recorded status, so a second reconciler (a fresh
// Engine) keeps it; a Ready member starts again; a claimed failed member is
// never touched; a drifted one, or a Pod without its PVC, is replaced at
// once as before.
func TestReconcileBacksOffFailingMembers(t *testing.T) {
	spec := baseSpec(2)
	crashing := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container"}}}}
	}
	podFailed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	at := func(d time.Duration) time.Time { return testNow.Add(d) }
	cases := []struct {
		name    string
		built   Spec
		mutate  func(*corev1.Pod)
		noPVC   bool
		claimed bool
		clock   string   // the reconciler's ClockID
		rec     *Backoff // the recorded backoff of desk-1 (nil: none)
		replace bool     // desk-1 is rebuilt
		want    *Backoff // desk-1's backoff recorded after (nil: none)
		skipped string   // the reconcile's skip of desk-1
	}{
		{name: "first failure: recorded, not replaced", mutate: podFailed,
			want: &Backoff{Failures: 1, RetryAt: at(30 * time.Second)}, skipped: "failure 1 in a row: kept for its logs, replaced in 30s"},
		{name: "crash loop, first failure: recorded, not replaced", mutate: crashing,
			want: &Backoff{Failures: 1, RetryAt: at(30 * time.Second)}, skipped: "failure 1 in a row"},
		{name: "within its backoff: not replaced", mutate: podFailed, rec: &Backoff{Failures: 3, RetryAt: at(100 * time.Second)},
			want: &Backoff{Failures: 3, RetryAt: at(100 * time.Second)}, skipped: "failure 3 in a row: kept for its logs, replaced in 1m40s"},
		{name: "after its backoff: replaced, the next doubles", mutate: podFailed, rec: &Backoff{Failures: 1, RetryAt: at(-time.Second)},
			replace: true, want: &Backoff{Failures: 2, RetryAt: at(time.Minute)}},
		{name: "at its backoff's end: replaced", mutate: crashing, rec: &Backoff{Failures: 3, RetryAt: testNow},
			replace: true, want: &Backoff{Failures: 4, RetryAt: at(4 * time.Minute)}},
		{name: "the count caps at 30 minutes", mutate: podFailed, rec: &Backoff{Failures: 9, RetryAt: at(-time.Minute)},
			replace: true, want: &Backoff{Failures: 10, RetryAt: at(30 * time.Minute)}},
		{name: "Ready resets the count", rec: &Backoff{Failures: 5, RetryAt: at(10 * time.Minute)}},
		{name: "Starting after a replacement keeps the count", mutate: func(p *corev1.Pod) { p.Status = corev1.PodStatus{Phase: corev1.PodPending} },
			rec: &Backoff{Failures: 2, RetryAt: at(time.Minute)}, want: &Backoff{Failures: 2, RetryAt: at(time.Minute)}},
		{name: "claimed and failed: untouched", mutate: podFailed, claimed: true, rec: &Backoff{Failures: 2, RetryAt: at(-time.Hour)},
			want: &Backoff{Failures: 2, RetryAt: at(-time.Hour)}, skipped: `claimed by "alice"`},
		{name: "claimed and failed, no backoff: untouched, none started", mutate: podFailed, claimed: true, skipped: `claimed by "alice"`},
		{name: "drifted and failed: replaced at once, the count dropped", built: driftedSpec(2), mutate: podFailed,
			rec: &Backoff{Failures: 4, RetryAt: at(time.Hour)}, replace: true},
		{name: "a Pod without its PVC: replaced at once", mutate: podFailed, noPVC: true, replace: true},
		{name: "a second reconciler of the same clock keeps the wait", mutate: podFailed, clock: "host-a",
			rec: &Backoff{Failures: 2, RetryAt: at(20 * time.Second), By: "host-a"}, want: &Backoff{Failures: 2, RetryAt: at(20 * time.Second), By: "host-a"}, skipped: "replaced in 20s"},
		{name: "another clock's stamp: the wait starts again on this clock", mutate: podFailed, clock: "host-b",
			rec: &Backoff{Failures: 2, RetryAt: at(-time.Hour), By: "host-a"}, want: &Backoff{Failures: 2, RetryAt: at(time.Minute), By: "host-b"}, skipped: "replaced in 1m0s"},
		{name: "a stamp far ahead: counts from now", mutate: podFailed,
			rec: &Backoff{Failures: 1, RetryAt: at(5 * time.Hour)}, want: &Backoff{Failures: 1, RetryAt: at(30 * time.Second)}, skipped: "replaced in 30s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, f := newEngine()
			e.ClockID = c.clock
			seedPool(f, "desk", spec, 2)
			built := spec
			if c.built.Image != "" {
				built = c.built
			}
			p, pvc := readyMember("desk", 1, built)
			if c.mutate != nil {
				c.mutate(p)
			}
			delete(f.pods, "desk-1")
			delete(f.pvcs, PVCName("desk-1"))
			f.add(p)
			if !c.noPVC {
				f.add(pvc)
			}
			if c.claimed {
				f.add(claimAt("desk", "desk-1", "alice", testNow.Add(-time.Minute)))
			}
			if c.rec != nil {
				recordBackoff(t, f, "desk-1", c.rec)
			}
			res, err := e.Reconcile(context.Background(), "desk")
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if got := replaced(f, "desk-1"); got != c.replace {
				t.Errorf("replaced %v, want %v (writes %v)", got, c.replace, memberWrites(f.writes(), "desk-1"))
			}
			if !c.replace && hasAct(f.writes(), "delete", kPod, "desk-1") {
				t.Errorf("desk-1's Pod deleted: %v", f.writes())
			}
			got := recordedBackoff(t, f, "desk-1")
			if (got == nil) != (c.want == nil) || got != nil && (got.Failures != c.want.Failures || !got.RetryAt.Equal(c.want.RetryAt) || got.By != c.want.By) {
				t.Errorf("recorded backoff %+v, want %+v", got, c.want)
			}
			skipped := ""
			for _, a := range res.Actions {
				if a.Member == "desk-1" && a.Skipped != "" {
					skipped = a.Skipped
				}
			}
			if (c.skipped == "") != (skipped == "") || !strings.Contains(skipped, c.skipped) {
				t.Errorf("skipped %q, want %q", skipped, c.skipped)
			}
		})
	}
}

// TestBackoffAcrossReconcilers: a failing member is rebuilt once per
// backoff, however many reconcilers run and however often: each a fresh
// Engine that knows only the recorded status.
func TestBackoffAcrossReconcilers(t *testing.T) {
	spec := baseSpec(1)
	_, f := newEngine()
	seedPool(f, "desk", spec, 0)
	fail := func() {
		p, c := readyMember("desk", 1, spec)
		p.Status.Phase = corev1.PodFailed
		if old := f.pods["desk-1"]; old != nil {
			p.UID = old.UID
		}
		f.pods["desk-1"] = p
		if f.pvcs[PVCName("desk-1")] == nil {
			f.add(c)
		}
	}
	fail()
	var rebuilt []time.Duration
	for s := time.Duration(0); s <= 8*time.Minute; s += 10 * time.Second {
		e := &Engine{Cluster: f, Namespace: testNS, Now: fixedClock(testNow.Add(s)), Concurrency: 1, WaitTimeout: 5 * time.Second, ClockID: "host"}
		f.reset()
		if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
			t.Fatalf("at %s: %v", s, err)
		}
		if replaced(f, "desk-1") {
			rebuilt = append(rebuilt, s)
		}
		fail() // every build fails at once
	}
	want := []time.Duration{30 * time.Second, 90 * time.Second, 210 * time.Second, 450 * time.Second}
	if len(rebuilt) != len(want) {
		t.Fatalf("rebuilt at %v, want %v", rebuilt, want)
	}
	for i := range want {
		if rebuilt[i] != want[i] {
			t.Fatalf("rebuilt at %v, want %v", rebuilt, want)
		}
	}
}

// TestParseStatusBackoff: a status of the previous release (no backoff)
// parses, with no backoff; a backoff survives Encode and ParseStatus; an
// entry naming no row, an unknown field and a broken entry leave the rest.
func TestParseStatusBackoff(t *testing.T) {
	old := "desired: 2\nobserved: 2\nready: 1\nclaimed: 0\nfree: 1\nunschedulable: 0\ndrifted: 0\nfailed: 1\nexhausted: false\n" +
		"messages:\n- \"Pod failed\"\nmembers:\n- desk-1 Failed msg=0\n- desk-2 Ready\n"
	st, err := ParseStatus(old)
	if err != nil || len(st.Members) != 2 || st.Members[0].Backoff != nil || st.Members[0].Message != "Pod failed" {
		t.Fatalf("previous release's status: %+v, %v", st, err)
	}
	retry := testNow.Add(time.Minute)
	st.Members[0].Backoff = &Backoff{Failures: 2, RetryAt: retry, By: "host-a"}
	enc := st.Encode()
	if !strings.Contains(enc, `backoff: {"desk-1":{"n":2,"retryAt":"2025-06-01T12:01:00Z","by":"host-a"}}`) {
		t.Fatalf("encoded:\n%s", enc)
	}
	back, err := ParseStatus(enc)
	if err != nil || back.Members[0].Backoff == nil || back.Members[0].Backoff.Failures != 2 || !back.Members[0].Backoff.RetryAt.Equal(retry) || back.Members[1].Backoff != nil {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if !back.sameContent(st) {
		t.Fatalf("round trip differs:\n%s\n%s", back.Encode(), enc)
	}
	odd := old + "backoff: {\"desk-9\":{\"n\":1,\"retryAt\":\"2025-06-01T12:01:00Z\"},\"desk-2\":{\"n\":1},\"desk-1\":{\"n\":3,\"retryAt\":\"2025-06-01T12:01:00Z\",\"future\":true}}\nsomethingNew: 1\n"
	st, err = ParseStatus(odd)
	if err != nil || st.Members[0].Backoff == nil || st.Members[0].Backoff.Failures != 3 || st.Members[1].Backoff != nil {
		t.Fatalf("odd backoff: %+v, %v", st, err)
	}
}

// TestDiagnoseBackoff: a failing member's diagnosis names its crash loop,
// the Pod's own cause (the container's last exit) and its backoff.
func TestDiagnoseBackoff(t *testing.T) {
	p, c := readyMember("desk", 1, baseSpec(1))
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 127, Message: "exec: not found"}}}}
	f := newFake(testNS)
	f.add(BuildConfigMap(testNS, "desk", baseSpec(1)), p, c)
	recordBackoff(t, f, "desk-1", &Backoff{Failures: 3, RetryAt: testNow.Add(2 * time.Minute)})
	v := Observe(mustSnapshot(t, f), testNow)
	d := Diagnose(v.Member("desk-1"), nil, nil, nil)
	for _, want := range []string{"keeps crashing (failure 3 in a row)"} {
		if !strings.Contains(d.Reason, want) {
			t.Errorf("reason %q, want %q in it", d.Reason, want)
		}
	}
	if want := "container " + ContainerName + " last exited (Error, exit code 127): exec: not found"; !strings.Contains(d.Evidence, want) {
		t.Errorf("evidence %q, want %q in it", d.Evidence, want)
	}
	if want := "builds it again after 2025-06-01T12:02:00Z"; !strings.Contains(d.Fix, want) {
		t.Errorf("fix %q, want %q in it", d.Fix, want)
	}
}
