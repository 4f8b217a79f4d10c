package tui

import (
	"context"
	"fmt"
	"sort"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
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

// auditModel is the open pool's audit list (A on the members view). It
// loads asynchronously each time it opens; an older answer is dropped.
type auditModel struct {
	open    bool
	pool    string
	req     int
	loading bool
	events  []corev1.Event
	err     error
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

func (a *auditModel) set(msg auditMsg) {
	if msg.req != a.req {
		return
	}
	a.loading, a.events, a.err = false, msg.events, msg.err
}

// toggleAudit opens or closes the audit list of the members view's pool.
func (m *Model) toggleAudit() tea.Cmd {
	a := &m.side.audit
	if a.open {
		a.open = false
		return nil
	}
	a.open, a.pool, a.req, a.events, a.err = true, m.members.pool, a.req+1, nil, nil
	if m.opts.Events == nil {
		return nil
	}
	a.loading = true
	return auditCmd(m.ctx, m.opts.Events, m.namespaceOf(a.pool), a.pool, a.req)
}

// refreshAudit re-reads an open audit list (an action just wrote an audit
// Event); the old list stays on screen until the answer arrives.
func (m *Model) refreshAudit() tea.Cmd {
	a := &m.side.audit
	if !a.open || m.opts.Events == nil {
		return nil
	}
	a.req++
	return auditCmd(m.ctx, m.opts.Events, m.namespaceOf(a.pool), a.pool, a.req)
}

// auditView is the pool's recent audit Events in place of the member rows.
func (m *Model) auditView() string {
	a := &m.side.audit
	lines := []string{" " + m.st.Accent.Render(clean(a.pool)) + m.st.Muted.Render(" · audit: recent actions on "+clean(engine.ConfigMapName(a.pool))+" (A or esc closes)")}
	switch {
	case m.opts.Events == nil:
		lines = append(lines, m.st.Muted.Render("  audit Events not available"))
	case a.loading:
		lines = append(lines, m.st.Muted.Render("  "+glyphSyncing+" loading…"))
	case a.err != nil:
		lines = append(lines, m.st.Error.Render("  "+glyphBad+" "+clean(a.err.Error())))
	case len(a.events) == 0:
		lines = append(lines, m.st.Muted.Render("  no audit Events (Events expire after an hour by default)"))
	default:
		lines = append(lines, "  "+m.st.ColumnHeader.Render(fmt.Sprintf("%-6s %-9s %-16s %s", "AGE", "RESULT", "ACTION", "WHAT")))
		for _, ev := range a.events {
			when := glyphNone
			if t := eventTime(ev); !t.IsZero() {
				when = short(m.now.Sub(t))
			}
			result := glyphOK + " ok"
			style := m.st.Text
			if ev.Type == corev1.EventTypeWarning {
				result, style = glyphBad+" failed", m.st.Error
			}
			action := orWord(ev.Annotations[auditAnnotation], orWord(ev.Action, ev.Reason))
			head := fmt.Sprintf("%-6s %-9s %-16s ", when, result, cut(clean(action), 16))
			for i, l := range wrap(clean(ev.Message), max(m.width-2-auditIndent, 20)) {
				if i > 0 {
					head = strings.Repeat(" ", auditIndent)
				}
				lines = append(lines, "  "+style.Render(head+l))
			}
		}
	}
	if h := m.bodyHeight(); len(lines) > h {
		lines = lines[:h]
	}
	for i := range lines {
		lines[i] = cut(lines[i], m.width)
	}
	return strings.Join(lines, "\n")
}
