package tui

import (
	"context"
	"errors"
	"fmt"
	"io"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// consoleProcess is the tea.ExecCommand of a console: bubbletea releases
// the terminal, sets the streams and calls Run; the session runs in process
// through the exec API, and the dashboard comes back when the shell exits.
type consoleProcess struct {
	ctx            context.Context
	runner         ConsoleRunner
	namespace, pod string
	stdin          io.Reader
	stdout, stderr io.Writer
}

func (p *consoleProcess) SetStdin(r io.Reader)  { p.stdin = r }
func (p *consoleProcess) SetStdout(w io.Writer) { p.stdout = w }
func (p *consoleProcess) SetStderr(w io.Writer) { p.stderr = w }
func (p *consoleProcess) Run() error {
	if p.stdout != nil {
		fmt.Fprintf(p.stdout, "ctpool-tui: shell in %s/%s (%s); exit it to return to the dashboard\r\n", p.namespace, p.pod, engine.ContainerName)
	}
	return p.runner.Console(p.ctx, p.namespace, p.pod, p.stdin, p.stdout, p.stderr)
}

// exitStatus is the remote shell's exit status carried by an error
// (client-go's exec.CodeExitError).
type exitStatus interface{ ExitStatus() int }

// toolUnavailable says why the console or the logs of a member cannot be
// opened, judged from the snapshot ("" when they can).
func toolUnavailable(kind engine.Action, v *engine.PoolView, mm *engine.Member) string {
	if mm == nil {
		return "select a member first (enter opens the pool)"
	}
	var spec engine.Spec
	if v != nil {
		spec = v.Spec
	}
	if why := engine.StreamingUnavailable(engine.MemberBackend(spec, mm.Pod)); why != "" {
		return kind.String() + " unavailable for " + mm.Name + ": " + why
	}
	switch {
	case mm.Pod == nil:
		return fmt.Sprintf("%s unavailable: %s has no Pod (%s)", kind, mm.Name, mm.State)
	case kind == engine.ActionConsole && mm.Pod.DeletionTimestamp != nil:
		return fmt.Sprintf("console unavailable: %s's Pod is being deleted", mm.Name)
	case kind == engine.ActionConsole && mm.Pod.Status.Phase != corev1.PodRunning:
		return fmt.Sprintf("console unavailable: %s's Pod is %s, not Running", mm.Name, render.OrWord(string(mm.Pod.Status.Phase), "Pending"))
	}
	return ""
}

// currentTarget is what an action key acts on now: the current view's
// pool and member.
func (m *Model) currentTarget() target {
	ref, mm := m.about()
	return target{ref: ref, title: m.title(ref), pool: m.pool(ref), member: mm, now: m.now}
}

// openConsole hands the terminal to a shell in the member, or says why not.
func (m *Model) openConsole(req actionRequest, mm *engine.Member) tea.Cmd {
	pool := req.ref
	if m.reach().readOnlyAt(pool) {
		m.setNote(render.GlyphBad+" read-only: the console is a write (pods/exec)", levelError)
		return nil
	}
	if why := toolUnavailable(engine.ActionConsole, m.pool(pool), mm); why != "" {
		m.setNote(render.GlyphBad+" "+why, levelError)
		return nil
	}
	runner := m.reach().console(pool)
	if runner == nil {
		m.setNote(render.GlyphBad+" console unavailable: "+render.OrWord(m.consoleMissing(), "no exec connection"), levelError)
		return nil
	}

	id := m.logStart(req)
	p := &consoleProcess{ctx: m.ctx, runner: runner, namespace: m.reach().namespaceOf(pool), pod: mm.Name}
	return tea.Exec(p, func(err error) tea.Msg {
		text, err := consoleResult(err)
		return actionDoneMsg{id: id, req: req, text: text, err: err}
	})
}

// consoleMissing is why cmd gave no console (the demo has no containers).
func (m *Model) consoleMissing() string {
	if m.opts.Demo {
		return "the demo cluster runs no containers"
	}
	return ""
}

// consoleResult turns the end of a session into the log's text: a shell
// that exits non-zero is a normal end, not an error.
func consoleResult(err error) (string, error) {
	var es exitStatus
	switch {
	case err == nil:
		return "session ended", nil
	case errors.As(err, &es):
		return fmt.Sprintf("session ended (exit %d)", es.ExitStatus()), nil
	}
	return "", err
}
