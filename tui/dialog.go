package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/ctpool-tui/ctpool-tui/engine"
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

// releaseDialog confirms a force-release (f and x).
func releaseDialog(t target, r actionRequest) dialogStep {
	mm, now := t.member, t.now
	d := dialogStep{title: fmt.Sprintf("Force-release %s?", mm.Name), confirm: "Force release", danger: true}
	claim := ""
	if c := mm.LeaseRead(); c != nil {
		claim = " (claimed " + clock(now, c.Acquired)
		if c.Expires.IsZero() || !now.Before(c.Expires) {
			claim += ", expired " + render.Duration(now.Sub(c.Expires)) + " ago)"
		} else {
			claim += ", " + render.Duration(c.Expires.Sub(now)) + " left)"
		}
		if mm.Maintenance {
			claim = " (the reconciler's maintenance Lease)"
		}
	}
	d.lines = append(d.lines, "Holder: "+render.OrWord(r.holder, "(none)")+claim)
	d.lines = append(d.lines, "This deletes the Pod, the console Service and the data PVC "+engine.PVCName(mm.Name))
	image := ""
	if t.pool != nil {
		image = t.pool.Spec.Image
	}
	if mm.AboveSize {
		d.lines = append(d.lines, "and does not rebuild it: "+mm.Name+" is above the pool size.")
	} else {
		d.lines = append(d.lines, "and builds a fresh desktop from "+render.OrWord(image, "the pool's image")+".")
	}
	d.lines = append(d.lines, "The user's unsaved work is lost.")
	return d
}

// resizeDialog asks for the new size, then confirms it (resizeConfirm).
func resizeDialog(t target, _ actionRequest) dialogStep {
	v := t.pool
	d := dialogStep{title: "Resize " + v.Name, confirm: "Next"}
	d.lines = []string{fmt.Sprintf("Current size %d: %d claimed, %d free.", v.Size, v.Status.Claimed, v.Status.Free)}
	in := &dialogInput{prompt: fmt.Sprintf("New size (0–%d), then enter:", engine.MaxPoolSize), placeholder: strconv.Itoa(v.Size), limit: 6}
	if s := v.Spec; s.Elastic() {
		// The size typed is the one the pool starts from; the reconciler
		// then moves it within the bounds to keep the spare.
		d.lines = append(d.lines, fmt.Sprintf("Elastic %d..%d, spare %d: the new size is the size it starts from (now %d); "+
			"the reconciler then grows or shrinks it within those bounds to keep the spare free.", s.MinSize, s.MaxSize, s.SpareTarget(), s.Size))
		in.prompt = fmt.Sprintf("New size (%d–%d), then enter:", s.MinSize, s.MaxSize)
	}
	in.accept = func(text string, r actionRequest) (actionRequest, *dialogStep, error) {
		size, err := parseSize(text, r.from)
		if err == nil {
			err = elasticBounds(v, size)
		}
		if err != nil {
			return r, nil, err
		}
		r.size = size
		next := resizeConfirm(v, size)
		return r, &next, nil
	}
	d.input = in
	return d
}

// resizeConfirm is the confirmation of a valid size.
func resizeConfirm(v *engine.PoolView, size int) dialogStep {
	d := dialogStep{title: fmt.Sprintf("Resize %s from %d to %d?", v.Name, v.Size, size), confirm: "Resize", danger: true}
	d.lines = []string{"Resize writes the new size and reconciles once."}
	if v.Spec.Elastic() {
		d.lines[0] = fmt.Sprintf("Resize writes the size it starts from and reconciles once (then it moves within %d..%d).", v.Spec.MinSize, v.Spec.MaxSize)
	}
	if size > v.Size {
		d.lines = append(d.lines, fmt.Sprintf("%s created: %s.", render.Plural(size-v.Size, "member is", "members are"),
			rangeNames(v.Name, v.Size+1, size)))
		return d
	}
	var free, held []string
	for i := range v.Members {
		mm := &v.Members[i]
		if mm.Index <= size || !mm.Exists() {
			continue
		}
		if mm.Claimed {
			held = append(held, mm.Name+" ("+mm.Holder()+")")
		} else {
			free = append(free, mm.Name)
		}
	}
	if len(free) > 0 {
		d.lines = append(d.lines, "Deleted with their data: "+listShort(free, 6)+".")
	}
	if len(held) > 0 {
		d.lines = append(d.lines, "Claimed, so kept until released: "+listShort(held, 4)+".")
	}
	return d
}

func rangeNames(pool string, from, to int) string {
	if from == to {
		return engine.MemberName(pool, from)
	}
	return engine.MemberName(pool, from) + " … " + engine.MemberName(pool, to)
}

func listShort(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// deleteDialog asks for the pool's name as the user sees it (its title),
// typed exactly.
func deleteDialog(t target, r actionRequest) dialogStep {
	d := dialogStep{title: "Delete pool " + r.pool + "?", confirm: "Delete", danger: true}
	members, claimed := 0, 0
	if v := t.pool; v != nil {
		for i := range v.Members {
			if v.Members[i].Exists() {
				members++
			}
			if v.Members[i].Claimed {
				claimed++
			}
		}
	}
	d.lines = []string{
		fmt.Sprintf("The size is set to 0, then %s deleted with", render.Plural(members, "member is", "members are")),
		"their data PVCs, then the definition. This cannot be undone.",
	}
	if claimed > 0 {
		d.lines = append(d.lines, fmt.Sprintf("%s claimed by users.", render.Plural(claimed, "member is", "members are")))
	}
	d.input = &dialogInput{prompt: "Type the pool name to confirm:", placeholder: r.pool, limit: 64,
		accept: func(text string, r actionRequest) (actionRequest, *dialogStep, error) {
			if text != r.pool {
				return r, nil, fmt.Errorf("type %s exactly to delete it", r.pool)
			}
			return r, nil, nil
		}}
	return d
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

// parseSize validates a typed pool size.
func parseSize(s string, current int) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("type a number")
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a whole number", s)
	case n < 0:
		return 0, fmt.Errorf("the size must not be negative")
	case n > engine.MaxPoolSize:
		return 0, fmt.Errorf("the size must be at most %d", engine.MaxPoolSize)
	case n == current:
		return 0, fmt.Errorf("the pool already has size %d", n)
	}
	return n, nil
}

// elasticBounds refuses a size outside an elastic pool's [minSize, maxSize]
// (the engine's Validate refuses it too; the dialog says so before).
func elasticBounds(v *engine.PoolView, size int) error {
	if v == nil || !v.Spec.Elastic() {
		return nil
	}
	if s := v.Spec; size < s.MinSize || size > s.MaxSize {
		return fmt.Errorf("%d is outside %d..%d (the elastic pool's minSize..maxSize)", size, s.MinSize, s.MaxSize)
	}
	return nil
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
