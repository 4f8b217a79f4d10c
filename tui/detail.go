package tui

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// detailView is the open member's detail pane. Its Events load
// asynchronously; a response for an older request is dropped. They are read
// again when the member's Pod or PVC changed (at most every
// eventsRefreshEvery), since a change usually comes with new Events.
type detailView struct {
	pool    engine.PoolRef
	member  string
	req     int
	loading bool
	events  []corev1.Event
	err     error
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

func (d *detailView) setEvents(msg eventsMsg) {
	if msg.req != d.req {
		return
	}
	d.loading, d.events, d.err = false, msg.events, msg.err
}

// open shows another member and reads its Events.
func (d *detailView) open(ctx viewContext, pool engine.PoolRef, member string) tea.Cmd {
	*d = detailView{pool: pool, member: member, req: d.req + 1}
	src := ctx.reach.events(pool)
	if src == nil {
		return nil
	}
	return d.ask(ctx, src, memberVersions(ctx.pool(pool), member))
}

// refresh reads the pane's Events again when its member changed (stale).
// The Events shown stay until the answer comes.
func (d *detailView) refresh(ctx viewContext) tea.Cmd {
	src := ctx.reach.events(d.pool)
	if src == nil {
		return nil
	}
	cur := memberVersions(ctx.pool(d.pool), d.member)
	if !d.stale(cur, ctx.now) {
		return nil
	}
	return d.ask(ctx, src, cur)
}

// ask reads the pane's Events from src as request d.req, noting the
// member's versions and the time of asking.
func (d *detailView) ask(ctx viewContext, src EventSource, versions string) tea.Cmd {
	d.loading, d.versions, d.asked = true, versions, ctx.now
	return eventsCmd(ctx.reach.ctx, src, ctx.reach.namespaceOf(d.pool), d.member, engine.PVCName(d.member), d.req)
}

// stale reports whether the pane should read its Events again: the member
// changed since they were asked for (cur is its versions now), no read is in
// flight and eventsRefreshEvery has passed. It counts a new request.
func (d *detailView) stale(cur string, now time.Time) bool {
	if d.loading || now.Sub(d.asked) < eventsRefreshEvery || cur == d.versions {
		return false
	}
	d.req++
	return true
}

// memberVersions identifies the state of a member's Pod and PVC.
func memberVersions(v *engine.PoolView, member string) string {
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

// selected is the pane's member, or nil when it is gone.
func (d *detailView) selected(ctx viewContext) (*engine.PoolView, *engine.Member) {
	v := ctx.pool(d.pool)
	if v == nil {
		return nil, nil
	}
	return v, v.Member(d.member)
}

func (d *detailView) capturing() bool { return false }

// about is the pane's pool and member.
func (d *detailView) about(ctx viewContext) (engine.PoolRef, *engine.Member) {
	_, mm := d.selected(ctx)
	return d.pool, mm
}

// help is the member's actions, esc, ? and q.
func (d *detailView) help(ctx viewContext) []key.Binding {
	k := ctx.keys
	return append(k.actionsOn(screenDetail, ctx.pool(d.pool)), k.Back, k.Help, k.Quit)
}

// update takes the answer to an Events read, and esc; any other key may be
// an action on the member.
func (d *detailView) update(ctx viewContext, msg tea.Msg) (intent, tea.Cmd) {
	switch msg := msg.(type) {
	case eventsMsg:
		d.setEvents(msg)
	case tea.KeyMsg:
		if key.Matches(msg, ctx.keys.Back) {
			return showScreen{screenMembers}, nil
		}
		_, mm := d.selected(ctx)
		return actionKey{msg: msg, pool: d.pool, member: mm}, nil
	}
	return nil, nil
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

// view renders the member's objects, the diagnosis and the Events.
func (d *detailView) view(ctx viewContext) string {
	st := ctx.st
	v, mm := d.selected(ctx)
	if v == nil || mm == nil {
		return " " + st.Error.Render(render.GlyphBad+" "+sanitize.Sanitize(d.member)+" is gone") + st.Muted.Render("  (esc back)")
	}
	var lines []string
	textW := max(ctx.width-detailLabelWidth-1, 20)
	indent := strings.Repeat(" ", detailLabelWidth+1)
	addStyled := func(label string, labelStyle, textStyle lipgloss.Style, text string) {
		for i, l := range wrap(sanitize.Sanitize(text), textW) {
			if i == 0 {
				lines = append(lines, " "+labelStyle.Render(fmt.Sprintf("%-*s", detailLabelWidth, label))+textStyle.Render(l))
			} else {
				lines = append(lines, indent+textStyle.Render(l))
			}
		}
	}
	add := func(label, text string) { addStyled(label, st.ColumnHeader, st.Text, text) }
	name := mm.Name
	if ctx.fleet {
		name = fleetNamespace(v) + "/" + name // two namespaces may have a desk-1
	}
	lines = append(lines, " "+st.Accent.Render(sanitize.Sanitize(name))+" · "+ctx.level(memberLevel(mm)).Render(string(mm.State))+" · "+sanitize.Sanitize(claimSummary(mm, ctx.now)))
	lines = append(lines, "")
	add("Pod", podLine(mm, ctx.now))
	if mm.Pod != nil {
		add("", conditionsLine(mm.Pod))
	}
	if mm.NodeDown != "" {
		// The node's own words, untrusted: add sanitises them.
		addStyled("Node", st.ColumnHeader, ctx.level(levelWarn), mm.Node+" is down: "+mm.NodeDown)
	}
	if mm.NodeDraining {
		addStyled("Node", st.ColumnHeader, ctx.level(levelWarn), drainingLine(mm))
	}
	for _, h := range v.DrainHolds() {
		// The pool's claimed desktops on cordoned nodes, by node.
		addStyled("Drain", st.ColumnHeader, ctx.level(levelWarn), engine.DrainHoldText(h)+" ("+strings.Join(h.Members, ", ")+")")
	}
	add("PVC", pvcLine(mm))
	add("Lease", leaseLine(mm, ctx.now))
	add("Source", sourceLine(v, mm))
	if ro := render.Rollout(v, ctx.now); ro != nil && ro.State != render.RolloutDone {
		level := levelInfo
		if ro.State == render.RolloutHalted {
			level = levelError
		}
		addStyled("Rollout", st.ColumnHeader, ctx.level(level), render.RolloutText(v.Name, ro))
	}
	if marks := marksText(mm); marks != "" {
		add("Marks", marks)
	}
	for _, p := range mm.Problems {
		addStyled("Problem", st.Error, st.Error, p)
	}
	// The cluster's own words come first and whole (for an Unschedulable
	// member, the scheduler's message); the diagnosis follows on lines of its
	// own, and its evidence only when it is not that same message.
	dg := diagnose(v, mm, d.events, ctx.nodes, ctx.hints)
	if mm.Message != "" {
		add("Message", mm.Message)
	}
	if dg.Reason != "" || dg.ClaimID != "" {
		if dg.Reason != "" {
			addStyled("Reason", st.ColumnHeader, ctx.level(max(memberLevel(mm), levelInfo)), dg.Reason)
		}
		if dg.Fix != "" {
			add("Fix", dg.Fix)
		}
		if dg.Evidence != "" && dg.Evidence != mm.Message && dg.Evidence != mm.NodeDown {
			add("Evidence", dg.Evidence)
		}
		if dg.ClaimID != "" {
			add("Claim-id", dg.ClaimID)
		}
	}
	addStyled("Why", st.ColumnHeader, ctx.level(max(memberLevel(mm), levelInfo)), explainMember(v, mm, ctx.now, ctx.hints))
	if showTrend(ctx, v) {
		// The pool's trend (trend.go): recorded history and what the
		// dashboard saw, the rates and the forecast in words.
		lines = append(lines, "")
		for _, l := range trendLines(ctx, v, textW) {
			if l.raw {
				lines = append(lines, " "+st.ColumnHeader.Render(fmt.Sprintf("%-*s", detailLabelWidth, l.label))+st.Text.Render(l.text))
				continue
			}
			add(l.label, l.text)
		}
	}
	lines = append(lines, "")
	lines = append(lines, d.eventLines(ctx, ctx.height-len(lines))...)
	for i := range lines {
		lines[i] = sanitize.Cut(lines[i], ctx.width)
	}
	return strings.Join(lines, "\n")
}

func (d *detailView) eventLines(ctx viewContext, room int) []string {
	st := ctx.st
	label := " " + st.ColumnHeader.Render(fmt.Sprintf("%-*s", detailLabelWidth, "Events"))
	indent := strings.Repeat(" ", detailLabelWidth+1)
	switch {
	case ctx.reach.events(d.pool) == nil:
		return []string{label + st.Muted.Render("not available")}
	case d.loading && len(d.events) == 0 && d.err == nil:
		return []string{label + st.Muted.Render("loading…")}
	case d.err != nil && len(d.events) == 0:
		return []string{label + st.Error.Render(render.GlyphBad+" "+sanitize.Sanitize(d.err.Error()))}
	case len(d.events) == 0:
		return []string{label + st.Muted.Render("none")}
	}
	var out []string
	for i, ev := range d.events {
		if len(out) >= max(room, 1) {
			break
		}
		when := render.GlyphNone
		if t := eventTime(ev); !t.IsZero() {
			when = render.Duration(ctx.now.Sub(t))
		}
		kind := "pod"
		if ev.InvolvedObject.Kind == "PersistentVolumeClaim" {
			kind = "pvc"
		}
		typ := ev.Type
		if ev.Type == corev1.EventTypeWarning {
			typ = st.Warn.Render(render.GlyphWarn + " " + ev.Type)
		}
		count := ""
		if ev.Count > 1 {
			count = fmt.Sprintf(" (×%d)", ev.Count)
		}
		prefix := indent
		if i == 0 {
			prefix = label
		}
		out = append(out, fmt.Sprintf("%s%-5s %-3s %s  %s  %s%s", prefix, when, kind, typ, sanitize.Sanitize(ev.Reason), sanitize.Sanitize(ev.Message), count))
	}
	return out
}

// claimSummary is the first line's claim part.
func claimSummary(mm *engine.Member, now time.Time) string {
	switch {
	case mm.Claim != nil:
		c := mm.Claim
		s := "claimed by " + mm.Holder() + " since " + clock(now, c.Acquired)
		if c.Expires.IsZero() || !now.Before(c.Expires) {
			return s + " (" + render.GlyphBad + " expired " + render.Duration(now.Sub(c.Expires)) + " ago; protected until released)"
		}
		return s + " (" + render.Duration(c.Expires.Sub(now)) + " left)"
	case mm.InMaintenance():
		return render.GlyphMaint + " under maintenance by the reconciler"
	case mm.Free:
		return render.GlyphOK + " free"
	}
	return "not claimed"
}

func podLine(mm *engine.Member, now time.Time) string {
	p := mm.Pod
	if p == nil {
		return "none"
	}
	parts := []string{render.OrWord(string(p.Status.Phase), "Pending")}
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
		parts = append(parts, "age "+render.Duration(now.Sub(mm.Created)))
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
	parts := []string{c.Name, render.OrWord(string(c.Status.Phase), "Pending")}
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
	c := mm.LeaseRead()
	if mm.Lease == nil || c == nil {
		return "none (not claimed)"
	}
	parts := []string{mm.Lease.Name, "holder " + render.OrWord(c.Holder, "(none)"),
		"acquired " + clock(now, c.Acquired), "renewed " + clock(now, c.Renewed),
		fmt.Sprintf("%ds", int(c.Duration/time.Second))}
	if !c.Expires.IsZero() {
		if now.Before(c.Expires) {
			parts = append(parts, "expires "+clock(now, c.Expires))
		} else {
			parts = append(parts, render.GlyphBad+" expired "+clock(now, c.Expires))
		}
	}
	if c.Stale {
		parts = append(parts, "stale")
	}
	return strings.Join(parts, " · ")
}

func sourceLine(v *engine.PoolView, mm *engine.Member) string {
	src := render.OrWord(abbrevHash(mm.Source), "(no label)")
	switch {
	case v.Source == "":
		return src + " (the pool has no valid definition to compare with)"
	case mm.Drift && mm.Claimed:
		return src + " (pool is " + abbrevHash(v.Source) + " " + render.GlyphDrift + " drifted: replaced when released)"
	case mm.OldSource && v.RolloutHalted():
		return src + " (pool is " + abbrevHash(v.Source) + " " + render.GlyphDrift + " drifted: kept, serving, while the rollout is halted)"
	case mm.OldSource:
		return src + " (pool is " + abbrevHash(v.Source) + " " + render.GlyphDrift + " drifted: serving until the rollout replaces it)"
	case mm.Drift:
		return src + " (pool is " + abbrevHash(v.Source) + " " + render.GlyphDrift + " drifted: replaced at the next reconcile)"
	}
	return src + " (current)"
}

// drainingLine says what the drain of a member's cordoned node means for it.
func drainingLine(mm *engine.Member) string {
	if mm.Claimed {
		return mm.Node + " is cordoned (node draining): this claimed desktop is not evicted; the drain waits until its user releases it"
	}
	return mm.Node + " is cordoned (node draining): this free desktop may be evicted; a reconcile builds it again on another node"
}
