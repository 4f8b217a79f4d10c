package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// dialogModel is a modal dialog: the confirmation of an action, one step
// at a time (dialogStep). A confirmation starts on Cancel.
type dialogModel struct {
	st    themes.Styles
	req   actionRequest
	step  dialogStep
	focus int // 0: Cancel, 1: confirm
	input textinput.Model
	err   string
}

// dialogStep is what a dialog shows and asks, as an action describes it.
type dialogStep struct {
	title string
	lines []string // cluster text in here is sanitised when rendered
	// confirm is the confirm button's label ("enter <confirm>" with an input).
	confirm string
	// danger: the box and the focused confirm button are drawn as an error.
	danger bool
	// input, when set, asks for text (enter takes it) instead of buttons.
	input *dialogInput
}

// dialogInput is a step's text field.
type dialogInput struct {
	prompt, placeholder string
	limit               int
	// accept takes the typed text: the request to run (next nil), the
	// next step of the same request, or why not (the dialog stays).
	accept func(text string, r actionRequest) (actionRequest, *dialogStep, error)
}

// newDialog opens the first step of req's dialog.
func newDialog(st themes.Styles, req actionRequest, step dialogStep) *dialogModel {
	d := &dialogModel{st: st, req: req}
	d.show(step)
	return d
}

// show makes step the dialog's: on Cancel, with an empty input.
func (d *dialogModel) show(step dialogStep) {
	d.step, d.focus, d.err = step, 0, ""
	if in := step.input; in != nil {
		d.input = newInput(d.st, in.placeholder, in.limit)
	}
}

func newInput(st themes.Styles, placeholder string, limit int) textinput.Model {
	ti := textinput.New()
	ti.Prompt = "> "
	ti.PromptStyle = st.Accent
	ti.Placeholder = placeholder
	ti.CharLimit = limit
	ti.Cursor.SetMode(cursor.CursorStatic)
	return ti
}

// update handles a key while the dialog is open: it closes with
// dialogDone, cancelled or confirmed, or stays open (a next step, or an
// error).
func (d *dialogModel) update(ctx viewContext, msg tea.Msg) (intent, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil, nil
	}
	k := ctx.keys
	if key.Matches(km, k.Cancel) {
		return dialogDone{req: d.req}, nil
	}
	in := d.step.input
	if in == nil {
		switch {
		case key.Matches(km, k.NextButton):
			d.focus = 1 - d.focus
		case key.Matches(km, k.Confirm):
			return dialogDone{req: d.req, confirmed: d.focus == 1}, nil
		}
		return nil, nil
	}
	if key.Matches(km, k.Confirm) {
		req, next, err := in.accept(d.input.Value(), d.req)
		if err != nil {
			d.err = err.Error()
			return nil, nil
		}
		d.req = req
		if next != nil {
			d.show(*next)
			return nil, d.focusInput()
		}
		return dialogDone{req: req, confirmed: true}, nil
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(km)
	d.err = ""
	return nil, cmd
}

// focusInput focuses the step's input (nil without one).
func (d *dialogModel) focusInput() tea.Cmd {
	if d.step.input == nil {
		return nil
	}
	return d.input.Focus()
}

// help is the dialog's keys for the help line.
func (d *dialogModel) help(k *keyMap) []key.Binding {
	if d.step.input != nil {
		return []key.Binding{k.Confirm, k.Cancel}
	}
	return []key.Binding{k.NextButton, k.Confirm, k.Cancel}
}

// view renders the dialog box.
func (d *dialogModel) view(ctx viewContext) string {
	st := ctx.st
	w := min(76, ctx.width-4)
	inner := w - 4
	var body []string
	for _, l := range d.step.lines {
		body = append(body, wrap(sanitize.Sanitize(l), inner)...)
	}
	if d.step.input != nil {
		body = append(body, "", d.step.input.prompt)
		d.input.Width = inner - 3
		body = append(body, d.input.View())
	}
	if d.err != "" {
		body = append(body, st.Error.Render(render.GlyphBad+" "+sanitize.Sanitize(d.err)))
	}
	body = append(body, "")
	body = append(body, d.buttons(st, inner))
	border := st.Muted
	if d.step.danger {
		border = st.Error
	}
	return titledBox(sanitize.Sanitize(d.step.title), body, w, border)
}

func (d *dialogModel) buttons(st *themes.Styles, width int) string {
	if d.step.input != nil {
		return spread("", st.Muted.Render("enter "+strings.ToLower(d.step.confirm)+" · esc cancel"), width)
	}
	label := func(s string, focused bool, danger bool) string {
		if !focused {
			return st.Button.Render("  " + s + "  ")
		}
		if danger {
			return st.DangerButton.Render("[ " + s + " ]")
		}
		return st.ButtonFocused.Render("[ " + s + " ]")
	}
	row := label("Cancel", d.focus == 0, false) + "  " + label(d.step.confirm, d.focus == 1, true)
	return spread("", row, width)
}

// wrap breaks plain text into lines of at most width cells.
func wrap(s string, width int) []string {
	if width <= 0 {
		return nil
	}
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case ansi.StringWidth(line)+1+ansi.StringWidth(w) <= width:
			line += " " + w
		default:
			out = append(out, line)
			line = w
		}
		for ansi.StringWidth(line) > width {
			out = append(out, ansi.Truncate(line, width, ""))
			line = ansi.TruncateLeft(line, width, "")
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}
