package tui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// sandboxdCluster is a sandboxd pool: one member placed on the virtual node
// (the provider wrote its claim-id), one whose toleration was removed so the
// scheduler cannot place it.
func sandboxdCluster() *cluster {
	c := &cluster{}
	rt := &engine.Runtime{Backend: engine.BackendSandboxd, Template: "ghcr.io/cocoonstack/sandbox/rt:24.04", Net: "none", Size: "small"}
	s := fixture.Spec("ghcr.io/cocoonstack/sandbox/rt:24.04", 2, rt)
	c.Pool("sbx", s, &engine.Status{UpdatedAt: fixture.PtrTime(t0.Add(-30 * time.Second))})
	p := c.Member("sbx", 1, s, fixture.OnNode("vk-sandbox-0"), fixture.Age(time.Hour))
	p.Annotations[engine.SandboxdAnnotationClaimID] = "claim-7f3a"
	c.Member("sbx", 2, s, fixture.Age(5*time.Minute), func(p *corev1.Pod) { p.Spec.Tolerations = nil },
		fixture.Unschedulable("0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {virtual-kubelet.io/provider: sandboxd}. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."))
	return c
}

func sandboxdNodes() []*corev1.Node {
	return []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"kubernetes.io/hostname": "node-a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "vk-sandbox-0", Labels: map[string]string{engine.SandboxdNodeLabel: "sandboxd", "type": "virtual-kubelet"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: engine.ProviderTaintKey, Value: "sandboxd", Effect: corev1.TaintEffectNoSchedule}}}},
	}
}

// schedulerEvents answers like the scheduler's FailedScheduling Event.
type schedulerEvents struct{}

func (schedulerEvents) Events(_ context.Context, _, kind, name string) ([]corev1.Event, error) {
	if kind != "Pod" {
		return nil, nil
	}
	return []corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Type: corev1.EventTypeWarning,
		Reason: "FailedScheduling", Count: 4, LastTimestamp: metav1.NewTime(t0.Add(-time.Minute)),
		Message: "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {virtual-kubelet.io/provider: sandboxd}."}}, nil
}

// auditSource answers the pool ConfigMap's Events: audit Events (one with
// hostile text) and one that is not ctpool-tui's.
type auditSource struct{}

func (auditSource) Events(_ context.Context, _, kind, name string) ([]corev1.Event, error) {
	ev := func(action, typ, msg string, ago time.Duration) corev1.Event {
		return corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Annotations: map[string]string{auditAnnotation: action}},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Type: typ, Reason: action,
			Source: corev1.EventSource{Component: auditComponent}, Message: msg, LastTimestamp: metav1.NewTime(t0.Add(-ago)),
		}
	}
	other := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Type: corev1.EventTypeNormal,
		Reason: "Updated", Message: "not an audit event", LastTimestamp: metav1.NewTime(t0)}
	return []corev1.Event{
		ev("reconcile", corev1.EventTypeNormal, "reconcile by admin@example.com — ok", 40*time.Minute),
		other,
		ev("force-release", corev1.EventTypeNormal, "force-release by admin@example.com: member desk-2, previous holder \"\x1b]52;c;cm0gLXJmIH4=\x07bob\u202Egnp.exe\x1b[2J\" — ok", 3*time.Minute),
		ev("resize", corev1.EventTypeWarning, "resize by operator@example.com, size 5 → 9 — failed: exceeded quota\r\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\\x07\b", 10*time.Minute),
	}, nil
}

// operatorCaps is what the API server answers for the operator role.
var operatorCaps = []engine.Capability{
	{Action: "reconcile", Allowed: true}, {Action: "resize", Allowed: true},
	{Action: "force-release", Missing: &engine.PermForceRelease},
	{Action: "delete", Missing: &engine.Permission{Resource: "configmaps", Verb: "delete"}},
}

type fakeAccess struct{ asked []engine.Action }

// Capabilities answers operatorCaps for the actions asked, as the API
// server answers only what it is asked.
func (f *fakeAccess) Capabilities(_ context.Context, actions []engine.Action) ([]engine.Capability, error) {
	f.asked = actions
	var out []engine.Capability
	for _, c := range operatorCaps {
		if slices.Contains(actions, c.Action) {
			out = append(out, c)
		}
	}
	return out, nil
}

// drive sends keys, feeding back Events answers.
func drive(m *Model, keys ...string) {
	for _, k := range keys {
		_, cmd := m.Update(keyMsg(k))
		if cmd == nil {
			continue
		}
		switch msg := cmd().(type) {
		case eventsMsg, auditMsg:
			m.Update(msg)
		}
	}
}

func TestGoldenDiagnosisAccessAudit(t *testing.T) {
	tests := []struct {
		name  string
		c     func() *cluster
		o     testOpts
		setup func(m *Model, d *fakeData)
		keys  []string
	}{
		{name: "diagnosis_sandboxd_toleration_120x40", c: sandboxdCluster, o: testOpts{events: schedulerEvents{}},
			setup: func(m *Model, _ *fakeData) { m.Update(nodesMsg{nodes: sandboxdNodes()}) }, keys: []string{"enter", "down", "enter"}},
		{name: "diagnosis_members_120x40", c: sandboxdCluster,
			setup: func(m *Model, _ *fakeData) { m.Update(nodesMsg{nodes: sandboxdNodes()}) }, keys: []string{"enter", "down"}},
		{name: "diagnosis_claim_id_120x40", c: sandboxdCluster, o: testOpts{events: schedulerEvents{}}, keys: []string{"enter", "enter"}},
		{name: "help_unavailable_120x40", c: fixture.Demo,
			setup: func(m *Model, _ *fakeData) { m.Update(capsMsg{caps: operatorCaps}) }, keys: []string{"down", "enter", "?"}},
		{name: "members_unavailable_120x40", c: fixture.Demo,
			setup: func(m *Model, _ *fakeData) { m.Update(capsMsg{caps: operatorCaps}) }, keys: []string{"down", "enter", "down", "f"}},
		{name: "audit_120x40", c: fixture.Demo, o: testOpts{events: auditSource{}}, keys: []string{"down", "enter", "A"}},
		{name: "disconnected_120x40", c: fixture.Demo, setup: disconnect, keys: []string{"down", "enter", "r"}},
		{name: "disconnected_80x24", c: fixture.Demo, o: testOpts{width: 80, height: 24}, setup: disconnect},
		{name: "credentials_refused_120x40", c: fixture.Demo, setup: refuseCredentials, keys: []string{"down", "enter", "r"}},
		{name: "credentials_refused_wall_80x24", c: fixture.Demo, o: testOpts{width: 80, height: 24, readOnly: true}, setup: refuseCredentials},
		{name: "hostile_detail_diagnosis_120x40", c: fixture.Hostile, o: testOpts{events: &fakeEvents{}}, keys: []string{"enter", "down", "enter"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.actions = &fakeActions{}
			if tt.o.width == 0 {
				tt.o.width, tt.o.height = 120, 40
			}
			m, d := newTestModel(t, tt.c(), tt.o)
			if tt.setup != nil {
				tt.setup(m, d)
			}
			drive(m, tt.keys...)
			got := m.View()
			checkScreen(t, got, tt.o.width, tt.o.height)
			assertHarmless(t, got)
			golden(t, tt.name, got)
		})
	}
}

// disconnect makes the data source report a failed probe 47 s after the
// last sync, and delivers it with a tick.
func disconnect(m *Model, d *fakeData) {
	d.mu.Lock()
	d.lastSync, d.errAt, d.err = t0.Add(-47*time.Second), t0.Add(-2*time.Second), errors.New("Get \"https://127.0.0.1:6443/livez\": dial tcp: connection refused")
	d.mu.Unlock()
	m.Update(healthMsg{health: readHealth(d)})
}

// refuseCredentials makes the data source report the API server's 401
// (the text of which is the server's, untrusted) after data 47s old.
func refuseCredentials(m *Model, d *fakeData) {
	d.mu.Lock()
	d.lastSync, d.errAt = t0.Add(-47*time.Second), t0.Add(-2*time.Second)
	d.err = &kube.CredentialsError{Err: apierrors.NewUnauthorized("token revoked\x1b]52;c;aGk=\x07")}
	d.mu.Unlock()
	m.Update(healthMsg{health: readHealth(d)})
}

// The header and the wall name a refusal of the credentials (not a
// disconnection), actions say why they cannot run, and the next success
// clears it.
func TestCredentialsRefusedShownAndCleared(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		m, d := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}, readOnly: readOnly})
		refuseCredentials(m, d)
		if h := header(m); !strings.Contains(h, render.GlyphBad+" credentials refused · data 47s old") || strings.Contains(h, "live") {
			t.Fatalf("read-only %v: header = %q", readOnly, h)
		}
		if !readOnly {
			_, cmd := m.Update(keyMsg("r"))
			if cmd != nil || !strings.Contains(m.acts.note, "credentials refused: ") {
				t.Fatalf("reconcile while refused: cmd %v, note %q", cmd != nil, m.acts.note)
			}
		}
		d.mu.Lock()
		d.lastSync = t0.Add(-time.Second) // the next probe with good credentials
		d.mu.Unlock()
		m.Update(healthMsg{health: readHealth(d)})
		if h := header(m); strings.Contains(h, "refused") || !strings.Contains(h, "live") {
			t.Fatalf("read-only %v: header after recovery = %q", readOnly, h)
		}
	}
	forbidden := health{synced: true, lastSync: t0.Add(-time.Minute), errAt: t0, err: kube.MapError(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")))}
	if got, level := forbidden.connState(t0, t0.Add(-time.Hour), true); got != render.GlyphBad+" forbidden · data 1m old" || level != levelError {
		t.Fatalf("403: %q (level %d)", got, level)
	}
}

// assertHarmless fails when a screen holds anything but SGR-free text.
func assertHarmless(t *testing.T, s string) {
	t.Helper()
	for _, r := range s {
		if r == 0x1b || r == 0x07 || r == '\b' || r == '\r' || (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0) ||
			(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Fatalf("screen holds control character %U", r)
		}
	}
}

func TestCapabilitiesAskedAtStartNotInReadOnly(t *testing.T) {
	fa := &fakeAccess{}
	m := newModel(context.Background(), Options{Data: newFakeData(nil), Now: func() time.Time { return t0 }, Resolver: &resolver{access: fa}})
	msg := waitMsg[capsMsg](t, m.Init())
	if !slices.Equal(fa.asked, ActionNames) {
		t.Fatalf("asked %v, want %v", fa.asked, ActionNames)
	}
	m.Update(msg)
	// fakeAccess answers only what it was asked: force-release (x and f) is
	// refused because ActionNames asks for it.
	if why := m.refusal(tableAction(t, "force-release"), poolRefIn(m, "desk")); !strings.Contains(why, "needs force-release leases.coordination.k8s.io") {
		t.Fatalf("refusal = %q", why)
	}
	if why := m.refusal(tableAction(t, "reconcile"), poolRefIn(m, "desk")); why != "" {
		t.Fatalf("reconcile refused: %q", why)
	}

	ro := &fakeAccess{}
	m = newModel(context.Background(), Options{Data: newFakeData(nil), ReadOnly: true, Now: func() time.Time { return t0 }, Resolver: &resolver{access: ro}})
	for _, c := range m.startCmds() {
		if _, ok := c().(capsMsg); ok {
			t.Fatal("read-only mode asked for capabilities")
		}
	}
}

// ActionNames asks for exactly the kinds of the action keys: no key goes
// unchecked, and no action the dashboard does not offer is asked.
func TestActionNamesAreTheActionKeys(t *testing.T) {
	k := newKeyMap(false, nil)
	var kinds []engine.Action
	for _, ab := range k.actions {
		if !slices.Contains(kinds, ab.act.kind) {
			kinds = append(kinds, ab.act.kind)
		}
	}
	want, got := slices.Sorted(slices.Values(kinds)), slices.Sorted(slices.Values(ActionNames))
	if !slices.Equal(got, want) {
		t.Fatalf("ActionNames %v, the action keys' kinds %v", got, want)
	}
	for _, name := range []string{"x", "f"} {
		if a := k.actionFor(keyMsg(name)); a == nil || a.kind != engine.ActionForceRelease {
			t.Errorf("%s is %+v, want a force-release", name, a)
		}
	}
}

func TestUnavailableKeyShowsReasonWithoutDialogOrCall(t *testing.T) {
	acts := &fakeActions{}
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: acts})
	m.Update(capsMsg{caps: operatorCaps})
	drive(m, "down", "enter", "down") // desk-2: claim expired
	_, cmd := m.Update(keyMsg("f"))
	if cmd != nil || m.dialog != nil {
		t.Fatalf("f opened a dialog or returned a Cmd (dialog %v)", m.dialog != nil)
	}
	if !strings.Contains(m.acts.note, "needs force-release leases.coordination.k8s.io") {
		t.Fatalf("note = %q", m.acts.note)
	}
	drive(m, "esc", "D")
	if m.dialog != nil || !strings.Contains(m.acts.note, "needs delete configmaps") {
		t.Fatalf("D: dialog %v, note %q", m.dialog != nil, m.acts.note)
	}
	// An allowed action still runs.
	_, cmd = m.Update(keyMsg("r"))
	if cmd == nil {
		t.Fatal("reconcile is allowed but returned no Cmd")
	}
	if n := len(acts.Calls()); n != 0 {
		t.Fatalf("%d calls before the Cmd ran", n)
	}
}

func TestDisconnectedRefusesActionsAndRecovers(t *testing.T) {
	acts := &fakeActions{}
	m, d := newTestModel(t, fixture.Demo(), testOpts{actions: acts})
	rebuilds := m.feed.rebuilds
	disconnect(m, d)
	if m.feed.rebuilds != rebuilds {
		t.Fatal("a health update rebuilt the views")
	}
	if h := header(m); !strings.Contains(h, "disconnected · data 47s old") {
		t.Fatalf("header = %q", h)
	}
	for _, k := range []string{"r", "s", "D"} {
		_, cmd := m.Update(keyMsg(k))
		if cmd != nil || m.dialog != nil || !strings.Contains(m.acts.note, unreachable) {
			t.Fatalf("%s while disconnected: cmd %v, dialog %v, note %q", k, cmd != nil, m.dialog != nil, m.acts.note)
		}
	}
	// A dialog opened before the outage refuses at confirm too.
	m.feed.health = health{synced: true, lastSync: t0}
	drive(m, "s", "9", "enter")
	disconnect(m, d)
	drive(m, "tab", "enter")
	if len(m.acts.running) != 0 {
		t.Fatal("an action started while disconnected")
	}
	// Recovery: the next probe advances LastSync past the error.
	d.mu.Lock()
	d.lastSync = t0.Add(time.Second)
	d.mu.Unlock()
	_, cmd := m.Update(tickMsg(t0.Add(2 * time.Second)))
	m.Update(waitMsg[healthMsg](t, cmd))
	if h := header(m); !strings.Contains(h, "live · synced") {
		t.Fatalf("header after recovery = %q", h)
	}
	if why := m.refusal(tableAction(t, "reconcile"), poolRefIn(m, "desk")); why != "" {
		t.Fatalf("still refused after recovery: %q", why)
	}
}

func TestHeaderAgeAdvancesOnTicksInQuietNamespace(t *testing.T) {
	m, d := newTestModel(t, fixture.Demo(), testOpts{})
	d.mu.Lock()
	d.lastSync = t0
	d.mu.Unlock()
	rebuilds := m.feed.rebuilds
	for i := 1; i <= 7; i++ {
		_, cmd := m.Update(tickMsg(t0.Add(time.Duration(i) * time.Second)))
		m.Update(waitMsg[healthMsg](t, cmd))
	}
	if h := header(m); !strings.Contains(h, "synced 7s ago") {
		t.Fatalf("header = %q", h)
	}
	if m.feed.rebuilds != rebuilds {
		t.Fatalf("ticks rebuilt the views %d times", m.feed.rebuilds-rebuilds)
	}
}

func TestAuditListsOnlyAuditEventsNewestFirst(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{events: auditSource{}})
	drive(m, "down", "enter")
	_, cmd := m.Update(keyMsg("A"))
	msg := waitMsg[auditMsg](t, cmd)
	if len(msg.events) != 3 {
		t.Fatalf("%d audit events, want 3", len(msg.events))
	}
	if msg.events[0].Annotations[auditAnnotation] != "force-release" {
		t.Fatalf("newest is %q", msg.events[0].Annotations[auditAnnotation])
	}
	m.Update(msg)
	m.Update(keyMsg("esc"))
	if m.members.audit.open || m.screen != screenMembers {
		t.Fatalf("esc: audit open %v, screen %v", m.members.audit.open, m.screen)
	}
}

// failingAccess fails until ok is set.
type failingAccess struct{ ok bool }

func (f *failingAccess) Capabilities(_ context.Context, _ []engine.Action) ([]engine.Capability, error) {
	if !f.ok {
		return nil, errors.New("connection refused")
	}
	return operatorCaps, nil
}

func TestCapabilitiesAskedAgainAfterOutage(t *testing.T) {
	fa := &failingAccess{}
	m, d := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}})
	wire(m).access = fa
	m.Update(waitMsg[capsMsg](t, capsCmd(context.Background(), fa)))
	if m.side.capsErr == nil {
		t.Fatal("no capabilities error recorded")
	}
	disconnect(m, d)
	fa.ok = true
	_, cmd := m.Update(healthMsg{health: health{synced: true, lastSync: t0}})
	m.Update(waitMsg[capsMsg](t, cmd))
	if why := m.refusal(tableAction(t, "force-release"), poolRefIn(m, "desk")); !strings.Contains(why, "needs force-release") {
		t.Fatalf("after recovery: refusal %q", why)
	}
}

func TestDetailRefreshesNodes(t *testing.T) {
	m, _ := newTestModel(t, sandboxdCluster(), testOpts{})
	m.opts.Nodes = staticNodes(sandboxdNodes())
	drive(m, "enter", "down")
	_, cmd := m.Update(keyMsg("enter"))
	m.Update(waitMsg[nodesMsg](t, cmd))
	if v := m.View(); !strings.Contains(v, "taint not tolerated: virtual-kubelet.io/provider=sandboxd:NoSchedule on vk-sandbox-0") {
		t.Fatalf("detail without the nodes' diagnosis:\n%s", v)
	}
}

type staticNodes []*corev1.Node

func (s staticNodes) Nodes(context.Context) ([]*corev1.Node, error) { return s, nil }

func TestAuditRefreshedAfterAnAction(t *testing.T) {
	m, _ := newTestModel(t, fixture.Demo(), testOpts{actions: &fakeActions{}, events: auditSource{}})
	drive(m, "down", "enter", "A")
	if len(m.members.audit.events) != 3 {
		t.Fatalf("%d audit events", len(m.members.audit.events))
	}
	_, cmd := m.Update(keyMsg("r"))
	_, cmd = m.Update(waitMsg[actionDoneMsg](t, cmd))
	msg := waitMsg[auditMsg](t, cmd)
	if msg.req != m.members.audit.req {
		t.Fatalf("refresh answered request %d, want %d", msg.req, m.members.audit.req)
	}
	// Closed: no refresh.
	m.Update(keyMsg("A"))
	_, cmd = m.Update(keyMsg("r"))
	if _, cmd = m.Update(waitMsg[actionDoneMsg](t, cmd)); cmd != nil {
		t.Fatal("a closed audit list was re-read")
	}
}
