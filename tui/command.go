package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ctpool-tui/ctpool-tui/themes"
)

// Scope is what the dashboard shows and may do in one namespace, or in
// several (Fleet): what a Scoper builds for `:ns`.
type Scope struct {
	// Namespace as the header shows it (with Fleet, e.g. "all").
	Namespace string
	Fleet     bool
	// Data is started, and stops when the context given to Scope ends.
	Data      DataSource
	Actions   Actions
	ActionsIn func(namespace string) Actions
	Access    Access
	AccessIn  func(namespace string) Access
	Console   ConsoleRunner
}

// Scoper switches the namespaces the dashboard shows (the `:ns NAME` and
// `:ns all` commands; optional). Scope is called in a Cmd: it may ask the
// API server (whether the identity may list every namespace) and start
// informers, which stop when ctx ends (the dashboard ends it when it
// switches again or quits). namespace "" is every namespace.
type Scoper interface {
	Scope(ctx context.Context, namespace string) (Scope, error)
}

// commandLine is the `:` prompt on the status line.
type commandLine struct {
	input textinput.Model
	open  bool
}

func newCommandLine(st themes.Styles) commandLine {
	ti := textinput.New()
	ti.Prompt = ":"
	ti.PromptStyle = st.Accent
	ti.Placeholder = "ns NAME · ns all"
	ti.CharLimit = 80
	return commandLine{input: ti}
}

// scopeMsg answers a `:ns` command.
type scopeMsg struct {
	gen    int
	want   string // the namespace asked ("": all)
	scope  Scope
	cancel context.CancelFunc
	err    error
}

// scopeCmd builds the scope of namespace ns; its informers live until
// cancel.
func scopeCmd(ctx context.Context, s Scoper, ns string, gen int) tea.Cmd {
	sctx, cancel := context.WithCancel(ctx)
	return func() tea.Msg {
		sc, err := s.Scope(sctx, ns)
		if err != nil {
			cancel()
			return scopeMsg{gen: gen, want: ns, err: err}
		}
		return scopeMsg{gen: gen, want: ns, scope: sc, cancel: cancel}
	}
}

// updateCommand takes a key typed on the command line.
func (m *Model) updateCommand(msg tea.KeyMsg) tea.Cmd {
	c := &m.command
	switch msg.Type {
	case tea.KeyEsc:
		c.open = false
		c.input.Blur()
		return nil
	case tea.KeyEnter:
		c.open = false
		c.input.Blur()
		return m.runCommand(c.input.Value())
	}
	var cmd tea.Cmd
	c.input, cmd = c.input.Update(msg)
	return cmd
}

// openCommand opens the `:` prompt.
func (m *Model) openCommand() tea.Cmd {
	m.command.open = true
	m.command.input.SetValue("")
	return m.command.input.Focus()
}

// errCommand: the command line holds no command the dashboard knows.
var errCommand = errors.New("commands: ns NAME (one namespace), ns all (every namespace)")

// parseCommand parses a command line: `ns NAME` or `ns all` (namespace
// "" then).
func parseCommand(line string) (namespace string, err error) {
	f := strings.Fields(line)
	if len(f) != 2 || (f[0] != "ns" && f[0] != "namespace") {
		return "", errCommand
	}
	if f[1] == "all" || f[1] == "-A" {
		return "", nil
	}
	if errs := validation.IsDNS1123Label(f[1]); len(errs) > 0 {
		return "", fmt.Errorf("%q is not a namespace name", f[1])
	}
	return f[1], nil
}

// runCommand runs a command line: `:ns` switches the namespaces shown.
func (m *Model) runCommand(line string) tea.Cmd {
	if strings.TrimSpace(line) == "" {
		return nil
	}
	ns, err := parseCommand(line)
	if err != nil {
		m.setNote(glyphBad+" "+err.Error(), levelError)
		return nil
	}
	m.scopeGen++
	what := "namespace " + ns
	if ns == "" {
		what = "all namespaces"
	}
	m.setNote(glyphSyncing+" switching to "+what+"…", levelInfo)
	return scopeCmd(m.ctx, m.opts.Scoper, ns, m.scopeGen)
}

// applyScope switches to a new scope: the old informers stop, and the
// views start over on the new data.
func (m *Model) applyScope(msg scopeMsg) tea.Cmd {
	if msg.gen != m.scopeGen {
		if msg.cancel != nil {
			msg.cancel() // a later :ns won
		}
		return nil
	}
	if msg.err != nil {
		m.setNote(glyphBad+" "+msg.err.Error(), levelError)
		return nil
	}
	if m.scopeCancel != nil {
		m.scopeCancel()
	}
	close(m.scopeDone)
	m.scopeCancel, m.scopeDone = msg.cancel, make(chan struct{})
	sc := msg.scope
	o := &m.opts
	o.Namespace, o.Fleet, o.Data = sc.Namespace, sc.Fleet, sc.Data
	if !o.ReadOnly {
		o.Actions, o.ActionsIn, o.Access, o.AccessIn, o.Console = sc.Actions, sc.ActionsIn, sc.Access, sc.AccessIn, sc.Console
	}
	m.dataGen++
	m.views, m.loaded, m.health, m.started = nil, false, health{}, m.now
	m.side.caps, m.side.capsErr, m.side.inNS = nil, nil, nil
	m.pools = newPoolsView(m.st)
	m.members = newMembersView(m.st)
	m.audit = auditView{req: m.audit.req} // a late answer of the old trail is dropped
	m.logs.stop()
	if m.screen != screenWall {
		m.screen = screenPools
	}
	m.layout()
	shown := "namespace " + sc.Namespace
	if sc.Fleet {
		shown = "namespaces: " + sc.Namespace
	}
	m.setNote(glyphOK+" showing "+shown, levelOK)
	m.pending, m.armed, m.dirty = true, true, false
	cmds := []tea.Cmd{m.load(), m.waitChange()}
	if o.Access != nil && !o.ReadOnly && !o.Fleet {
		cmds = append(cmds, capsCmd(m.ctx, o.Access))
	}
	return tea.Batch(cmds...)
}

// commandKey is the binding that opens the command line (enabled when a
// Scoper is wired).
func commandKey() key.Binding {
	return key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "command (ns NAME, ns all)"))
}
