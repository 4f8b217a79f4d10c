package tui

import (
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// logPaneHeight is the height of the action log pane (L).
const logPaneHeight = 6

// maxLog bounds the action log.
const maxLog = 200

// logEntry is one action in the log.
type logEntry struct {
	at   time.Time
	id   int
	req  actionRequest
	done bool
	text string
	err  error
}

// actionLog is the action log (L): every action since start, newest last,
// as a pane under the body; the status line shows the last finished one.
type actionLog struct {
	entries []logEntry
}

// start records an action as running.
func (a *actionLog) start(at time.Time, id int, req actionRequest) {
	a.entries = append(a.entries, logEntry{at: at, id: id, req: req})
	if len(a.entries) > maxLog {
		a.entries = a.entries[len(a.entries)-maxLog:]
	}
}

// update records the result of an action at this frame's time.
func (a *actionLog) update(ctx viewContext, msg tea.Msg) (intent, tea.Cmd) {
	done, ok := msg.(actionDoneMsg)
	if !ok {
		return nil, nil
	}
	for i := len(a.entries) - 1; i >= 0; i-- {
		if a.entries[i].id == done.id {
			e := &a.entries[i]
			e.done, e.text, e.err, e.at = true, done.text, done.err, ctx.now
			break
		}
	}
	return nil, nil
}

// lastDone is the newest finished entry.
func (a *actionLog) lastDone() (logEntry, bool) {
	for i := len(a.entries) - 1; i >= 0; i-- {
		if e := a.entries[i]; e.done {
			return e, true
		}
	}
	return logEntry{}, false
}

// line renders one entry.
func (a *actionLog) line(ctx viewContext, e logEntry) string {
	st := ctx.st
	at := e.at.Format("15:04:05")
	switch {
	case !e.done:
		return st.Muted.Render(at) + " " + st.Info.Render(render.GlyphSyncing+" "+sanitize.Sanitize(e.req.describe())+": running")
	case e.err != nil:
		return st.Muted.Render(at) + " " + st.Error.Render(render.GlyphBad+" "+sanitize.Sanitize(e.req.describe())+": "+sanitize.Sanitize(e.err.Error()))
	}
	return st.Muted.Render(at) + " " + st.OK.Render(render.GlyphOK+" "+sanitize.Sanitize(e.req.describe())+": "+sanitize.Sanitize(e.text))
}

// view renders the pane: the newest entries, wrapped to the width, in
// ctx.height lines.
func (a *actionLog) view(ctx viewContext) string {
	st, height := ctx.st, ctx.height
	lines := []string{st.ColumnHeader.Render(fmt.Sprintf(" ACTION LOG (%d since start) ", len(a.entries))) + st.Muted.Render(strings.Repeat("─", max(0, ctx.width-30)))}
	var body []string
	for i := len(a.entries) - 1; i >= 0 && len(body) < height-1; i-- {
		body = append(wrapStyled(a.line(ctx, a.entries[i]), ctx.width-1), body...)
	}
	if len(body) > height-1 {
		body = body[len(body)-(height-1):]
	}
	for _, l := range body {
		lines = append(lines, " "+l)
	}
	if len(a.entries) == 0 {
		lines = append(lines, st.Muted.Render(" no actions yet"))
	}
	return fitBlock(strings.Join(lines, "\n"), ctx.width, height)
}
