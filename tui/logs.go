package tui

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// Bounds of the log view: the oldest lines go first.
const (
	logMaxLines = 5000
	logMaxBytes = 2 << 20
	logLineMax  = 16 << 10 // a longer line is cut
	logBatch    = 1000     // lines taken from the stream per message
)

// logEvent is one line from the reader goroutine, or its end (err set;
// io.EOF for a clean end).
type logEvent struct {
	line string
	err  error
}

// logOpenedMsg: the stream is open; its lines arrive on ch.
type logOpenedMsg struct {
	gen int
	ch  <-chan logEvent
}

// logLinesMsg carries the lines read since the last one.
type logLinesMsg struct {
	gen   int
	lines []string
	end   bool
	err   error
}

// logStreamCmd opens the log and starts the reader goroutine. ctx ends the
// stream (leaving the view cancels it).
func logStreamCmd(ctx context.Context, src LogSource, namespace, pod string, previous bool, gen int) tea.Cmd {
	return func() tea.Msg {
		rc, err := src.Stream(ctx, namespace, pod, previous)
		if err != nil {
			return logLinesMsg{gen: gen, end: true, err: err}
		}
		ch := make(chan logEvent, logBatch)
		go readLog(ctx, rc, ch)
		return logOpenedMsg{gen: gen, ch: ch}
	}
}

// readLog sends sanitised lines until the stream ends or ctx is cancelled.
func readLog(ctx context.Context, rc io.ReadCloser, ch chan<- logEvent) {
	defer close(ch)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		_ = rc.Close()
	}()
	send := func(ev logEvent) bool {
		select {
		case ch <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	r := bufio.NewReaderSize(rc, 64<<10)
	var line []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if len(line) < logLineMax {
			line = append(line, chunk[:min(len(chunk), logLineMax-len(line))]...)
		}
		if err != nil {
			if len(line) > 0 && !send(logEvent{line: sanitize.Sanitize(string(line))}) {
				return
			}
			if ctx.Err() != nil {
				err = nil // the view was left: not an error
			}
			send(logEvent{err: err})
			return
		}
		if isPrefix {
			continue
		}
		if !send(logEvent{line: sanitize.Sanitize(string(line))}) {
			return
		}
		line = line[:0]
	}
}

// waitLogCmd waits for the next line, then takes what else is ready (up to
// logBatch lines): a burst costs one message.
func waitLogCmd(gen int, ch <-chan logEvent) tea.Cmd {
	return func() tea.Msg {
		msg := logLinesMsg{gen: gen}
		take := func(ev logEvent, ok bool) bool {
			if !ok || ev.err != nil {
				msg.end = true
				if ev.err != nil && !errors.Is(ev.err, io.EOF) {
					msg.err = ev.err
				}
				return false
			}
			msg.lines = append(msg.lines, ev.line)
			return true
		}
		ev, ok := <-ch
		if !take(ev, ok) {
			return msg
		}
		for len(msg.lines) < logBatch {
			select {
			case ev, ok := <-ch:
				if !take(ev, ok) {
					return msg
				}
			default:
				return msg
			}
		}
		return msg
	}
}

// logRing holds the newest lines within logMaxLines and logMaxBytes. Lines
// are numbered by seq from the start of the stream.
type logRing struct {
	lines   []string
	start   int // index of the oldest line in lines
	n       int
	bytes   int
	first   int // seq of the oldest line
	dropped int
}

// push appends s, first dropping the oldest lines until both bounds hold
// with it (a long line after many short ones drops several); drop, when
// set, is told each dropped line.
func (r *logRing) push(s string, drop func(string)) {
	if r.lines == nil {
		r.lines = make([]string, logMaxLines)
	}
	for r.n > 0 && (r.n == len(r.lines) || r.bytes+len(s) > logMaxBytes) {
		old := r.lines[r.start]
		r.lines[r.start] = ""
		r.bytes -= len(old)
		r.start = (r.start + 1) % len(r.lines)
		r.n--
		r.first++
		r.dropped++
		if drop != nil {
			drop(old)
		}
	}
	r.lines[(r.start+r.n)%len(r.lines)] = s
	r.n++
	r.bytes += len(s)
}

// at returns the line of seq (which must be in [first, end)).
func (r *logRing) at(seq int) string { return r.lines[(r.start+seq-r.first)%len(r.lines)] }

// end is the seq after the newest line.
func (r *logRing) end() int { return r.first + r.n }

// logsView is the log view of one member (logs_view.go has its keys and
// its drawing). It keeps the source and the context it was opened with, to
// open the previous container's log on p.
type logsView struct {
	pool                   engine.PoolRef
	member, namespace      string
	back                   screen // where esc returns to
	gen                    int
	ctx                    context.Context
	src                    LogSource
	cancel                 context.CancelFunc
	ch                     <-chan logEvent
	buf                    logRing
	previous, wrap, follow bool
	top                    int // seq of the first line shown when not following
	streaming, ended       bool
	err                    error

	search    textinput.Model
	searching bool
	query     string // lower-case
	matches   int    // lines of buf that match query
	match     int    // seq of the current match (-1: none)
}

func newLogSearch(st themes.Styles) textinput.Model {
	ti := newInput(st, "text to find", 120)
	ti.Prompt = "/"
	return ti
}

// open shows a member's log and starts streaming it; wrapping stays as it
// was (on the first time).
func (l *logsView) open(ctx context.Context, src LogSource, st themes.Styles, pool engine.PoolRef, member, namespace string, back screen) tea.Cmd {
	l.stop()
	wrapOn := l.wrap || l.member == ""
	*l = logsView{pool: pool, member: member, namespace: namespace, back: back, ctx: ctx, src: src,
		gen: l.gen + 1, wrap: wrapOn, follow: true, match: -1, search: newLogSearch(st)}
	return l.start()
}

// start opens the stream of the current generation.
func (l *logsView) start() tea.Cmd {
	ctx, cancel := context.WithCancel(l.ctx)
	l.cancel, l.streaming, l.ended, l.err = cancel, true, false, nil
	return logStreamCmd(ctx, l.src, l.namespace, l.member, l.previous, l.gen)
}

// stop cancels the stream; messages of its generation are dropped.
func (l *logsView) stop() {
	if l.cancel != nil {
		l.cancel()
		l.cancel = nil
	}
	l.gen++
	l.streaming, l.ch = false, nil
}

// stream takes the stream's messages and re-arms the wait.
func (l *logsView) stream(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case logOpenedMsg:
		if msg.gen != l.gen {
			return nil
		}
		l.ch = msg.ch
		return waitLogCmd(msg.gen, msg.ch)
	case logLinesMsg:
		if msg.gen != l.gen {
			return nil
		}
		l.add(msg.lines)
		if msg.end {
			l.streaming, l.ended, l.err, l.ch = false, true, msg.err, nil
			return nil
		}
		return waitLogCmd(l.gen, l.ch)
	}
	return nil
}

func (l *logsView) add(lines []string) {
	var drop func(string)
	if l.query != "" {
		drop = func(old string) {
			if strings.Contains(strings.ToLower(old), l.query) {
				l.matches--
			}
		}
	}
	for _, s := range lines {
		l.buf.push(s, drop)
		if l.query != "" && strings.Contains(strings.ToLower(s), l.query) {
			l.matches++
		}
	}
	l.top = max(l.top, l.buf.first)
	if l.match >= 0 && l.match < l.buf.first {
		l.match = -1
	}
}
