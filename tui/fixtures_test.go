package tui

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// The fixture's namespace and time, and its cluster of objects.
const ns = fixture.Namespace

var t0 = fixture.T0

type cluster = fixture.Cluster

// fakeData is a DataSource over fixed snapshots; it counts loads.
type fakeData struct {
	mu       sync.Mutex
	snaps    []engine.Snapshot
	ch       chan struct{}
	synced   bool
	lastSync time.Time
	errAt    time.Time
	err      error
	loads    atomic.Int64
	onLoad   func() // called at each Snapshots, under no lock
}

func newFakeData(snaps []engine.Snapshot) *fakeData {
	return &fakeData{snaps: snaps, ch: make(chan struct{}, 1), synced: true, lastSync: t0.Add(-2 * time.Second)}
}

func (f *fakeData) Changed() <-chan struct{} { return f.ch }
func (f *fakeData) Snapshots() []engine.Snapshot {
	f.loads.Add(1)
	if f.onLoad != nil {
		f.onLoad()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snaps
}
func (f *fakeData) Synced() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.synced }
func (f *fakeData) LastSync() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastSync
}
func (f *fakeData) LastWatchError() (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.errAt, f.err
}

// signal is what an informer handler does: a non-blocking send.
func (f *fakeData) signal() {
	select {
	case f.ch <- struct{}{}:
	default:
	}
}

// call is one recorded Actions call.
type call struct {
	op, pool, member, identity string
	size                       int
}

// fakeActions records calls and returns err (when set).
type fakeActions struct {
	mu    sync.Mutex
	calls []call
	err   error
}

func (f *fakeActions) record(c call) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return f.err
}

func (f *fakeActions) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func (f *fakeActions) Reconcile(_ context.Context, pool string) (engine.ReconcileResult, error) {
	err := f.record(call{op: "reconcile", pool: pool})
	return engine.ReconcileResult{Actions: []engine.MemberAction{{Member: pool + "-1"}}}, err
}
func (f *fakeActions) ForceRelease(_ context.Context, pool, member string) (engine.ReleaseResult, error) {
	err := f.record(call{op: "force-release", pool: pool, member: member})
	return engine.ReleaseResult{Member: member, PreviousHolder: "bob@example.com", Recreated: true}, err
}
func (f *fakeActions) Resize(_ context.Context, pool string, size int) (engine.ReconcileResult, error) {
	err := f.record(call{op: "resize", pool: pool, size: size})
	return engine.ReconcileResult{}, err
}
func (f *fakeActions) ResumeRollout(_ context.Context, pool string) (engine.ReconcileResult, error) {
	return engine.ReconcileResult{}, f.record(call{op: "resume", pool: pool})
}
func (f *fakeActions) Delete(_ context.Context, pool string) (engine.DeleteResult, error) {
	return engine.DeleteResult{}, f.record(call{op: "delete", pool: pool})
}

// fakeEvents returns fixed Events per object.
type fakeEvents struct {
	calls atomic.Int64
}

func (f *fakeEvents) Events(_ context.Context, namespace, kind, name string) ([]corev1.Event, error) {
	f.calls.Add(1)
	if kind == "PersistentVolumeClaim" {
		return []corev1.Event{{
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Type: corev1.EventTypeNormal,
			Reason: "ProvisioningSucceeded", Message: "Successfully provisioned volume pvc-1234",
			LastTimestamp: metav1.NewTime(t0.Add(-2 * time.Hour)),
		}}, nil
	}
	return []corev1.Event{
		{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Type: corev1.EventTypeNormal, Reason: "Pulled",
			Message: "Container image \"ghcr.io/example/desktop:2\" already present on machine", LastTimestamp: metav1.NewTime(t0.Add(-2 * time.Minute))},
		{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Type: corev1.EventTypeWarning, Reason: "BackOff", Count: 3,
			Message: "Back-off pulling image \x1b[31m\"evil\"\x1b[0m", LastTimestamp: metav1.NewTime(t0.Add(-90 * time.Minute))},
	}, nil
}

type testOpts struct {
	readOnly bool
	width    int
	height   int
	actions  Actions
	events   EventSource
	// The settings: keys rebound, where read-only comes from, the wall's
	// layout.
	keys        map[string][]string
	readOnlyWhy string
	wall        WallLayout
	ascii       bool
	clipboard   func(string) error
}

// newTestModel builds a model at a fixed size and time, with the data loaded.
func newTestModel(t testing.TB, c *cluster, o testOpts) (*Model, *fakeData) {
	t.Helper()
	if o.width == 0 {
		o.width, o.height = 120, 40
	}
	data := newFakeData(c.Snapshots())
	m := newModel(context.Background(), Options{
		Context: "prod-eu", Namespace: ns, ReadOnly: o.readOnly, Theme: themes.Dark(),
		Renderer: themes.NoColorRenderer(io.Discard), Now: func() time.Time { return t0 },
		Data: data, Resolver: &resolver{actions: o.actions, events: o.events},
		Keys: o.keys, ReadOnlyWhy: o.readOnlyWhy, Wall: o.wall, ASCII: o.ascii, Clipboard: o.clipboard,
	})
	m.Update(tea.WindowSizeMsg{Width: o.width, Height: o.height})
	m.Update(loadCmd(data, func() time.Time { return t0 })())
	m.Update(tickMsg(t0))
	return m, data
}

// resolver is the Resolver of the tests: the same actions, access, Events,
// logs and console everywhere (nil: not wired), or per context and
// namespace through actionsIn and accessIn.
type resolver struct {
	actions   Actions
	access    Access
	events    EventSource
	logs      LogSource
	console   ConsoleRunner
	actionsIn func(kctx, ns string) Actions
	accessIn  func(kctx, ns string) Access
}

func (r *resolver) Actions(kctx, ns string) Actions {
	if r.actionsIn != nil {
		return r.actionsIn(kctx, ns)
	}
	return r.actions
}

func (r *resolver) Access(kctx, ns string) Access {
	if r.accessIn != nil {
		return r.accessIn(kctx, ns)
	}
	return r.access
}

func (r *resolver) Events(string) EventSource    { return r.events }
func (r *resolver) Logs(string) LogSource        { return r.logs }
func (r *resolver) Console(string) ConsoleRunner { return r.console }

// wire is the model's test resolver (a new one when it has none), to wire
// a source after the model is built.
func wire(m *Model) *resolver {
	r, ok := m.opts.Resolver.(*resolver)
	if !ok {
		r = &resolver{}
		m.opts.Resolver = r
	}
	return r
}
