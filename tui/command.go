package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// Scope is what the dashboard shows and may do in one namespace, or in
// several (Fleet): what a Scoper builds for `:ns`.
type Scope struct {
	// Namespace as the header shows it (with Fleet, e.g. "all").
	Namespace string
	Fleet     bool
	// Data is started, and stops when the context given to Scope ends.
	Data DataSource
	// Resolver reaches the scope's namespaces (Options.Resolver).
	Resolver Resolver
}

// Scoper switches the namespaces the dashboard shows (the `:ns NAME` and
// `:ns all` commands; optional). Scope is called in a Cmd: it may ask the
// API server (whether the identity may list every namespace) and start
// informers, which stop when ctx ends (the dashboard ends it when it
// switches again or quits). namespace "" is every namespace.
type Scoper interface {
	Scope(ctx context.Context, namespace string) (Scope, error)
}

// commandLine is the `:` prompt on the status line. hint is what the last
// tab or enter had to say (the names to choose from, or why the command
// cannot run); it goes with the next key.
type commandLine struct {
	input     textinput.Model
	open      bool
	hint      string
	hintLevel int
}

func newCommandLine(st themes.Styles) commandLine {
	ti := textinput.New()
	ti.Prompt = ":"
	ti.PromptStyle = st.Accent
	ti.Placeholder = "ns NAME · ns all · ctx NAME · ctx all (tab completes)"
	ti.CharLimit = 200
	return commandLine{input: ti}
}

// view is the command line as the status line shows it.
func (c *commandLine) view(ctx viewContext) string {
	line := " " + c.input.View()
	if c.hint != "" {
		line += "  " + ctx.level(c.hintLevel).Render(sanitize.Sanitize(c.hint))
	}
	return sanitize.Cut(line, ctx.width)
}

// commandKeys are the command line's keys for the help line (its own: in
// read-only mode the dialogs' enter is disabled, not the command line's).
func commandKeys() []key.Binding {
	return []key.Binding{
		key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run")),
		key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "complete")),
		key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
	}
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

// updateCommand takes a key typed on the command line: enter runs it (a
// command that cannot run stays on the line with the reason), tab
// completes, esc closes.
func (m *Model) updateCommand(msg tea.KeyMsg) tea.Cmd {
	c := &m.command
	c.hint = ""
	switch msg.Type {
	case tea.KeyEsc:
		c.open = false
		c.input.Blur()
		return nil
	case tea.KeyTab:
		line, matches := complete(c.input.Value(), m.commandNames())
		c.input.SetValue(line)
		c.input.CursorEnd()
		switch {
		case len(matches) == 0:
			c.hint, c.hintLevel = "no match", levelWarn
		case len(matches) > 1:
			c.hint, c.hintLevel = strings.Join(matches, "  "), levelInfo
		}
		return nil
	case tea.KeyEnter:
		cmd, err := m.runCommand(c.input.Value())
		if err != nil {
			c.hint, c.hintLevel = render.GlyphBad+" "+err.Error(), levelError
			return nil
		}
		c.open = false
		c.input.Blur()
		return cmd
	}
	var cmd tea.Cmd
	c.input, cmd = c.input.Update(msg)
	return cmd
}

// openCommand opens the `:` prompt.
func (m *Model) openCommand() tea.Cmd {
	m.command.open, m.command.hint = true, ""
	m.command.input.SetValue("")
	return m.command.input.Focus()
}

// errCommand: the command line holds no command the dashboard knows.
var errCommand = errors.New("commands: ns NAME, ns all, ctx NAME, ctx all")

// parsedCommand is a command line: ns (namespace) or ctx (context), and
// the name asked ("" for all).
type parsedCommand struct {
	verb, name string
}

// commandWords are the commands, with their long forms.
var commandWords = map[string]string{"ns": "ns", "namespace": "ns", "ctx": "ctx", "context": "ctx"}

// parseCommand parses a command line: `ns NAME`, `ns all` (or -A), `ctx
// NAME`, `ctx all`. A context name is the rest of the line (kubeconfig
// names are free text); a namespace name is one DNS label.
func parseCommand(line string) (parsedCommand, error) {
	line = strings.TrimSpace(line)
	word, rest, _ := strings.Cut(line, " ")
	verb, ok := commandWords[word]
	rest = strings.TrimSpace(rest)
	if !ok || rest == "" {
		return parsedCommand{}, errCommand
	}
	if rest == "all" || (verb == "ns" && rest == "-A") {
		return parsedCommand{verb: verb}, nil
	}
	if verb == "ctx" {
		return parsedCommand{verb: verb, name: rest}, nil
	}
	if strings.ContainsAny(rest, " \t") {
		return parsedCommand{}, errCommand
	}
	if errs := validation.IsDNS1123Label(rest); len(errs) > 0 {
		return parsedCommand{}, fmt.Errorf("%q is not a namespace name", rest)
	}
	return parsedCommand{verb: verb, name: rest}, nil
}

// completionNames are the names the command line completes.
type completionNames struct {
	namespaces, contexts []string
}

// complete completes the word under the cursor at the end of line: the
// command, or a name of its kind ("all" is one). One match is completed
// whole (and a space follows a command); several extend the line to their
// common prefix and come back sorted to be shown; none leave the line as
// it was.
func complete(line string, names completionNames) (string, []string) {
	lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
	body := strings.TrimLeft(line, " ")
	word, rest, hasArg := strings.Cut(body, " ")
	if !hasArg {
		var matches []string
		for _, w := range []string{"ctx", "ns"} {
			if strings.HasPrefix(w, word) {
				matches = append(matches, w)
			}
		}
		for long, w := range commandWords {
			if long != w && word != "" && strings.HasPrefix(long, word) && !slices.Contains(matches, w) {
				matches = append(matches, w)
			}
		}
		sort.Strings(matches)
		if len(matches) == 1 {
			return lead + matches[0] + " ", matches
		}
		return lead + commonPrefix(word, matches), matches
	}
	verb, ok := commandWords[word]
	if !ok {
		return line, nil
	}
	pool := names.namespaces
	if verb == "ctx" {
		pool = names.contexts
	}
	arg := strings.TrimLeft(rest, " ")
	var matches []string
	seen := map[string]bool{}
	for _, n := range append([]string{"all"}, pool...) {
		if strings.HasPrefix(n, arg) && !seen[n] {
			seen[n] = true
			matches = append(matches, n)
		}
	}
	sort.Strings(matches)
	prefix := lead + word + " "
	if len(matches) == 1 {
		return prefix + matches[0], matches
	}
	if len(matches) == 0 {
		return line, nil
	}
	return prefix + commonPrefix(arg, matches), matches
}

// commonPrefix is the longest prefix of every match (at least typed).
func commonPrefix(typed string, matches []string) string {
	if len(matches) == 0 {
		return typed
	}
	p := matches[0]
	for _, s := range matches[1:] {
		for !strings.HasPrefix(s, p) {
			_, size := utf8.DecodeLastRuneInString(p)
			p = p[:len(p)-size]
		}
	}
	if len(p) < len(typed) {
		return typed
	}
	return p
}

// runCommand runs a command line. `:ctx` narrows the view to one of the
// watched contexts; `:ns` narrows it to one namespace in a fleet of
// clusters, and otherwise switches the namespaces read (Scoper). A command
// that cannot run returns why, and nothing changes.
func (m *Model) runCommand(line string) (tea.Cmd, error) {
	if strings.TrimSpace(line) == "" {
		return nil, nil
	}
	c, err := parseCommand(line)
	if err != nil {
		return nil, err
	}
	if c.verb == "ctx" {
		return nil, m.narrowContext(c.name)
	}
	if m.opts.Contexts {
		return nil, m.narrowNamespace(c.name)
	}
	if m.opts.Scoper == nil {
		return nil, errors.New("this view cannot switch namespaces")
	}
	m.scopeGen++
	what := "namespace " + c.name
	if c.name == "" {
		what = "all namespaces"
	}
	m.setNote(render.GlyphSyncing+" switching to "+what+"…", levelInfo)
	return scopeCmd(m.ctx, m.opts.Scoper, c.name, m.scopeGen), nil
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
		m.setNote(render.GlyphBad+" "+msg.err.Error(), levelError)
		return nil
	}
	sc := msg.scope
	o := &m.opts
	o.Namespace, o.Fleet, o.Data, o.Resolver = sc.Namespace, sc.Fleet, sc.Data, sc.Resolver
	load := m.feed.replace(sc.Data, msg.cancel, m.now)
	m.pools = nil
	m.side.caps, m.side.capsErr, m.side.inNS = nil, nil, nil
	m.table = newPoolsView(m.st)
	m.members = m.members.startOver(m.st)
	m.home()
	m.layout()
	shown := "namespace " + sc.Namespace
	if sc.Fleet {
		shown = "namespaces: " + sc.Namespace
	}
	m.setNote(render.GlyphOK+" showing "+shown, levelOK)
	cmds := []tea.Cmd{load}
	if caps := m.askCapsHere(); caps != nil {
		cmds = append(cmds, caps)
	}
	return tea.Batch(cmds...)
}

// commandKey is the binding that opens the command line (enabled when a
// Scoper is wired).
func commandKey() key.Binding {
	return key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "command (ns, ctx; tab completes)"))
}
