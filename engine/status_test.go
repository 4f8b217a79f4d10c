package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// schedulerMessage is the scheduler's message for member i of a pool on a
// cluster of about 5,000 nodes whose counts change between attempts: every
// member gets a message of its own, about 330 bytes long.
func schedulerMessage(i int) string {
	nodes := 5003 + i%17
	mem := nodes - 2 - i%5
	return fmt.Sprintf("0/%d nodes are available: 2 node(s) had untolerated taint {virtual-kubelet.io/provider: cocoon}, %d Insufficient memory, %d Insufficient cpu, %d node(s) had volume node affinity conflict. "+
		"preemption: 0/%d nodes are available: 2 Preemption is not helpful for scheduling, %d No preemption victims found for incoming pod.",
		nodes, mem, i%5, i%3, nodes, nodes-2)
}

func unschedulablePod(pool string, n int, spec Spec, msg string) *corev1.Pod {
	p := BuildPod(testNS, pool, n, spec)
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg,
	}}}
	return p
}

// TestStatusOfTwentyThousandUnschedulableMembersFits: a pool of 20,000
// members, every one Unschedulable with a scheduler message of its own,
// records its status (the API server refuses a ConfigMap over 1 MiB) with
// every row, well under the bound, and reads it back; a second reconcile
// with nothing changed writes nothing.
func TestStatusOfTwentyThousandUnschedulableMembersFits(t *testing.T) {
	const size = 20000
	e, f := newEngine()
	e.Concurrency = 8
	spec := baseSpec(size)
	f.add(BuildConfigMap(testNS, "big", spec))
	msgs := make([]string, size+1)
	for n := 1; n <= size; n++ {
		msgs[n] = schedulerMessage(n)
		f.add(unschedulablePod("big", n, spec, msgs[n]), BuildPVC(testNS, "big", n, spec))
	}
	res, err := e.Reconcile(context.Background(), "big")
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if !res.StatusWritten {
		t.Fatal("the status was not written")
	}
	data := f.cm(ConfigMapName("big")).Data[KeyStatus]
	t.Logf("status of %d Unschedulable members: %d bytes (%.0f a row)", size, len(data), float64(len(data))/size)
	if len(data) >= 800<<10 {
		t.Errorf("status is %d bytes, want under 800 KiB (room to spare under the 1 MiB ConfigMap)", len(data))
	}
	st, err := ParseStatus(data)
	if err != nil {
		t.Fatal(err)
	}
	if st.RowsCut != 0 || st.MessagesCut != 0 || len(st.Members) != size {
		t.Fatalf("rows %d, rowsCut %d, messagesCut %d; want every row", len(st.Members), st.RowsCut, st.MessagesCut)
	}
	if st.Unschedulable != size || st.Desired != size {
		t.Errorf("counts: desired %d unschedulable %d", st.Desired, st.Unschedulable)
	}
	exact := 0
	for i, r := range st.Members {
		n := i + 1
		if r.Name != MemberName("big", n) || r.State != StateUnschedulable {
			t.Fatalf("row %d: %+v", i, r)
		}
		switch {
		case !r.MessageLike && r.Message == msgs[n]:
			exact++
		case r.MessageLike && messageShape(r.Message) == messageShape(msgs[n]):
		default:
			t.Fatalf("row %s: message %q (like %v), want %q or one in its words", r.Name, r.Message, r.MessageLike, msgs[n])
		}
	}
	if exact == 0 {
		t.Error("no row carries its own message")
	}
	res, err = e.Reconcile(context.Background(), "big")
	if err != nil || res.StatusWritten {
		t.Errorf("second reconcile: written %v, err %v; want nothing written", res.StatusWritten, err)
	}
}

// TestStatusPastItsBoundCutsRows: rows past StatusMaxBytes are cut from the
// end and counted; the counts stay whole and the write never fails.
func TestStatusPastItsBoundCutsRows(t *testing.T) {
	const size = 40000
	pool := strings.Repeat("p", MaxPoolNameLength)
	st := Status{Desired: size, Observed: size, Unschedulable: size}
	for n := 1; n <= size; n++ {
		st.Members = append(st.Members, MemberRow{Name: MemberName(pool, n), State: StateUnschedulable, Holder: "someone-with-a-long-identity@example.com", Message: schedulerMessage(n)})
	}
	enc := st.Encode()
	if len(enc) > StatusMaxBytes {
		t.Fatalf("encoding is %d bytes, over %d", len(enc), StatusMaxBytes)
	}
	back, err := ParseStatus(enc)
	if err != nil {
		t.Fatal(err)
	}
	if back.RowsCut == 0 || back.RowsCut+len(back.Members) != size {
		t.Fatalf("rows %d + rowsCut %d, want %d with some cut", len(back.Members), back.RowsCut, size)
	}
	if back.Unschedulable != size || back.Desired != size {
		t.Errorf("counts not whole: %+v", back)
	}
	for i, r := range back.Members {
		if r.Name != st.Members[i].Name || r.Holder != st.Members[i].Holder {
			t.Fatalf("row %d: %+v, want %s", i, r, st.Members[i].Name)
		}
	}
	if back.Encode() != enc {
		t.Error("the encoding of a cut status is not stable")
	}
	t.Logf("%d of %d rows kept in %d bytes", len(back.Members), size, len(enc))
}

// TestParseStatusOfThePreviousVersion reads a status as the previous version
// wrote it (one YAML object per row, the message in each), and the encoding
// of what it read reads back the same.
func TestParseStatusOfThePreviousVersion(t *testing.T) {
	const old = `claimed: 1
desired: 3
drifted: 1
errors:
- 'create desk-3: create PVC: boom'
- 'delete desk-4: context canceled'
exhausted: false
failed: 0
free: 1
members:
- holder: alice@example.com
  name: desk-1
  state: Ready
- drift: true
  name: desk-2
  state: Ready
- message: '0/4 nodes are available: 4 Insufficient cpu.'
  name: desk-3
  state: Unschedulable
- aboveSize: true
  claimExpired: true
  holder: bob
  maintenance: true
  name: desk-4
  state: Stopped
observed: 4
ready: 2
source: 0123456789abcdef
unschedulable: 1
updatedAt: "2026-01-02T03:04:05Z"
`
	st, err := ParseStatus(old)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	want := Status{Desired: 3, Observed: 4, Ready: 2, Claimed: 1, Free: 1, Unschedulable: 1, Drifted: 1, Source: "0123456789abcdef",
		Members: []MemberRow{
			{Name: "desk-1", State: StateReady, Holder: "alice@example.com"},
			{Name: "desk-2", State: StateReady, Drift: true},
			{Name: "desk-3", State: StateUnschedulable, Message: "0/4 nodes are available: 4 Insufficient cpu."},
			{Name: "desk-4", State: StateStopped, Holder: "bob", ClaimExpired: true, Maintenance: true, AboveSize: true},
		},
		Errors: []string{"create desk-3: create PVC: boom", "delete desk-4: context canceled"},
	}
	if st.UpdatedAt == nil || !st.UpdatedAt.Equal(at) {
		t.Errorf("updatedAt %v, want %v", st.UpdatedAt, at)
	}
	st.UpdatedAt = nil
	if got, w := fmt.Sprintf("%+v", st), fmt.Sprintf("%+v", want); got != w {
		t.Fatalf("parsed\n%s\nwant\n%s", got, w)
	}
	back, err := ParseStatus(st.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got, w := fmt.Sprintf("%+v", back), fmt.Sprintf("%+v", want); got != w {
		t.Fatalf("round trip\n%s\nwant\n%s", got, w)
	}
}

// TestStatusEncoding: each kind of row and each bound, encoded and read back.
func TestStatusEncoding(t *testing.T) {
	long := strings.Repeat("x", 3000)
	manyShapes := func(n int, shaped bool) []MemberRow {
		var rows []MemberRow
		for i := 1; i <= n; i++ {
			msg := fmt.Sprintf("0/%d nodes are available: %d Insufficient cpu.", 10+i, i)
			if !shaped {
				msg = fmt.Sprintf("cause %s number %d", strings.Repeat("z", i), i)
			}
			rows = append(rows, MemberRow{Name: MemberName("desk", i), State: StateUnschedulable, Message: msg})
		}
		return rows
	}
	manyErrors := func(n int) []string {
		var errs []string
		for i := 1; i <= n; i++ {
			errs = append(errs, fmt.Sprintf("create desk-%d: cause number %s", i, strings.Repeat("q", i)))
		}
		return errs
	}
	cases := []struct {
		name  string
		in    Status
		check func(t *testing.T, enc string, back Status)
	}{
		{"a plain row is one short line", Status{Members: []MemberRow{{Name: "desk-1", State: StateReady}}},
			func(t *testing.T, enc string, back Status) {
				if !strings.Contains(enc, "\n- desk-1 Ready\n") {
					t.Errorf("want the row as a plain line:\n%s", enc)
				}
			}},
		{"every marker and a holder with spaces and quotes", Status{Members: []MemberRow{
			{Name: "desk-1", State: StateStopped, Holder: `Ann "the admin" O'Neil: msg=3 holder=x`, ClaimExpired: true, Maintenance: true, Drift: true, AboveSize: true},
			{Name: "desk-2", State: StateReady, Holder: "ünïcode\u0085 and\u2028 separators \x7f"},
		}}, nil},
		{"one message stored once", Status{Members: []MemberRow{
			{Name: "desk-1", State: StateUnschedulable, Message: "0/3 nodes: no room"},
			{Name: "desk-2", State: StateUnschedulable, Message: "0/3 nodes: no room"},
		}}, func(t *testing.T, enc string, back Status) {
			if strings.Count(enc, "no room") != 1 {
				t.Errorf("the message is not stored once:\n%s", enc)
			}
		}},
		{"a long message is cut", Status{Members: []MemberRow{{Name: "desk-1", State: StateFailed, Message: long}}},
			func(t *testing.T, enc string, back Status) {
				if m := back.Members[0].Message; len(m) > StatusMaxMessageBytes || !strings.HasSuffix(m, "…") {
					t.Errorf("message of %d bytes %q", len(m), m[len(m)-8:])
				}
			}},
		{"a row the compact form cannot hold is an object", Status{Members: []MemberRow{
			{Name: "odd name", State: "weird state", Message: "m"}, {Name: "desk-2", State: StateReady},
		}}, func(t *testing.T, enc string, back Status) {
			if !strings.Contains(enc, `{"name":"odd name"`) {
				t.Errorf("want an object row:\n%s", enc)
			}
		}},
		{"past the message table, same words refer to an entry", Status{Members: manyShapes(StatusMaxMessages+30, true)},
			func(t *testing.T, enc string, back Status) {
				like := 0
				for _, r := range back.Members {
					if r.MessageLike {
						like++
					}
				}
				if like != 30 || back.MessagesCut != 0 {
					t.Errorf("%d rows like an entry, messagesCut %d; want 30, 0", like, back.MessagesCut)
				}
			}},
		{"past the message table, other words are cut", Status{Members: manyShapes(StatusMaxMessages+30, false)},
			func(t *testing.T, enc string, back Status) {
				if back.MessagesCut != 30 {
					t.Errorf("messagesCut %d, want 30", back.MessagesCut)
				}
			}},
		{"errors are grouped by cause", Status{Errors: []string{"delete desk-1: context canceled", "delete desk-2: context canceled", "create desk-3: boom"}},
			func(t *testing.T, enc string, back Status) {
				want := []string{"delete 2 members: context canceled (desk-1, desk-2)", "create desk-3: boom"}
				if fmt.Sprint(back.Errors) != fmt.Sprint(want) {
					t.Errorf("errors %q, want %q", back.Errors, want)
				}
			}},
		{"errors past their bound are counted", Status{Errors: manyErrors(StatusMaxErrorLines + 5)},
			func(t *testing.T, enc string, back Status) {
				if len(back.Errors) != StatusMaxErrorLines || back.ErrorsCut != 5 {
					t.Errorf("%d error lines, errorsCut %d", len(back.Errors), back.ErrorsCut)
				}
			}},
		{"an empty status", Status{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			enc := c.in.Encode()
			back, err := ParseStatus(enc)
			if err != nil {
				t.Fatalf("%v\n%s", err, enc)
			}
			if again := back.Encode(); again != enc {
				t.Fatalf("not stable:\n%s\n---\n%s", enc, again)
			}
			if !c.in.sameContent(back) {
				t.Error("sameContent is false for a round trip")
			}
			for i, r := range back.Members {
				w := c.in.Members[i]
				if r.Name != w.Name || r.State != w.State || r.Holder != w.Holder || r.Drift != w.Drift || r.AboveSize != w.AboveSize ||
					r.Maintenance != w.Maintenance || r.ClaimExpired != w.ClaimExpired {
					t.Errorf("row %d: %+v, want %+v", i, r, w)
				}
				if !r.MessageLike && r.Message != "" && r.Message != cutText(w.Message, StatusMaxMessageBytes) {
					t.Errorf("row %d: message %q, want %q", i, r.Message, w.Message)
				}
			}
			if c.check != nil {
				c.check(t, enc, back)
			}
		})
	}
}

// TestParseStatusRejectsBadRows: a row that refers past the table or has a
// word of no meaning is an error that names the status.
func TestParseStatusRejectsBadRows(t *testing.T) {
	for _, in := range []string{
		"members:\n- desk-1 Ready msg=0\n",
		"messages: [a]\nmembers:\n- desk-1 Ready msg=1\n",
		"members:\n- desk-1 Ready sparkly\n",
		"members:\n- desk-1 ready\n",
		"messages: [a]\nmembers:\n- desk-1 Ready msg=00\n",
	} {
		if _, err := ParseStatus(in); err == nil || !strings.Contains(err.Error(), "status") {
			t.Errorf("%q: err %v, want an invalid status", in, err)
		}
	}
}
