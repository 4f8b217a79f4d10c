package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// progressEvery is how often the progress line is drawn at most.
const progressEvery = 100 * time.Millisecond

// progressLine draws an operation's progress on one line of a terminal,
// rewritten in place ("\r"), at most every progressEvery, and wipes it at
// the end so that the command's output starts on a clean line.
type progressLine struct {
	w     io.Writer
	now   func() time.Time
	width int // of the terminal; 0 when unknown
	mu    sync.Mutex
	p     engine.Progress
	have  bool
	drawn time.Time
	shown int // the length of the line on screen
}

// update takes the engine's report and draws it unless a line was drawn
// less than progressEvery ago.
func (l *progressLine) update(p engine.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p, l.have = p, true
	l.drawLocked(false)
}

// tick draws the last report again (its wait has grown older).
func (l *progressLine) tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drawLocked(false)
}

// wipe clears the line.
func (l *progressLine) wipe() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown > 0 {
		fmt.Fprint(l.w, "\r"+strings.Repeat(" ", l.shown)+"\r")
		l.shown = 0
	}
	l.have = false
}

func (l *progressLine) drawLocked(force bool) {
	now := l.now()
	if !l.have || (!force && !l.drawn.IsZero() && now.Sub(l.drawn) < progressEvery) {
		return
	}
	text := progressText(l.p, now)
	if l.width > 1 {
		if r := []rune(text); len(r) > l.width-1 {
			text = string(r[:l.width-2]) + "…"
		}
	}
	n := len([]rune(text))
	pad := ""
	if l.shown > n {
		pad = strings.Repeat(" ", l.shown-n)
	}
	fmt.Fprint(l.w, "\r"+text+pad)
	l.shown, l.drawn = n, now
}

// progressText is the line: "delete big: 8,000/10,000 members · slowest wait
// Pod big-17, 34s", or "waiting for Pod desk-1 to go, 12s" outside a step.
func progressText(p engine.Progress, now time.Time) string {
	var parts []string
	if p.Step != 0 {
		parts = append(parts, fmt.Sprintf("%s %s: %s/%s members", p.Step, oneLine(p.Pool), count(p.Done), count(p.Total)))
	}
	if p.Wait.Kind != "" {
		took := max(now.Sub(p.Wait.Since), 0).Round(time.Second)
		if p.Step != 0 {
			parts = append(parts, fmt.Sprintf("slowest wait %s %s, %s", p.Wait.Kind, oneLine(p.Wait.Name), took))
		} else {
			parts = append(parts, fmt.Sprintf("waiting for %s %s to go, %s", p.Wait.Kind, oneLine(p.Wait.Name), took))
		}
	}
	return strings.Join(parts, " · ")
}

// count writes n with commas between thousands.
func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ttyWriter is a writer that tells whether it is a terminal (one a test
// makes).
type ttyWriter interface {
	io.Writer
	IsTerminal() bool
}

func writerIsTerminal(w io.Writer) bool {
	if t, ok := w.(ttyWriter); ok {
		return t.IsTerminal()
	}
	return isTerminal(w)
}

// showProgress makes eng report its progress on e.stderr when that is a
// terminal (nothing otherwise); call the function returned, before the
// command prints its result, to stop and wipe the line.
func (e *env) showProgress(eng *engine.Engine) (stop func()) {
	if !writerIsTerminal(e.stderr) {
		return func() {}
	}
	l := &progressLine{w: e.stderr, now: time.Now}
	if f, ok := e.stderr.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			l.width = w
		}
	}
	eng.Progress = l.update
	done := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				l.tick()
			}
		}
	}()
	return func() {
		close(done)
		<-ticked
		eng.Progress = nil
		l.wipe()
	}
}
