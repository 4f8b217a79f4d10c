package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

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

// dialogKind is the kind of an open dialog.
type dialogKind int

const (
	dlgRelease       dialogKind = iota // confirm a force-release (x and f)
	dlgResizeInput                     // type the new size
	dlgResizeConfirm                   // confirm the resize
	dlgDelete                          // type the pool name
	dlgClaim                           // type the identity to claim a member for (claim.go)
)

// dialogModel is a modal dialog. Confirmation dialogs start on Cancel.
type dialogModel struct {
	kind     dialogKind
	req      actionRequest
	title    string
	lines    []string // cluster text in here is sanitised when rendered
	confirm  string   // the confirm button's label
	focus    int      // 0: Cancel, 1: confirm
	input    textinput.Model
	hasInput bool
	prompt   string
	err      string
	pool     *engine.PoolView // resize: the pool, for the confirmation
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

func newReleaseDialog(v *engine.PoolView, mm *engine.Member, now time.Time) *dialogModel {
	holder := ""
	if c := mm.LeaseRead(); c != nil { // the reconciler's too: a force-release may end it
		holder = c.Holder
	}
	d := &dialogModel{kind: dlgRelease, confirm: "Force release"}
	d.req = actionRequest{kind: actForceRelease, pool: v.Name, member: mm.Name, holder: holder}
	d.title = fmt.Sprintf("Force-release %s?", mm.Name)
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
	d.lines = append(d.lines, "Holder: "+render.OrWord(holder, "(none)")+claim)
	d.lines = append(d.lines, "This deletes the Pod, the console Service and the data PVC "+engine.PVCName(mm.Name))
	if mm.AboveSize {
		d.lines = append(d.lines, "and does not rebuild it: "+mm.Name+" is above the pool size.")
	} else {
		d.lines = append(d.lines, "and builds a fresh desktop from "+render.OrWord(v.Spec.Image, "the pool's image")+".")
	}
	d.lines = append(d.lines, "The user's unsaved work is lost.")
	return d
}

func newResizeDialog(st themes.Styles, v *engine.PoolView) *dialogModel {
	d := &dialogModel{kind: dlgResizeInput, title: "Resize " + v.Name, confirm: "Next", hasInput: true, pool: v}
	d.req = actionRequest{kind: actResize, pool: v.Name, from: v.Size}
	d.lines = []string{fmt.Sprintf("Current size %d: %d claimed, %d free.", v.Size, v.Status.Claimed, v.Status.Free)}
	d.prompt = fmt.Sprintf("New size (0–%d), then enter:", engine.MaxPoolSize)
	if s := v.Spec; s.Elastic() {
		// The size typed is the one the pool starts from; the reconciler
		// then moves it within the bounds to keep the spare.
		d.lines = append(d.lines, fmt.Sprintf("Elastic %d..%d, spare %d: the new size is the size it starts from (now %d); "+
			"the reconciler then grows or shrinks it within those bounds to keep the spare free.", s.MinSize, s.MaxSize, s.SpareTarget(), s.Size))
		d.prompt = fmt.Sprintf("New size (%d–%d), then enter:", s.MinSize, s.MaxSize)
	}
	d.input = newInput(st, strconv.Itoa(v.Size), 6)
	return d
}

// resizeConfirm turns a valid size into the confirmation step.
func (d *dialogModel) resizeConfirm(size int) {
	v := d.pool
	d.kind, d.hasInput, d.err, d.focus, d.prompt = dlgResizeConfirm, false, "", 0, ""
	d.req.size = size
	d.title = fmt.Sprintf("Resize %s from %d to %d?", v.Name, v.Size, size)
	d.confirm = "Resize"
	d.lines = []string{"Resize writes the new size and reconciles once."}
	if v.Spec.Elastic() {
		d.lines[0] = fmt.Sprintf("Resize writes the size it starts from and reconciles once (then it moves within %d..%d).", v.Spec.MinSize, v.Spec.MaxSize)
	}
	if size > v.Size {
		d.lines = append(d.lines, fmt.Sprintf("%s created: %s.", render.Plural(size-v.Size, "member is", "members are"),
			rangeNames(v.Name, v.Size+1, size)))
		return
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

// (pool as the user sees it: title, which is also what must be typed).
func newDeleteDialog(st themes.Styles, ref engine.PoolRef, pool string, v *engine.PoolView) *dialogModel {
	d := &dialogModel{kind: dlgDelete, title: "Delete pool " + pool + "?", confirm: "Delete", hasInput: true}
	d.req = actionRequest{kind: actDelete, ref: ref, pool: pool}
	members, claimed := 0, 0
	if v != nil {
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
	d.prompt = "Type the pool name to confirm:"
	d.input = newInput(st, pool, 64)
	return d
}

// update handles a key while the dialog is open: it closes with
// dialogDone, cancelled or confirmed, or stays open with an error.
func (d *dialogModel) update(ctx viewContext, msg tea.Msg) (intent, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil, nil
	}
	k := ctx.keys
	if key.Matches(km, k.Cancel) {
		return dialogDone{req: d.req}, nil
	}
	switch d.kind {
	case dlgRelease, dlgResizeConfirm:
		switch {
		case key.Matches(km, k.NextButton):
			d.focus = 1 - d.focus
		case key.Matches(km, k.Confirm):
			return dialogDone{req: d.req, confirmed: d.focus == 1}, nil
		}
		return nil, nil
	case dlgResizeInput:
		if key.Matches(km, k.Confirm) {
			size, err := parseSize(d.input.Value(), d.req.from)
			if err == nil {
				err = elasticBounds(d.pool, size)
			}
			if err != nil {
				d.err = err.Error()
				return nil, nil
			}
			d.resizeConfirm(size)
			return nil, nil
		}
	case dlgClaim:
		if key.Matches(km, k.Confirm) {
			// The identity is checked as the claim command checks it; an
			// invalid one stays in the dialog with the reason.
			identity := d.input.Value()
			if err := engine.ValidateIdentity(identity); err != nil {
				d.err = err.Error()
				return nil, nil
			}
			req := d.req
			req.identity = identity
			return dialogDone{req: req, confirmed: true}, nil
		}
	case dlgDelete:
		if key.Matches(km, k.Confirm) {
			if d.input.Value() != d.req.pool {
				d.err = fmt.Sprintf("type %s exactly to delete it", d.req.pool)
				return nil, nil
			}
			return dialogDone{req: d.req, confirmed: true}, nil
		}
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(km)
	d.err = ""
	return nil, cmd
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
	for _, l := range d.lines {
		body = append(body, wrap(sanitize.Sanitize(l), inner)...)
	}
	if d.hasInput {
		body = append(body, "", d.prompt)
		d.input.Width = inner - 3
		body = append(body, d.input.View())
	}
	if d.err != "" {
		body = append(body, st.Error.Render(render.GlyphBad+" "+sanitize.Sanitize(d.err)))
	}
	body = append(body, "")
	body = append(body, d.buttons(st, inner))
	border := st.Muted
	if d.kind == dlgRelease || d.kind == dlgDelete || d.kind == dlgResizeConfirm {
		border = st.Error
	}
	return titledBox(sanitize.Sanitize(d.title), body, w, border)
}

func (d *dialogModel) buttons(st *themes.Styles, width int) string {
	if d.hasInput {
		return spread("", st.Muted.Render("enter "+strings.ToLower(d.confirm)+" · esc cancel"), width)
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
	row := label("Cancel", d.focus == 0, false) + "  " + label(d.confirm, d.focus == 1, true)
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
