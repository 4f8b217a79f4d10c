package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

var now = time.Date(2026, 3, 2, 14, 3, 27, 0, time.UTC)

// claimed is a member claimed by holder, taken `ago` before now and
// expiring `left` after it (left 0: no expiry recorded).
func claimed(holder string, ago, left time.Duration) engine.Member {
	c := &engine.Claim{Holder: holder, Acquired: now.Add(-ago)}
	if left != 0 {
		c.Expires = now.Add(left)
		c.Expired = left < 0
	}
	return engine.Member{Name: "desk-1", State: engine.StateReady, Claimed: true, Claim: c, Node: "node-a"}
}

// hostile is cluster text that tries to move the cursor, set the clipboard,
// colour the screen and reverse what follows.
const hostile = "\x1b]52;c;ZXZpbA==\x07mal\x1b[2J\rlory\x1b[31m@evil\u202e.com\u009b1m\x07"

// TestStateWords: each state is shown by its own word, and a state that
// needs attention raises the row's level.
func TestStateWords(t *testing.T) {
	cases := []struct {
		state engine.State
		word  string
		level Level
	}{
		{engine.StateReady, "Ready", LevelNone},
		{engine.StateStarting, "Starting", LevelNone},
		{engine.StateStopped, "Stopped", LevelNone},
		{engine.StateMissing, "Missing", LevelNone},
		{engine.StateTerminating, "Terminating", LevelNone},
		{engine.StateUnschedulable, "Unschedulable", LevelWarn},
		{engine.StateFailed, "Failed", LevelError},
	}
	for _, c := range cases {
		t.Run(c.word, func(t *testing.T) {
			mm := engine.Member{Name: "desk-1", State: c.state}
			r := MemberRow(&mm, now)
			if r.State != c.word || r.Level != c.level {
				t.Errorf("state %s: word %q level %d, want %q level %d", c.state, r.State, r.Level, c.word, c.level)
			}
		})
	}
}

// TestMemberRow: the cells, marks, holder and claim of a member's row,
// the dashboard's words (Short, Cell) and --once's (Long, Plain) side by side.
func TestMemberRow(t *testing.T) {
	type want struct {
		holderCell, holderPlain string
		claimed, left           string
		expired                 bool
		marksShort, marksLong   string
		age                     string
		level                   Level
	}
	cases := []struct {
		name string
		mm   func() engine.Member
		want want
	}{
		{"free", func() engine.Member {
			return engine.Member{Name: "desk-4", State: engine.StateReady, Free: true, Node: "node-b", Created: now.Add(-3 * time.Hour)}
		}, want{holderCell: "—", holderPlain: "-", age: "3h"}},
		{"claimed, an hour left", func() engine.Member {
			return claimed("alice@example.com", 20*time.Minute, 65*time.Minute)
		}, want{holderCell: "alice@example.com", holderPlain: "alice@example.com", claimed: "20m", left: "1h05m"}},
		{"claimed, expiring soon", func() engine.Member {
			return claimed("bob@example.com", 2*time.Hour, 4*time.Minute)
		}, want{holderCell: "bob@example.com", holderPlain: "bob@example.com", claimed: "2h", left: "⚠ 4m", level: LevelWarn}},
		{"claim at its expiry", func() engine.Member {
			return claimed("bob@example.com", 2*time.Hour, engine.ExpiringSoon+time.Second)
		}, want{holderCell: "bob@example.com", holderPlain: "bob@example.com", claimed: "2h", left: "10m"}},
		{"claim expired", func() engine.Member {
			return claimed("carol@example.com", 9*time.Hour, -5*time.Minute)
		}, want{holderCell: "carol@example.com", holderPlain: "carol@example.com", claimed: "9h", left: "✗ expired", expired: true, level: LevelError}},
		{"claim with no expiry counts as expired", func() engine.Member {
			return claimed("dave@example.com", time.Minute, 0)
		}, want{holderCell: "dave@example.com", holderPlain: "dave@example.com", claimed: "1m", left: "✗ expired", expired: true, level: LevelError}},
		{"maintenance", func() engine.Member {
			return engine.Member{Name: "desk-2", State: engine.StateReady, Hold: &engine.Hold{Maintenance: true}}
		}, want{holderCell: "⚙ reconciler", holderPlain: "reconciler", marksShort: "⚙ maint", marksLong: "maintenance"}},
		{"stale maintenance", func() engine.Member {
			return engine.Member{Name: "desk-2", State: engine.StateReady, Hold: &engine.Hold{Claim: engine.Claim{Stale: true}, Maintenance: true}}
		}, want{holderCell: "⚙ reconciler", holderPlain: "reconciler", marksShort: "⚙ stale maint", marksLong: "stale maintenance", level: LevelWarn}},
		{"every other mark, in order", func() engine.Member {
			return engine.Member{Name: "desk-6", State: engine.StateReady, Drift: true, AboveSize: true, Blocked: "pod desk-6 is not this pool's",
				NodeDown: "Ready=Unknown", Problems: []string{"a", "b"}}
		}, want{holderCell: "—", holderPlain: "-", marksShort: "⟳ drift ↑ above size ! blocked ✗ node down ! 2 problems",
			marksLong: "drift,above size,blocked,node down,2 problems", level: LevelError}},
		{"one problem", func() engine.Member {
			return engine.Member{Name: "desk-6", State: engine.StateReady, Problems: []string{"a"}}
		}, want{holderCell: "—", holderPlain: "-", marksShort: "! 1 problem", marksLong: "1 problem", level: LevelError}},
		{"node down", func() engine.Member {
			return engine.Member{Name: "desk-3", State: engine.StateReady, NodeDown: "Ready=Unknown"}
		}, want{holderCell: "—", holderPlain: "-", marksShort: "✗ node down", marksLong: "node down", level: LevelWarn}},
		{"a failed member's level wins over its claim's", func() engine.Member {
			m := claimed("erin@example.com", time.Minute, 5*time.Minute)
			m.State = engine.StateFailed
			return m
		}, want{holderCell: "erin@example.com", holderPlain: "erin@example.com", claimed: "1m", left: "⚠ 5m", level: LevelError}},
		{"hostile holder", func() engine.Member {
			return claimed(hostile, time.Minute, time.Hour)
		}, want{holderCell: "mal lory@evil.com", holderPlain: "mal lory@evil.com", claimed: "1m", left: "1h"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mm := c.mm()
			r := MemberRow(&mm, now)
			got := want{
				holderCell: r.Holder.Cell(), holderPlain: r.Holder.Plain(),
				claimed: r.Claim.Claimed, left: r.Claim.Left, expired: r.Claim.Expired,
				marksShort: r.Marks.Short(), marksLong: r.Marks.Long(), age: r.Age, level: r.Level,
			}
			if got != c.want {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
			if r.Name != mm.Name || r.Node != mm.Node {
				t.Errorf("name %q node %q, want %q %q", r.Name, r.Node, mm.Name, mm.Node)
			}
			// The dashboard's measuring helpers say what the row says.
			if HolderCell(&mm) != r.Holder.Cell() || MarksText(&mm) != r.Marks.Short() {
				t.Errorf("HolderCell %q, MarksText %q disagree with the row", HolderCell(&mm), MarksText(&mm))
			}
		})
	}
}

// TestMemberRowSanitises: no cell of a row holds an escape sequence or a
// control or format character from the cluster's text.
func TestMemberRowSanitises(t *testing.T) {
	mm := claimed(hostile, time.Minute, time.Hour)
	mm.Name, mm.Node = "desk-1"+hostile, "node"+hostile
	r := MemberRow(&mm, now)
	for name, cell := range map[string]string{
		"name": r.Name, "node": r.Node, "holder cell": r.Holder.Cell(), "holder plain": r.Holder.Plain(),
		"search": SearchText(&mm),
	} {
		if i := strings.IndexFunc(cell, unsafeRune); i >= 0 {
			t.Errorf("%s %q holds %U", name, cell, []rune(cell[i:])[0])
		}
		if strings.Contains(cell, "52;") || strings.Contains(cell, "[31m") || strings.Contains(cell, "ZXZpbA") {
			t.Errorf("%s %q keeps an escape sequence's text", name, cell)
		}
	}
}

func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// TestSearchText: a filter finds a member by its name, state, holder, node,
// message, marks, problems and claim words, in any case.
func TestSearchText(t *testing.T) {
	cases := []struct {
		name string
		mm   func() engine.Member
		want string
	}{
		{"free", func() engine.Member {
			return engine.Member{Name: "Desk-4", State: engine.StateReady, Free: true, Node: "Node-B"}
		}, "desk-4 ready  node-b   free"},
		{"claimed and expired", func() engine.Member {
			m := claimed("Alice@Example.com", time.Hour, -time.Minute)
			return m
		}, "desk-1 ready alice@example.com node-a   expired claimed"},
		{"unschedulable with problems and marks", func() engine.Member {
			return engine.Member{Name: "desk-5", State: engine.StateUnschedulable, Message: "0/4 nodes are available: Insufficient CPU.",
				Drift: true, Problems: []string{"Spec Mismatch"}}
		}, "desk-5 unschedulable   0/4 nodes are available: insufficient cpu. ⟳ drift ! 1 problem spec mismatch"},
		{"maintenance", func() engine.Member {
			return engine.Member{Name: "desk-2", State: engine.StateReady, Hold: &engine.Hold{Maintenance: true}}
		}, "desk-2 ready    ⚙ maint"},
		{"hostile holder", func() engine.Member {
			return claimed(hostile, time.Hour, time.Hour)
		}, "desk-1 ready mal lory@evil.com node-a   claimed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mm := c.mm()
			if got := SearchText(&mm); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestReason: the MESSAGE cell is the diagnosis, else the cluster's
// message, else the problems.
func TestReason(t *testing.T) {
	cases := []struct {
		name string
		mm   engine.Member
		want string
	}{
		{"diagnosis", engine.Member{Name: "desk-1", State: engine.StateMissing}, "not created yet"},
		{"message", engine.Member{Name: "desk-1", State: engine.StateReady, Message: "the cluster's words"}, "the cluster's words"},
		{"problems", engine.Member{Name: "desk-1", State: engine.StateReady, Problems: []string{"a", "b"}}, "a; b"},
		{"nothing to say", engine.Member{Name: "desk-1", State: engine.StateReady}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Reason(nil, &c.mm, nil); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestOnceTableUsesMemberRow: the --once table's HOLDER and MARKS are the
// member row's (Holder.Plain, Marks.Long), so that it says what the
// dashboard says; the JSON document keeps the claim's holder alone.
func TestOnceTableUsesMemberRow(t *testing.T) {
	members := []engine.Member{
		{Name: "desk-1", State: engine.StateReady, Hold: &engine.Hold{Claim: engine.Claim{Stale: true}, Maintenance: true}, AboveSize: true},
		{Name: "desk-2", State: engine.StateReady, Blocked: "pod desk-2 exists", Drift: true},
		claimed("alice"+hostile, time.Hour, time.Hour),
	}
	members[2].Name = "desk-3"
	views := []engine.PoolView{{Name: "desk", Defined: true, Members: members}}
	var b bytes.Buffer
	RenderOnce(&b, views, OnceOptions{Namespace: "vdi", Now: now})
	out := b.String()
	for i := range members {
		r := MemberRow(&members[i], now)
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "  "+r.Name+" ") {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("no row for %s in:\n%s", r.Name, out)
		}
		for _, cell := range []string{r.Holder.Plain(), r.Marks.Long()} {
			if !strings.Contains(line, cell) {
				t.Errorf("%s: %q lacks the row's %q", r.Name, line, cell)
			}
		}
	}
	for _, w := range []string{"reconciler", "stale maintenance,above size", "drift,blocked", "alicemal lory@evil.com"} {
		if !strings.Contains(out, w) {
			t.Errorf("the table lacks %q:\n%s", w, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.IndexFunc(l, unsafeRune) >= 0 {
			t.Errorf("the table holds a control character: %q", l)
		}
	}
	r, _ := Report(views, OnceOptions{Namespace: "vdi", Now: now})
	if got := r.Pools[0].Members[0].Holder; got != "" {
		t.Errorf("JSON holder of a member under maintenance = %q, want none (no claim)", got)
	}
	if got := r.Pools[0].Members[2].Holder; got != "alicemal lory@evil.com" {
		t.Errorf("JSON holder = %q", got)
	}
}

// TestRetryOf: a failing member's backoff reads "retry in 4m" in its row
// and in the --once JSON, "retry due" once it ended, and nothing for a
// member that is not failing or is claimed.
func TestRetryOf(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	b := &engine.Backoff{Failures: 3, RetryAt: now.Add(4 * time.Minute)}
	cases := []struct {
		name string
		mm   engine.Member
		want string
	}{
		{"failing", engine.Member{Name: "desk-1", State: engine.StateFailed, Backoff: b}, "retry in 4m"},
		{"due", engine.Member{Name: "desk-1", State: engine.StateFailed, Backoff: &engine.Backoff{Failures: 1, RetryAt: now}}, "retry due"},
		{"starting after a replacement", engine.Member{Name: "desk-1", State: engine.StateStarting, Backoff: b}, ""},
		{"claimed", engine.Member{Name: "desk-1", State: engine.StateFailed, Backoff: b, Claimed: true, Claim: &engine.Claim{Holder: "a"}}, ""},
		{"no backoff", engine.Member{Name: "desk-1", State: engine.StateFailed}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MemberRow(&c.mm, now).Retry; got != c.want {
				t.Errorf("Retry = %q, want %q", got, c.want)
			}
			om := onceMember(&c.mm, now)
			if (om.Backoff != nil) != (c.want != "") || om.Backoff != nil && (om.Backoff.Retry != c.want || om.Backoff.Failures != c.mm.Backoff.Failures) {
				t.Errorf("JSON backoff %+v, want %q", om.Backoff, c.want)
			}
		})
	}
}
