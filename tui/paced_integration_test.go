//go:build integration

package tui

import (
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/kube"
)

// paced drives a Model on a real Watcher at the program's pace, without a
// terminal or a Program: each step is one tick (its health read runs) and
// a data load when the watcher signalled.
type paced struct {
	m       *Model
	watcher *kube.Watcher
	pace    time.Duration // between the steps of until
	quit    bool          // the model returned tea.Quit
}

// newPaced runs m's Init and returns its driver.
func newPaced(m *Model, watcher *kube.Watcher, pace time.Duration) *paced {
	return &paced{m: m, watcher: watcher, pace: pace, quit: pump(m, m.Init(), time.Second, 1)}
}

// step is one second of the program.
func (p *paced) step() {
	_, cmd := p.m.Update(tickMsg(time.Now()))
	p.quit = pump(p.m, cmd, 200*time.Millisecond, 0) || p.quit
	select {
	case <-p.watcher.Changed():
		load(p.m, p.watcher)
	default:
	}
}

// until steps until cond holds on the view and returns how long that took;
// past timeout the test fails with the screen and the watcher's last error.
func (p *paced) until(t *testing.T, what string, timeout time.Duration, cond func(view string) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		p.step()
		v := p.m.View()
		if cond(v) {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			at, werr := p.watcher.LastWatchError()
			t.Fatalf("no %s within %s (last watch error at %s: %v); screen:\n%s", what, timeout, at, werr, v)
		}
		time.Sleep(p.pace) // the program's pace, not a wait for a condition
	}
}
