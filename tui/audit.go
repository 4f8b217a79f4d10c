package tui

import (
	"context"
	"fmt"
	"sort"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// The marks of ctpool-tui's audit Events (kube.AuditAnnotation and
// kube.AuditComponent; tui does not import kube).
const (
	auditAnnotation = "ctpool.dev/audit-action"
	auditComponent  = "ctpool-tui"
)

// auditIndent is where the WHAT column starts.
const auditIndent = 34

// maxAudit bounds the audit list.
const maxAudit = 50

// auditView is the open pool's audit trail (A on the members view, which
// owns it), shown in place of the member rows. It loads asynchronously each time it opens;
// an older answer is dropped.
type auditView struct {
	open      bool
	pool      engine.PoolRef
	title     string // the pool as the user sees it (poolTitle)
	namespace string
	req       int
	loading   bool
	events    []corev1.Event
	err       error
}

// auditMsg answers an audit request.
type auditMsg struct {
	req    int
	events []corev1.Event
	err    error
}

// auditCmd reads the audit Events on the pool's ConfigMap, newest first.
func auditCmd(ctx context.Context, src EventSource, namespace, pool string, req int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, eventsTimeout)
		defer cancel()
		evs, err := src.Events(ctx, namespace, "ConfigMap", engine.ConfigMapName(pool))
		return auditMsg{req: req, events: auditEvents(evs), err: err}
	}
}

// auditEvents keeps ctpool-tui's audit Events, newest first.
func auditEvents(evs []corev1.Event) []corev1.Event {
	var out []corev1.Event
	for _, ev := range evs {
		if _, ok := ev.Annotations[auditAnnotation]; ok || ev.Source.Component == auditComponent || ev.ReportingController == auditComponent {
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return eventTime(out[i]).After(eventTime(out[j])) })
	if len(out) > maxAudit {
		out = out[:maxAudit]
	}
	return out
}

// show opens the audit trail of pool and reads it (nothing to read without
// an Events reader).
func (a *auditView) show(ctx viewContext, pool engine.PoolRef) tea.Cmd {
	ns := ctx.reach.namespaceOf(pool)
	a.open, a.pool, a.title, a.namespace, a.req, a.events, a.err = true, pool, refTitle(ctx.fleet, pool), ns, a.req+1, nil, nil
	src := ctx.reach.events(pool)
	if src == nil {
		return nil
	}
	a.loading = true
	return auditCmd(ctx.reach.ctx, src, ns, a.pool.Name, a.req)
}

// refresh re-reads an open audit trail (an action just wrote an audit
// Event); the old list stays on screen until the answer arrives.
func (a *auditView) refresh(ctx viewContext) tea.Cmd {
	src := ctx.reach.events(a.pool)
	if !a.open || src == nil {
		return nil
	}
	a.req++
	return auditCmd(ctx.reach.ctx, src, a.namespace, a.pool.Name, a.req)
}

// take takes the answer to a read (an older one is dropped).
func (a *auditView) take(msg auditMsg) {
	if msg.req == a.req {
		a.loading, a.events, a.err = false, msg.events, msg.err
	}
}

// view renders the pool's recent audit Events.
func (a *auditView) view(ctx viewContext) string {
	st := ctx.st
	lines := []string{" " + st.Accent.Render(sanitize.Sanitize(a.title)) + st.Muted.Render(" · audit: recent actions on "+sanitize.Sanitize(engine.ConfigMapName(a.pool.Name))+" (A or esc closes)")}
	switch {
	case ctx.reach.events(a.pool) == nil:
		lines = append(lines, st.Muted.Render("  audit Events not available"))
	case a.loading:
		lines = append(lines, st.Muted.Render("  "+render.GlyphSyncing+" loading…"))
	case a.err != nil:
		lines = append(lines, st.Error.Render("  "+render.GlyphBad+" "+sanitize.Sanitize(a.err.Error())))
	case len(a.events) == 0:
		lines = append(lines, st.Muted.Render("  no audit Events (Events expire after an hour by default)"))
	default:
		lines = append(lines, "  "+st.ColumnHeader.Render(fmt.Sprintf("%-6s %-9s %-16s %s", "AGE", "RESULT", "ACTION", "WHAT")))
		for _, ev := range a.events {
			when := render.GlyphNone
			if t := eventTime(ev); !t.IsZero() {
				when = render.Duration(ctx.now.Sub(t))
			}
			result := render.GlyphOK + " ok"
			style := st.Text
			if ev.Type == corev1.EventTypeWarning {
				result, style = render.GlyphBad+" failed", st.Error
			}
			action := render.OrWord(ev.Annotations[auditAnnotation], render.OrWord(ev.Action, ev.Reason))
			head := fmt.Sprintf("%-6s %-9s %-16s ", when, result, sanitize.Cut(sanitize.Sanitize(action), 16))
			for i, l := range wrap(sanitize.Sanitize(ev.Message), max(ctx.width-2-auditIndent, 20)) {
				if i > 0 {
					head = strings.Repeat(" ", auditIndent)
				}
				lines = append(lines, "  "+style.Render(head+l))
			}
		}
	}
	if len(lines) > ctx.height {
		lines = lines[:ctx.height]
	}
	for i := range lines {
		lines[i] = sanitize.Cut(lines[i], ctx.width)
	}
	return strings.Join(lines, "\n")
}
