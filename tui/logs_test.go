package tui

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
)

// fakeLogs serves canned text and records the contexts it was asked with.
type fakeLogs struct {
	mu       sync.Mutex
	text     string
	err      error
	ctxs     []context.Context
	previous []bool
}

func (f *fakeLogs) Stream(ctx context.Context, _, pod string, previous bool) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctxs = append(f.ctxs, ctx)
	f.previous = append(f.previous, previous)
	if f.err != nil {
		return nil, f.err
	}
	return io.NopCloser(strings.NewReader(f.text)), nil
}

func numbered(n int, f func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(f(i) + "\n")
	}
	return b.String()
}

func deskLog(i int) string {
	switch {
	case i%7 == 3:
		return fmt.Sprintf("2026-03-02T14:%02d:00Z ERROR session %d: xrdp channel closed", i%60, i)
	case i == 20:
		return "2026-03-02T14:20:00Z INFO a long line " + strings.Repeat("abcdefghij ", 14) + "end"
	}
	return fmt.Sprintf("2026-03-02T14:%02d:00Z INFO heartbeat %d ok", i%60, i)
}

// logsModelFor opens desk's third member and streams text to the end.
func logsModelFor(t *testing.T, width, height int, text string) (*Model, *fakeLogs) {
	t.Helper()
	m, _ := newTestModel(t, fixture.Demo(), testOpts{width: width, height: height, actions: &fakeActions{}})
	src := &fakeLogs{text: text}
	wire(m).logs = src
	press(m, "down", "enter", "down", "down")
	cmd := press(m, "l")
	if m.screen != screenLogs {
		t.Fatalf("l did not open the logs (note %q)", m.acts.note)
	}
	drainLogs(t, m, cmd)
	return m, src
}

// drainLogs runs the stream's Cmds until the stream ends.
func drainLogs(t *testing.T, m *Model, cmd tea.Cmd) {
	t.Helper()
	for i := 0; cmd != nil; i++ {
		if i > 10000 {
			t.Fatal("the log stream never ended")
		}
		_, cmd = m.Update(cmd())
	}
}

func TestGoldenLogs(t *testing.T) {
	text := numbered(60, deskLog)
	tests := []struct {
		name          string
		width, height int
		keys          []string
	}{
		{name: "logs_follow_120x40", width: 120, height: 40},
		{name: "logs_nowrap_80x24", width: 80, height: 24, keys: []string{"w", "g", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down"}},
		{name: "logs_wrap_80x24", width: 80, height: 24, keys: []string{"g", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down", "down"}},
		{name: "logs_search_120x40", width: 120, height: 40, keys: []string{"/", "e", "r", "r", "o", "r", "enter", "N"}},
		{name: "logs_search_typing_80x24", width: 80, height: 24, keys: []string{"/", "x", "r", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := logsModelFor(t, tt.width, tt.height, text)
			press(m, tt.keys...)
			got := m.View()
			checkScreen(t, got, tt.width, tt.height)
			golden(t, tt.name, got)
		})
	}
}

func TestLogsBoundedBufferDropsOldest(t *testing.T) {
	m, _ := logsModelFor(t, 80, 24, numbered(logMaxLines+25, func(i int) string { return fmt.Sprintf("line %d", i) }))
	l := &m.logs
	if l.buf.n != logMaxLines || l.buf.dropped != 25 || l.buf.at(l.buf.first) != "line 25" {
		t.Fatalf("n %d dropped %d oldest %q, want %d, 25, line 25", l.buf.n, l.buf.dropped, l.buf.at(l.buf.first), logMaxLines)
	}
	press(m, "g")
	got := m.View()
	checkScreen(t, got, 80, 24)
	golden(t, "logs_bounded_top_80x24", got)

	// The byte bound holds as well: 1 KiB lines stop at 2 MiB, also after
	// a full buffer of short lines (each long line then drops several).
	big := strings.Repeat("x", 1024)
	for _, tc := range []struct {
		name        string
		short, long int
		wantLines   int
	}{
		{"only long lines", 0, 3000, logMaxBytes / 1024},
		{"long lines after a full buffer of short ones", logMaxLines, 3000, logMaxBytes / 1024},
		{"a few long lines after short ones", logMaxLines, 100, logMaxLines},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r logRing
			dropped := 0
			for i := range tc.short {
				r.push(fmt.Sprintf("s%d", i), func(string) { dropped++ })
			}
			for range tc.long {
				r.push(big, func(string) { dropped++ })
			}
			total := 0
			for seq := r.first; seq < r.end(); seq++ {
				total += len(r.at(seq))
			}
			if r.bytes > logMaxBytes || total != r.bytes || r.n != tc.wantLines || r.at(r.end()-1) != big ||
				dropped != r.dropped || r.dropped != tc.short+tc.long-r.n {
				t.Errorf("bytes %d (counted %d), lines %d, dropped %d (told %d); want at most %d bytes, %d lines",
					r.bytes, total, r.n, r.dropped, dropped, logMaxBytes, tc.wantLines)
			}
		})
	}
}

func TestLogsSanitizedAndLongLinesCut(t *testing.T) {
	m, _ := logsModelFor(t, 80, 24, "evil \x1b[31mred\x1b[0m \x1b]8;;https://x\x1b\\link\n"+strings.Repeat("y", logLineMax+500)+"\nlast")
	l := &m.logs
	if l.buf.n != 3 || strings.ContainsRune(l.buf.at(0), 0x1b) || len(l.buf.at(1)) != logLineMax || l.buf.at(2) != "last" {
		t.Fatalf("lines %d: %q / %d bytes / %q", l.buf.n, l.buf.at(0), len(l.buf.at(1)), l.buf.at(2))
	}
	checkScreen(t, m.View(), 80, 24)
}

func TestLogsSearchNavigation(t *testing.T) {
	m, _ := logsModelFor(t, 120, 40, numbered(60, deskLog))
	press(m, "/")
	typeText(m, "ERROR")
	press(m, "enter")
	l := &m.logs
	if l.matches != 9 || l.ordinal() != 9 || l.follow {
		t.Fatalf("matches %d ordinal %d follow %v, want 9, the newest (9), paused", l.matches, l.ordinal(), l.follow)
	}
	press(m, "N", "N")
	if l.ordinal() != 7 {
		t.Errorf("N N: ordinal %d, want 7", l.ordinal())
	}
	press(m, "n")
	if l.ordinal() != 8 {
		t.Errorf("n: ordinal %d, want 8", l.ordinal())
	}
	press(m, "esc")
	if l.query != "" || m.screen != screenLogs {
		t.Errorf("esc: query %q screen %v, want the search cleared and the view kept", l.query, m.screen)
	}
	press(m, "G")
	if !l.follow {
		t.Error("G did not resume following")
	}
	// Typed fast, "/" and the text arrive in one message.
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/heartbeat")})
	press(m, "enter")
	if l.query != "heartbeat" || l.matches != 50 {
		t.Errorf("fast-typed search: query %q, %d matches", l.query, l.matches)
	}
}

func TestLogsHighlightStylesMatches(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI)
	m, _ := newTestModel(t, fixture.Demo(), testOpts{})
	st := m.st
	st.Selected = r.NewStyle().Reverse(true)
	got := highlight(&st, "an Error and an ERROR", "error")
	if want := "an \x1b[7mError\x1b[0m and an \x1b[7mERROR\x1b[0m"; got != want {
		t.Errorf("highlight = %q, want %q", got, want)
	}
}

func TestLogsLeaveCancelsStreamAndKeepsSelection(t *testing.T) {
	m, src := logsModelFor(t, 120, 40, "a\nb\n")
	sel := m.members.selected
	press(m, "esc")
	if m.screen != screenMembers || m.members.selected != sel {
		t.Fatalf("esc: screen %v selected %q, want the members view on %q", m.screen, m.members.selected, sel)
	}
	if src.ctxs[0].Err() == nil {
		t.Error("leaving the logs did not cancel the stream")
	}
	// A late message of the old stream is dropped.
	if _, cmd := m.Update(logLinesMsg{gen: m.logs.gen - 1, lines: []string{"late"}}); cmd != nil || m.logs.buf.n != 2 {
		t.Errorf("late lines: cmd %v, %d lines", cmd, m.logs.buf.n)
	}
}

func TestLogsPreviousRestartsStream(t *testing.T) {
	m, src := logsModelFor(t, 120, 40, "current\n")
	cmd := press(m, "p")
	drainLogs(t, m, cmd)
	if len(src.previous) != 2 || !src.previous[1] || !m.logs.previous || src.ctxs[0].Err() == nil {
		t.Fatalf("previous requests %v, view previous %v", src.previous, m.logs.previous)
	}
	if !strings.Contains(m.View(), "previous container") {
		t.Error("the title does not say previous container")
	}
}

func TestLogsStreamErrorShown(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
	wire(m).logs = &fakeLogs{err: fmt.Errorf("needs get pods/log: forbidden")}
	press(m, "down", "enter")
	drainLogs(t, m, press(m, "l"))
	if !strings.Contains(m.View(), "needs get pods/log") {
		t.Error("the stream error is not shown")
	}
}

// The reader goroutine delivers lines as they come and one burst costs one
// message.
func TestLogsFollowStreamsIncrementally(t *testing.T) {
	pr, pw := io.Pipe()
	ch := make(chan logEvent, logBatch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go readLog(ctx, pr, ch)
	fmt.Fprint(pw, "one\ntwo\n")
	msg := waitLogCmd(1, ch)().(logLinesMsg)
	for len(msg.lines) < 2 {
		more := waitLogCmd(1, ch)().(logLinesMsg)
		msg.lines = append(msg.lines, more.lines...)
	}
	if strings.Join(msg.lines, ",") != "one,two" || msg.end {
		t.Fatalf("first message %+v", msg)
	}
	fmt.Fprint(pw, "three\n")
	if msg := waitLogCmd(1, ch)().(logLinesMsg); strings.Join(msg.lines, ",") != "three" {
		t.Fatalf("second message %+v", msg)
	}
	cancel()
	// A wait may answer an empty batch while the reader sees the
	// cancellation (seen in CI); the end follows it.
	msg = waitLogCmd(1, ch)().(logLinesMsg)
	for i := 0; i < 3 && !msg.end && len(msg.lines) == 0 && msg.err == nil; i++ {
		msg = waitLogCmd(1, ch)().(logLinesMsg)
	}
	if !msg.end || msg.err != nil {
		t.Fatalf("after cancel: %+v, want a clean end", msg)
	}
}
