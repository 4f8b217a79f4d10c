package tui

import (
	"regexp"
	"strings"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// Copying to the clipboard (y, Y): the selected member's name, the command
// that opens its console, or the --once command line of the selected pool,
// through Options.Clipboard (OSC 52 in cmd/ctpool-tui: it reaches the
// clipboard of the terminal the user sits at, over SSH too).

// copiedMsg is the result of a copy.
type copiedMsg struct {
	what string
	err  error
}

// copyKey copies what the screen is about: with console, the command that
// opens the selected member's console; else the selected member's name, or
// on the pools screen the pool's --once command line.
func (m *Model) copyKey(console bool) (string, string) {
	ref, mm := m.about()
	switch {
	case ref == (engine.PoolRef{}):
		return "", "select a pool or a member first"
	case console && mm == nil:
		return "", "select a member first (enter opens the pool)"
	case console:
		return m.commandLine("console", ref, mm.Name), "the console command of " + mm.Name
	case mm != nil:
		return mm.Name, mm.Name
	}
	return m.commandLine("--once --pool", ref, ""), "the --once line of " + m.title(ref)
}

// copyCmd copies text with Options.Clipboard in a Cmd.
func (m *Model) copyCmd(console bool) func() copiedMsg {
	text, what := m.copyKey(console)
	if text == "" {
		m.setNote(render.GlyphBad+" nothing to copy: "+what, levelWarn)
		return nil
	}
	clip := m.opts.Clipboard
	if clip == nil {
		m.setNote(render.GlyphBad+" no clipboard: the terminal cannot be reached", levelWarn)
		return nil
	}
	return func() copiedMsg { return copiedMsg{what: what, err: clip(text)} }
}

// commandLine is a ctpool-tui command line for the pool: the verb, the
// pool and the member (console), its namespace and its context, or --demo.
func (m *Model) commandLine(verb string, ref engine.PoolRef, member string) string {
	args := []string{"ctpool-tui"}
	if verb == "console" {
		args = append(args, "console", shellWord(ref.Name), shellWord(member))
	} else {
		args = append(args, verb, shellWord(ref.Name))
	}
	args = append(args, "-n", shellWord(m.reach().namespaceOf(ref)))
	switch kctx := ref.Context; {
	case m.opts.Demo:
		args = append(args, "--demo")
	case kctx != "":
		args = append(args, "--context", shellWord(kctx))
	case !m.opts.Contexts && m.opts.Context != "":
		args = append(args, "--context", shellWord(m.opts.Context))
	}
	return sanitize.Sanitize(strings.Join(args, " "))
}

// plainWord is a word the shell takes as it is.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9@%+=:,./_-]+$`)

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
