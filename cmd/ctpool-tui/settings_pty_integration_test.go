//go:build integration && linux

package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyRun is the binary on a pseudo-terminal: its raw output so far.
type ptyRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	ptmx *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startPTY(t *testing.T, bin string, env []string, args ...string) *ptyRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Cols: 120, Rows: 40}); err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	r := &ptyRun{t: t, cmd: cmd, ptmx: ptmx, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		ptmx.Close()
		<-r.done
	})
	return r
}

// waitFor waits until the output holds s, and returns the output.
func (r *ptyRun) waitFor(s string, timeout time.Duration) string {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		out := r.out.String()
		r.mu.Unlock()
		if strings.Contains(out, s) {
			return out
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no %q within %s; output:\n%q", s, timeout, out[max(0, len(out)-2000):])
		}
		select {
		case <-r.done:
			r.t.Fatalf("the program ended before %q; output:\n%q", s, out[max(0, len(out)-2000):])
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Under tmux (TERM=tmux-256color) the terminal's background cannot be
// asked: the adaptive theme reads it from COLORFGBG, so a light terminal
// gets the light colours; an explicit theme is fixed whatever COLORFGBG
// says. y writes the pool's --once line as OSC 52.
func TestPTYTmuxThemeAndClipboard(t *testing.T) {
	dir, bin := t.TempDir(), filepath.Join(t.TempDir(), "ctpool-tui")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The app name in the header is drawn in the accent colour: the light
	// theme's #005f87, the dark theme's #af87ff.
	const light, dark = "38;2;0;95;135", "38;2;175;135;255"
	for _, tc := range []struct {
		name      string
		colorfgbg string
		args      []string
		want      string
	}{
		{"tmux, light terminal", "0;15", nil, light},
		{"tmux, dark terminal", "15;0", nil, dark},
		{"tmux, no COLORFGBG", "", nil, dark},
		{"--theme light on a dark terminal", "15;0", []string{"--theme", "light"}, light},
		{"--theme dark on a light terminal", "0;15", []string{"--theme", "dark"}, dark},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"TERM=tmux-256color", "TMUX=/tmp/tmux-1000/default,1,0", "COLORTERM=truecolor", "LANG=C.UTF-8",
				"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "PATH=" + os.Getenv("PATH")}
			if tc.colorfgbg != "" {
				env = append(env, "COLORFGBG="+tc.colorfgbg)
			}
			r := startPTY(t, bin, env, append([]string{"--demo"}, tc.args...)...)
			out := r.waitFor("DEMO", 30*time.Second)
			other := map[string]string{light: dark, dark: light}[tc.want]
			if !strings.Contains(out, tc.want) || strings.Contains(out, other) {
				t.Errorf("accent: has %s %v, has %s %v; want the first only", tc.want, strings.Contains(out, tc.want), other, strings.Contains(out, other))
			}
			if tc.name != "tmux, light terminal" {
				return
			}
			r.waitFor("kiosk", 30*time.Second) // the pools are in: one is selected
			if _, err := r.ptmx.Write([]byte("y")); err != nil {
				t.Fatal(err)
			}
			out = r.waitFor("\x1b]52;c;", 10*time.Second)
			seq := out[strings.Index(out, "\x1b]52;c;")+len("\x1b]52;c;"):]
			seq = seq[:strings.IndexByte(seq, '\a')]
			text, err := base64.StdEncoding.DecodeString(seq)
			if err != nil || !strings.HasPrefix(string(text), "ctpool-tui --once --pool ") || !strings.HasSuffix(string(text), " --demo") {
				t.Errorf("OSC 52 carries %q (%v)", text, err)
			}
			if _, err := r.ptmx.Write([]byte("q")); err != nil {
				t.Fatal(err)
			}
			select {
			case <-r.done:
			case <-time.After(10 * time.Second):
				t.Error("q did not end the dashboard")
			}
		})
	}
}
