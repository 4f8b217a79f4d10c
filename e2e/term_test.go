//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// binary is the ctpool-tui binary TestMain builds once per run.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ctpool-tui-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "ctpool-tui")
	args := []string{"build", "-o", binary}
	if raceBuild {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/ctpool-tui/ctpool-tui/cmd/ctpool-tui")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building ctpool-tui:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// Deadlines of the waits: the first frame (the binary connects, syncs its
// informers and asks the terminal for its background), a reaction to a key,
// the end of the process.
const (
	startTimeout = 30 * time.Second
	keyTimeout   = 15 * time.Second
	exitTimeout  = 15 * time.Second
)

// terminal is the binary running in a pseudo-terminal, its output read by a
// terminal emulator, as one test (or subtest) drives it: its failures go to t.
type terminal struct {
	t *testing.T
	*session
}

// session is the running program and its terminal. The test holds the
// terminal side (tty) open too, to read its modes after the process has
// exited.
type session struct {
	cmd  *exec.Cmd
	ptmx *os.File // the emulator's side
	tty  *os.File // the program's side

	mu  sync.Mutex
	emu *vt.Emulator
	raw bytes.Buffer // every byte the program wrote

	outDone chan struct{} // the output reader ended
	exited  chan struct{} // the process ended; waitErr is set
	waitErr error
}

// with returns the same terminal driven by t (a subtest).
func (term *terminal) with(t *testing.T) *terminal { return &terminal{t: t, session: term.session} }

// start runs the binary with args in a cols×rows terminal. env replaces the
// variables it names (NAME=VALUE) in the test's environment; TERM, COLORTERM,
// NO_COLOR and CI are dropped unless env sets them (termenv takes CI for a
// log, not a terminal, and writes no colour there).
func start(t *testing.T, cols, rows int, env []string, args ...string) *terminal {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		_ = ptmx.Close()
		_ = tty.Close()
		t.Fatalf("size the pseudo-terminal: %v", err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = childEnv(env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// Its own session with the pty as controlling terminal: SIGWINCH reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	term := &terminal{t: t, session: &session{cmd: cmd, ptmx: ptmx, tty: tty, emu: vt.NewEmulator(cols, rows),
		outDone: make(chan struct{}), exited: make(chan struct{})}}
	if err := cmd.Start(); err != nil {
		_ = ptmx.Close()
		_ = tty.Close()
		t.Fatalf("start %s: %v", binary, err)
	}
	go term.readOutput()
	go term.answerQueries()
	go func() {
		term.waitErr = cmd.Wait()
		close(term.exited)
	}()
	t.Cleanup(term.close)
	return term
}

func childEnv(set []string) []string {
	drop := map[string]bool{"CI": true, "TERM": true, "COLORTERM": true, "NO_COLOR": true, "CLICOLOR": true, "CLICOLOR_FORCE": true}
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		drop[name] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[name] {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// readOutput feeds the program's output to the emulator until the terminal
// side is closed (EIO on Linux).
func (term *terminal) readOutput() {
	defer close(term.outDone)
	buf := make([]byte, 32*1024)
	for {
		n, err := term.ptmx.Read(buf)
		if n > 0 {
			term.mu.Lock()
			term.raw.Write(buf[:n])
			_, _ = term.emu.Write(buf[:n])
			term.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// answerQueries sends the emulator's replies (the background colour, the
// cursor position) to the program, as a terminal does.
func (term *terminal) answerQueries() {
	_, _ = io.Copy(term.ptmx, term.emu)
}

func (term *terminal) close() {
	select {
	case <-term.exited:
	default:
		_ = term.cmd.Process.Kill()
		<-term.exited
	}
	_ = term.tty.Close()
	<-term.outDone
	// Ends answerQueries (Emulator.Close would race with its Read).
	_ = term.emu.InputPipe().(*io.PipeWriter).Close()
	_ = term.ptmx.Close()
}

// syncKeys waits until the program has handled every key sent before: it
// opens the help overlay (?) and closes it again, and fails the test when a
// dialog is open instead.
func (term *terminal) syncKeys(after string) {
	term.t.Helper()
	// NUL (ctrl+@, bound to nothing) ends a run of printable keys, which
	// bubbletea would otherwise take for one key.
	term.send("\x00?")
	rows := term.waitScreen("the help overlay after the keys on "+after, keyTimeout, func(rows []string) bool {
		return rowWith(rows, "[ Cancel ]") >= 0 || rowWith(rows, "page up") >= 0
	})
	if i := rowWith(rows, "[ Cancel ]"); i >= 0 {
		term.t.Fatalf("a dialog opened on %s:\n%s", after, dump(rows))
	}
	term.send("?")
	term.waitScreen("the help overlay closed", keyTimeout, func(rows []string) bool { return rowWith(rows, "page up") < 0 })
}

// send types keys: text as is, "\r" for enter, "\t" for tab.
func (term *terminal) send(keys string) {
	term.t.Helper()
	if _, err := term.ptmx.Write([]byte(keys)); err != nil {
		term.t.Fatalf("send %q: %v", keys, err)
	}
}

// screen is the emulator's screen as text, one string a row, without
// trailing blanks.
func (term *terminal) screen() []string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.screenLocked()
}

func (term *terminal) screenLocked() []string {
	w, h := term.emu.Width(), term.emu.Height()
	rows := make([]string, h)
	var b strings.Builder
	for y := range h {
		b.Reset()
		for x := 0; x < w; {
			c := term.emu.CellAt(x, y)
			if c == nil || c.Content == "" {
				b.WriteByte(' ')
				x++
				continue
			}
			b.WriteString(c.Content)
			x += max(c.Width, 1)
		}
		rows[y] = strings.TrimRight(b.String(), " ")
	}
	return rows
}

// rawLen is how many bytes the program has written so far.
func (term *terminal) rawLen() int {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.raw.Len()
}

// rawSince returns the bytes written after the first from.
func (term *terminal) rawSince(from int) []byte {
	term.mu.Lock()
	defer term.mu.Unlock()
	return bytes.Clone(term.raw.Bytes()[from:])
}

// altScreen reports whether the emulator shows the alternate screen.
func (term *terminal) altScreen() bool {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.emu.IsAltScreen()
}

// cursorHidden reports whether the emulator's cursor is hidden.
func (term *terminal) cursorHidden() bool {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.emu.CursorHidden()
}

// resize sizes the terminal (the kernel sends the program SIGWINCH) and the
// emulator alike.
func (term *terminal) resize(cols, rows int) {
	term.t.Helper()
	term.mu.Lock()
	term.emu.Resize(cols, rows)
	term.mu.Unlock()
	if err := pty.Setsize(term.ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		term.t.Fatalf("resize the pseudo-terminal: %v", err)
	}
}

// waitScreen polls the screen until ok accepts it, and fails the test with
// the last screen when timeout passes first or the program ends.
func (term *terminal) waitScreen(what string, timeout time.Duration, ok func(rows []string) bool) []string {
	term.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		rows := term.screen()
		if ok(rows) {
			return rows
		}
		select {
		case <-term.exited:
			// Let the reader take the last output, then look once more.
			_ = term.tty.Close()
			<-term.outDone
			if rows = term.screen(); ok(rows) {
				return rows
			}
			term.t.Fatalf("the program ended (%v) while waiting for %s; screen:\n%s", term.waitErr, what, dump(rows))
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("timed out after %v waiting for %s; screen:\n%s", timeout, what, dump(rows))
		}
	}
}

// waitText waits for every one of texts on the screen.
func (term *terminal) waitText(timeout time.Duration, texts ...string) []string {
	term.t.Helper()
	return term.waitScreen(fmt.Sprintf("%q on the screen", texts), timeout, func(rows []string) bool {
		return containsAll(strings.Join(rows, "\n"), texts...)
	})
}

// wait waits for the process to end and returns its error.
func (term *terminal) wait(timeout time.Duration) error {
	term.t.Helper()
	select {
	case <-term.exited:
		return term.waitErr
	case <-time.After(timeout):
		term.t.Fatalf("the program did not end within %v; screen:\n%s", timeout, dump(term.screen()))
		return nil
	}
}

// echo reports whether the terminal echoes input (the ECHO flag of its modes).
func (term *terminal) echo() bool {
	term.t.Helper()
	tio, err := unix.IoctlGetTermios(int(term.tty.Fd()), unix.TCGETS)
	if err != nil {
		term.t.Fatalf("read the terminal's modes: %v", err)
	}
	return tio.Lflag&unix.ECHO != 0
}

// finish closes the terminal side after the process ended and waits for the
// reader to take the last output.
func (term *terminal) finish() {
	_ = term.tty.Close()
	<-term.outDone
}

func containsAll(s string, texts ...string) bool {
	for _, want := range texts {
		if !strings.Contains(s, want) {
			return false
		}
	}
	return true
}

func size(cols, rows int) string { return fmt.Sprintf("%d×%d", cols, rows) }

func displayWidth(s string) int { return ansi.StringWidth(s) }

func dump(rows []string) string {
	var b strings.Builder
	for i, r := range rows {
		fmt.Fprintf(&b, "%3d|%s\n", i, r)
	}
	return b.String()
}

// exitCode is the exit status carried by err (0 for nil, -1 when unknown).
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}
