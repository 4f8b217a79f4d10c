package tui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

type fakeConsole struct {
	namespace, pod string
	in             string
	err            error
}

func (f *fakeConsole) Console(_ context.Context, namespace, pod string, stdin io.Reader, stdout, _ io.Writer) error {
	f.namespace, f.pod = namespace, pod
	b, _ := io.ReadAll(stdin)
	f.in = string(b)
	fmt.Fprint(stdout, "$ ")
	return f.err
}

type exitErr struct{ code int }

func (e exitErr) Error() string   { return fmt.Sprintf("command terminated with exit code %d", e.code) }
func (e exitErr) ExitStatus() int { return e.code }

func TestConsoleHandsOverTheTerminalAndComesBack(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
	fc := &fakeConsole{err: exitErr{3}}
	wire(m).console = fc
	press(m, "down", "enter", "down", "down")
	sel := m.members.selected
	cmd := press(m, "c")
	if cmd == nil {
		t.Fatalf("c gave no Cmd (note %q)", m.acts.note)
	}
	if got := fmt.Sprintf("%T", cmd()); got != "tea.execMsg" {
		t.Fatalf("c: %s, want bubbletea's exec message", got)
	}
	// What bubbletea runs on the released terminal.
	p := &consoleProcess{ctx: context.Background(), runner: fc, namespace: ns, pod: sel}
	var _ tea.ExecCommand = p
	var out bytes.Buffer
	p.SetStdin(strings.NewReader("exit 3\n"))
	p.SetStdout(&out)
	p.SetStderr(io.Discard)
	err := p.Run()
	if fc.pod != sel || fc.namespace != ns || fc.in != "exit 3\n" || !strings.HasSuffix(out.String(), "exit it to return to the dashboard\r\n$ ") {
		t.Fatalf("session in %s/%s stdin %q stdout %q", fc.namespace, fc.pod, fc.in, out.String())
	}
	text, err := consoleResult(err)
	if err != nil || text != "session ended (exit 3)" {
		t.Fatalf("result %q %v", text, err)
	}
	id := m.acts.nextID
	m.Update(actionDoneMsg{id: id, req: m.acts.running[id], text: text})
	if m.screen != screenMembers || m.members.selected != sel || len(m.acts.running) != 0 {
		t.Fatalf("after the shell: screen %v selected %q running %d", m.screen, m.members.selected, len(m.acts.running))
	}
	if s := status(m); !strings.Contains(s, "console "+sel+": session ended (exit 3)") {
		t.Errorf("status %q", s)
	}
	if _, err := consoleResult(errors.New("needs create pods/exec: forbidden")); err == nil {
		t.Error("a refused exec is not an error")
	}
}

func TestConsoleAndLogsUnavailableForSandboxd(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
	wire(m).console = &fakeConsole{}
	wire(m).logs = &fakeLogs{}
	press(m, "down", "down", "down", "enter")
	if m.title(m.members.pool) != "gpu" {
		t.Fatalf("opened %q, want gpu", m.members.pool)
	}
	if h := helpLine(m); !strings.Contains(h, "console "+render.GlyphBad+" sandboxd") || !strings.Contains(h, "logs "+render.GlyphBad+" sandboxd") {
		t.Errorf("help line %q does not mark console and logs", h)
	}
	for _, k := range []string{"c", "l"} {
		cmd := press(m, k)
		if cmd != nil || m.screen != screenMembers {
			t.Errorf("%s on a sandboxd member: cmd %v screen %v", k, cmd != nil, m.screen)
		}
		if s := status(m); !strings.Contains(s, "sandboxd provider serves no exec/logs/attach/port-forward") {
			t.Errorf("%s: status %q", k, s)
		}
	}
	golden(t, "members_sandboxd_console_120x40", m.View())
}

func TestConsoleRefusedForMembersWithoutRunningPod(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
	wire(m).console = &fakeConsole{}
	press(m, "down", "enter")
	found := false
	for range m.members.rows {
		mm := m.members.current()
		if mm.Pod != nil && mm.Pod.Status.Phase != "Running" {
			found = true
			if cmd := press(m, "c"); cmd != nil || !strings.Contains(m.acts.note, "not Running") {
				t.Errorf("%s: cmd %v note %q", mm.Name, cmd != nil, m.acts.note)
			}
		}
		press(m, "down")
	}
	if !found {
		t.Skip("the fixture has no member with a Pod that is not Running")
	}
}

func TestConsoleNotWiredSaysWhy(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
	m.opts.Demo = true
	press(m, "down", "enter", "down", "down")
	if cmd := press(m, "c"); cmd != nil || !strings.Contains(m.acts.note, "demo cluster runs no containers") {
		t.Errorf("note %q", m.acts.note)
	}
}
