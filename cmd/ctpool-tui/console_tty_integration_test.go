//go:build integration && linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/term"

	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// openPTY opens a pseudo-terminal: the test holds the master, the console
// gets the slave as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	if err := ioctl(m, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	var n uint32
	if err := ioctl(m, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatalf("the pty's number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty's slave: %v", err)
	}
	// The slave stays open: after the session the stdin copier of the exec
	// stream may still be in a cancelled read of it (os.File.Fd), which a
	// Close would race with. The master's Close ends the terminal.
	t.Cleanup(func() { _ = m.Close() })
	return m, s
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

func setSize(t *testing.T, f *os.File, rows, cols uint16) {
	t.Helper()
	ws := struct{ Row, Col, X, Y uint16 }{rows, cols, 0, 0}
	if err := ioctl(f, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		t.Fatalf("sizing the pty: %v", err)
	}
}

// ctpool-tui console on a terminal, end to end: the remote terminal (a pty
// kwok opens) starts at the local terminal's size and follows it when
// SIGWINCH says it changed; the local terminal is raw during the session
// and restored after it.
func TestIntegrationConsoleTTYSizeAndResize(t *testing.T) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	applyDesk(t, env, "tty", 1)
	env.ServeMember(t, "tty-1")
	consoleTTYResize(t, env, "tty", "tty-1")
}

// 2.5 on the real node: the same session through a real kubelet, whose
// container runtime opens the remote pty of the desktop container.
func TestIntegrationRealNodeConsoleTTYResize(t *testing.T) {
	env := realEnv(t)
	realPool(t, env, "rtty", kubetest.ImageDebian, 1)
	consoleTTYResize(t, env, "rtty", "rtty-1")
}

// consoleTTYResize runs `ctpool-tui console` on a local pty: the remote
// terminal starts at the pty's size, follows a resize signalled by SIGWINCH,
// and the pty is raw during the session and restored after it.
func consoleTTYResize(t *testing.T, env *kubetest.Env, pool, member string) {
	t.Helper()
	ns := env.Namespace
	master, slave := openPTY(t)
	setSize(t, slave, 40, 100)
	before, err := term.GetState(int(slave.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	var screen kubetest.SyncBuffer
	go func() { _, _ = io.Copy(&screen, master) }() // ends when the master closes

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-n", ns, "console", pool, member, "--", "sh", "-c",
			`stty size; while read l; do [ "$l" = q ] && exit 0; stty size; done`}, slave, slave, &errOut)
	}()
	defer func() {
		if t.Failed() {
			t.Logf("terminal: %q\nstderr: %q", screen.String(), errOut.String())
		}
	}()
	// The sizes and the keys travel on different streams, and the runtime (kwok or the kubelet) starts
	// the command beside the first size: press enter until the size shows.
	wait := func(want string) {
		t.Helper()
		env.WaitFor(t, 20*time.Second, "the remote terminal to say "+want, func() (bool, error) {
			select {
			case code := <-done:
				t.Fatalf("the console ended early with exit %d", code)
			default:
			}
			if _, err := master.WriteString("\r"); err != nil {
				return false, err
			}
			return strings.Contains(screen.String(), want), nil
		})
	}
	wait("40 100")
	if raw, err := term.GetState(int(slave.Fd())); err != nil || reflect.DeepEqual(raw, before) {
		t.Errorf("the local terminal is not in raw mode during the session (%v)", err)
	}
	setSize(t, slave, 50, 132)
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	wait("50 132")
	if _, err := master.WriteString("q\r"); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("the console exited %d after q", code)
		}
	case <-ctx.Done():
		t.Fatal("the console did not end after q")
	}
	after, err := term.GetState(int(slave.Fd()))
	if err != nil || !reflect.DeepEqual(after, before) {
		t.Errorf("the local terminal was not restored after the session (%v)", err)
	}
}
