package tui

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// detailModel is the open member detail pane. Its Events load
// asynchronously; a response for an older request is dropped. They are read
// again when the member's Pod or PVC changed (at most every
// eventsRefreshEvery), since a change usually comes with new Events.
type detailModel struct {
	pool, member string
	req          int
	loading      bool
	events       []corev1.Event
	err          error
	// versions are the member's Pod and PVC resourceVersions when the
	// Events were last asked for, at asked.
	versions string
	asked    time.Time
}

// eventsRefreshEvery bounds how often an open pane reads its Events again.
const eventsRefreshEvery = 5 * time.Second

// eventsMsg answers an events request.
type eventsMsg struct {
	req    int
	events []corev1.Event
	err    error
}

// eventsTimeout bounds one Events read.
const eventsTimeout = 15 * time.Second

// eventsCmd reads the Events of a member's Pod and PVC, newest first.
func eventsCmd(ctx context.Context, src EventSource, namespace, pod, pvc string, req int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, eventsTimeout)
		defer cancel()
		var all []corev1.Event
		for _, o := range []struct{ kind, name string }{{"Pod", pod}, {"PersistentVolumeClaim", pvc}} {
			evs, err := src.Events(ctx, namespace, o.kind, o.name)
			if err != nil {
				return eventsMsg{req: req, events: all, err: err}
			}
			all = append(all, evs...)
		}
		sort.SliceStable(all, func(i, j int) bool { return eventTime(all[i]).After(eventTime(all[j])) })
		return eventsMsg{req: req, events: all}
	}
}

func (d *detailModel) setEvents(msg eventsMsg) {
	if msg.req != d.req {
		return
	}
	d.loading, d.events, d.err = false, msg.events, msg.err
}

// openDetail shows a member's details and starts loading its Events.
func (m *Model) openDetail(pool, member string) tea.Cmd {
	m.detail = detailModel{pool: pool, member: member, req: m.detail.req + 1}
	m.screen = screenDetail
	// The nodes may have changed since start (a virtual node came up).
	var nodes tea.Cmd
	if !m.side.noNodes {
		nodes = nodesCmd(m.ctx, m.opts.Nodes)
	}
	if m.opts.Events == nil {
		return nodes
	}
	return tea.Batch(m.askEvents(m.memberVersions(pool, member)), nodes)
}

// askEvents reads the open pane's Events as request d.req, noting the
// member's versions and the time of asking.
func (m *Model) askEvents(versions string) tea.Cmd {
	d := &m.detail
	d.loading, d.versions, d.asked = true, versions, m.now
	return eventsCmd(m.ctx, m.opts.Events, m.namespaceOf(d.pool), d.member, engine.PVCName(d.member), d.req)
}

// memberVersions identifies the state of a member's Pod and PVC.
func (m *Model) memberVersions(pool, member string) string {
	v := m.view(pool)
	if v == nil {
		return ""
	}
	mm := v.Member(member)
	if mm == nil {
		return ""
	}
	var pod, pvc string
	if mm.Pod != nil {
		pod = string(mm.Pod.UID) + "@" + mm.Pod.ResourceVersion
	}
	if mm.PVC != nil {
		pvc = string(mm.PVC.UID) + "@" + mm.PVC.ResourceVersion
	}
	return pod + "/" + pvc
}

// refreshEvents reads the open pane's Events again when its member changed
// since they were asked for, no read is in flight and eventsRefreshEvery
// has passed. The Events shown stay until the answer comes.
func (m *Model) refreshEvents() tea.Cmd {
	d := &m.detail
	if m.screen != screenDetail || m.opts.Events == nil || d.loading || m.now.Sub(d.asked) < eventsRefreshEvery {
		return nil
	}
	cur := m.memberVersions(d.pool, d.member)
	if cur == d.versions {
		return nil
	}
	d.req++
	return m.askEvents(cur)
}

func eventTime(ev corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.FirstTimestamp.IsZero():
		return ev.FirstTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}

// detailLabelWidth is the width of the labels on the left of the pane.
const detailLabelWidth = 9

func (m *Model) detailView() string {
	d := &m.detail
	v := m.view(d.pool)
	mm := m.members.lookup(d.member)
	if v == nil || mm == nil {
		return " " + m.st.Error.Render(glyphBad+" "+clean(d.member)+" is gone") + m.st.Muted.Render("  (esc back)")
	}
	var lines []string
	textW := max(m.width-detailLabelWidth-1, 20)
	indent := strings.Repeat(" ", detailLabelWidth+1)
	addStyled := func(label string, labelStyle, textStyle lipgloss.Style, text string) {
		for i, l := range wrap(clean(text), textW) {
			if i == 0 {
				lines = append(lines, " "+labelStyle.Render(fmt.Sprintf("%-*s", detailLabelWidth, label))+textStyle.Render(l))
			} else {
				lines = append(lines, indent+textStyle.Render(l))
			}
		}
	}
	add := func(label, text string) { addStyled(label, m.st.ColumnHeader, m.st.Text, text) }
	lines = append(lines, " "+m.st.Accent.Render(clean(mm.Name))+" · "+m.levelStyle(memberLevel(mm)).Render(string(mm.State))+" · "+clean(m.claimSummary(mm)))
	lines = append(lines, "")
	add("Pod", podLine(mm, m.now))
	if mm.Pod != nil {
		add("", conditionsLine(mm.Pod))
	}
	add("PVC", pvcLine(mm))
	add("Lease", leaseLine(mm, m.now))
	add("Source", sourceLine(v, mm))
	if marks := marksText(mm); marks != "" {
		add("Marks", marks)
	}
	for _, p := range mm.Problems {
		addStyled("Problem", m.st.Error, m.st.Error, p)
	}
	// The cluster's own words come first and whole (for an Unschedulable
	// member, the scheduler's message); the diagnosis follows on lines of its
	// own, and its evidence only when it is not that same message.
	dg := diagnose(v, mm, m.detail.events, m.side.nodes)
	if mm.Message != "" {
		add("Message", mm.Message)
	}
	if dg.Reason != "" || dg.ClaimID != "" {
		if dg.Reason != "" {
			addStyled("Reason", m.st.ColumnHeader, m.levelStyle(max(memberLevel(mm), levelInfo)), dg.Reason)
		}
		if dg.Fix != "" {
			add("Fix", dg.Fix)
		}
		if dg.Evidence != "" && dg.Evidence != mm.Message {
			add("Evidence", dg.Evidence)
		}
		if dg.ClaimID != "" {
			add("Claim-id", dg.ClaimID)
		}
	}
	addStyled("Why", m.st.ColumnHeader, m.levelStyle(max(memberLevel(mm), levelInfo)), explainMember(v, mm, m.now, m.opts.Actions != nil))
	lines = append(lines, "")
	lines = append(lines, m.eventLines(m.bodyHeight()-len(lines))...)
	for i := range lines {
		lines[i] = cut(lines[i], m.width)
	}
	return strings.Join(lines, "\n")
}

func (m *Model) eventLines(room int) []string {
	d := &m.detail
	label := " " + m.st.ColumnHeader.Render(fmt.Sprintf("%-*s", detailLabelWidth, "Events"))
	indent := strings.Repeat(" ", detailLabelWidth+1)
	switch {
	case m.opts.Events == nil:
		return []string{label + m.st.Muted.Render("not available")}
	case d.loading && len(d.events) == 0 && d.err == nil:
		return []string{label + m.st.Muted.Render("loading…")}
	case d.err != nil && len(d.events) == 0:
		return []string{label + m.st.Error.Render(glyphBad+" "+clean(d.err.Error()))}
	case len(d.events) == 0:
		return []string{label + m.st.Muted.Render("none")}
	}
	var out []string
	for i, ev := range d.events {
		if len(out) >= max(room, 1) {
			break
		}
		when := glyphNone
		if t := eventTime(ev); !t.IsZero() {
			when = short(m.now.Sub(t))
		}
		kind := "pod"
		if ev.InvolvedObject.Kind == "PersistentVolumeClaim" {
			kind = "pvc"
		}
		typ := ev.Type
		if ev.Type == corev1.EventTypeWarning {
			typ = m.st.Warn.Render(glyphWarn + " " + ev.Type)
		}
		count := ""
		if ev.Count > 1 {
			count = fmt.Sprintf(" (×%d)", ev.Count)
		}
		prefix := indent
		if i == 0 {
			prefix = label
		}
		out = append(out, fmt.Sprintf("%s%-5s %-3s %s  %s  %s%s", prefix, when, kind, typ, clean(ev.Reason), clean(ev.Message), count))
	}
	return out
}

// claimSummary is the first line's claim part.
func (m *Model) claimSummary(mm *engine.Member) string {
	switch {
	case mm.Claimed && mm.Claim != nil:
		c := mm.Claim
		s := "claimed by " + mm.Holder() + " since " + clock(m.now, c.Acquired)
		if c.Expires.IsZero() || !m.now.Before(c.Expires) {
			return s + " (" + glyphBad + " expired " + short(m.now.Sub(c.Expires)) + " ago; protected until released)"
		}
		return s + " (" + short(c.Expires.Sub(m.now)) + " left)"
	case mm.Maintenance:
		return glyphMaint + " under maintenance by the reconciler"
	case mm.Free:
		return glyphOK + " free"
	}
	return "not claimed"
}

func podLine(mm *engine.Member, now time.Time) string {
	p := mm.Pod
	if p == nil {
		return "none"
	}
	parts := []string{orWord(string(p.Status.Phase), "Pending")}
	if mm.Node != "" {
		parts[0] += " on " + mm.Node
	}
	ready := "Ready=False"
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = "Ready=" + string(c.Status)
		}
	}
	restarts := int32(0)
	for _, cs := range p.Status.ContainerStatuses {
		restarts += cs.RestartCount
	}
	parts = append(parts, ready, fmt.Sprintf("restarts %d", restarts))
	for _, c := range p.Spec.Containers {
		if c.Name == engine.ContainerName {
			parts = append(parts, "image "+c.Image)
		}
	}
	if !mm.Created.IsZero() {
		parts = append(parts, "age "+short(now.Sub(mm.Created)))
	}
	if p.DeletionTimestamp != nil {
		parts = append(parts, "deleting since "+clock(now, p.DeletionTimestamp.Time))
	}
	return strings.Join(parts, " · ")
}

func conditionsLine(p *corev1.Pod) string {
	if len(p.Status.Conditions) == 0 {
		return "no conditions"
	}
	var parts []string
	for _, c := range p.Status.Conditions {
		s := string(c.Type) + "=" + string(c.Status)
		if c.Status != corev1.ConditionTrue && c.Reason != "" {
			s += " (" + c.Reason + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func pvcLine(mm *engine.Member) string {
	c := mm.PVC
	if c == nil {
		return engine.PVCName(mm.Name) + " · missing"
	}
	parts := []string{c.Name, orWord(string(c.Status.Phase), "Pending")}
	if q, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
		parts = append(parts, q.String())
	} else if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		parts = append(parts, q.String()+" requested")
	}
	if c.Spec.StorageClassName != nil {
		parts = append(parts, *c.Spec.StorageClassName)
	} else {
		parts = append(parts, "default class")
	}
	if a := c.Annotations[engine.AnnotationAssignedTo]; a != "" {
		parts = append(parts, "assigned to "+a)
	}
	return strings.Join(parts, " · ")
}

func leaseLine(mm *engine.Member, now time.Time) string {
	if mm.Lease == nil || mm.Claim == nil {
		return "none (not claimed)"
	}
	c := mm.Claim
	parts := []string{mm.Lease.Name, "holder " + orWord(c.Holder, "(none)"),
		"acquired " + clock(now, c.Acquired), "renewed " + clock(now, c.Renewed),
		fmt.Sprintf("%ds", int(c.Duration/time.Second))}
	if !c.Expires.IsZero() {
		if now.Before(c.Expires) {
			parts = append(parts, "expires "+clock(now, c.Expires))
		} else {
			parts = append(parts, glyphBad+" expired "+clock(now, c.Expires))
		}
	}
	if c.Stale {
		parts = append(parts, "stale")
	}
	return strings.Join(parts, " · ")
}

func sourceLine(v *engine.PoolView, mm *engine.Member) string {
	src := orWord(abbrevHash(mm.Source), "(no label)")
	switch {
	case v.Source == "":
		return src + " (the pool has no valid definition to compare with)"
	case mm.Drift && mm.Claimed:
		return src + " (pool is " + abbrevHash(v.Source) + " " + glyphDrift + " drifted: replaced when released)"
	case mm.Drift:
		return src + " (pool is " + abbrevHash(v.Source) + " " + glyphDrift + " drifted: replaced at the next reconcile)"
	}
	return src + " (current)"
}
