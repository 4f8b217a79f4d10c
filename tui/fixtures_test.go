package tui

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

const ns = "vdi"

// t0 is the fixed "now" of every test.
var t0 = time.Date(2026, 3, 2, 14, 3, 27, 0, time.UTC)

func poolSpec(image string, size int, rt *engine.Runtime) engine.Spec {
	s := engine.Spec{Image: image, Size: size, Runtime: rt}
	s.Default()
	return s
}

// cluster accumulates the objects of a test cluster.
type cluster struct {
	ns     string // "" for ns
	cms    []*corev1.ConfigMap
	pods   []*corev1.Pod
	pvcs   []*corev1.PersistentVolumeClaim
	leases []*coordinationv1.Lease
	// nodeDown is every snapshot's NodeDown (nil: the nodes are unknown).
	nodeDown map[string]string
}

// namespace is the cluster's namespace.
func (c *cluster) namespace() string {
	if c.ns == "" {
		return ns
	}
	return c.ns
}

func (c *cluster) snapshots() []engine.Snapshot {
	snaps := engine.GroupByPool(c.namespace(), c.cms, c.pods, c.pvcs, c.leases)
	for i := range snaps {
		snaps[i].NodeDown = c.nodeDown
	}
	return snaps
}

func (c *cluster) views() []engine.PoolView { return engine.ObserveAll(c.snapshots(), t0) }

func (c *cluster) pool(name string, s engine.Spec, rec *engine.Status) {
	cm := engine.BuildConfigMap(c.namespace(), name, s)
	if rec != nil {
		cm.Data[engine.KeyStatus] = rec.Encode()
	}
	c.cms = append(c.cms, cm)
}

// member adds member n's Pod (when state is not Stopped) and PVC built from s.
type memberOpt func(*corev1.Pod)

func (c *cluster) member(pool string, n int, s engine.Spec, opts ...memberOpt) *corev1.Pod {
	pvc := engine.BuildPVC(c.namespace(), pool, n, s)
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(s.Disk)}
	c.pvcs = append(c.pvcs, pvc)
	p := engine.BuildPod(c.namespace(), pool, n, s)
	ready(p)
	p.CreationTimestamp = metav1.NewTime(t0.Add(-10 * time.Minute))
	p.Spec.NodeName = "node-a"
	for _, o := range opts {
		o(p)
	}
	c.pods = append(c.pods, p)
	return p
}

func (c *cluster) claim(pool, member, holder string, acquired time.Time) {
	c.leases = append(c.leases, engine.ClaimLease(c.namespace(), pool, member, holder, acquired))
}

func ready(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: engine.ContainerName, Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

func onNode(node string) memberOpt { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

func age(d time.Duration) memberOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-d)) }
}

func unschedulable(msg string) memberOpt {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}}}
	}
}

func crashLoop(msg string) memberOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions[3].Status = corev1.ConditionFalse
		p.Status.ContainerStatuses[0].Ready = false
		p.Status.ContainerStatuses[0].RestartCount = 7
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: msg}}
	}
}

func terminating(p *corev1.Pod) {
	ts := metav1.NewTime(t0.Add(-20 * time.Second))
	p.DeletionTimestamp = &ts
}

func ptrTime(t time.Time) *time.Time { return &t }

// demoCluster is the main fixture: the pools of the screen sketches plus a
// pool with no definition and one with a malformed spec.
func demoCluster() *cluster {
	c := &cluster{}
	desk := poolSpec("ghcr.io/example/desktop:2", 5, nil)
	old := poolSpec("ghcr.io/example/desktop:1", 5, nil)
	c.pool("desk", desk, &engine.Status{UpdatedAt: ptrTime(t0.Add(-12 * time.Second))})
	c.member("desk", 1, old, age(3*time.Hour))
	c.claim("desk", "desk-1", "alice@example.com", t0.Add(-42*time.Minute))
	c.member("desk", 2, desk, onNode("node-b"), age(2*time.Hour))
	c.claim("desk", "desk-2", "bob@example.com", t0.Add(-65*time.Minute))
	c.member("desk", 3, desk)
	c.claim("desk", "desk-3", "carol@example.com", t0.Add(-3*time.Minute))
	c.member("desk", 4, desk, onNode("node-b"))
	c.member("desk", 5, desk, unschedulable("0/4 nodes are available: 2 Insufficient memory, 2 node(s) had untolerated taint {gpu: true}."))
	c.member("desk", 6, desk, age(26*time.Hour), terminating)

	gpuRT := &engine.Runtime{Backend: engine.BackendSandboxd, Template: "ghcr.io/example/cad:7"}
	gpu := poolSpec("ghcr.io/example/cad:7", 4, gpuRT)
	c.pool("gpu", gpu, &engine.Status{UpdatedAt: ptrTime(t0.Add(-40 * time.Second)),
		Errors: []string{`create gpu-4: pods "gpu-4" is forbidden: exceeded quota: gpu-quota`}})
	c.member("gpu", 1, gpu, onNode("gpu-node-1"), age(5*time.Hour))
	c.claim("gpu", "gpu-1", "dave@example.com", t0.Add(-56*time.Minute))
	c.member("gpu", 2, gpu, onNode("gpu-node-2"), age(5*time.Hour))
	c.claim("gpu", "gpu-2", "erin@example.com", t0.Add(-20*time.Minute))
	for n := 3; n <= 4; n++ {
		c.member("gpu", n, gpu, unschedulable("0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity."))
	}

	kioskRT := &engine.Runtime{Backend: engine.BackendCocoon, Image: "ubuntu-dev-base"}
	kiosk := poolSpec("ghcr.io/example/kiosk:3", 20, kioskRT)
	c.pool("kiosk", kiosk, &engine.Status{UpdatedAt: ptrTime(t0.Add(-5 * time.Second))})
	for n := 1; n <= 20; n++ {
		opts := []memberOpt{onNode(fmt.Sprintf("node-%c", 'a'+n%4)), age(time.Duration(n) * 7 * time.Minute)}
		if n == 20 {
			opts = append(opts, crashLoop("back-off 5m0s restarting failed container=desktop pod=kiosk-20"))
		}
		c.member("kiosk", n, kiosk, opts...)
		if n <= 11 {
			c.claim("kiosk", engine.MemberName("kiosk", n), fmt.Sprintf("user%02d@example.com", n), t0.Add(-time.Duration(n)*4*time.Minute))
		}
	}

	// A pool whose objects exist but whose definition does not.
	ghost := poolSpec("ghcr.io/example/old:1", 1, nil)
	c.member("ghost", 1, ghost, onNode("node-c"), age(72*time.Hour))

	// A pool whose definition does not parse.
	broken := engine.BuildConfigMap(ns, "broken", poolSpec("x", 1, nil))
	broken.Data[engine.KeySpec] = "image: [unclosed\nsize: 2\n"
	c.cms = append(c.cms, broken)
	return c
}

// hostileCluster has cluster text that tries to attack the terminal.
// nodeDownCluster is a pool with members on node-b, whose kubelet stopped:
// a claimed desktop still reading Ready, and a free one the node lifecycle
// controller marked NotReady; desk-2 is on a healthy node. The node's
// evidence carries escape sequences (a node's message is untrusted).
func nodeDownCluster() *cluster {
	c := &cluster{nodeDown: map[string]string{
		"node-b": "Ready=Unknown since 2026-03-02T08:57:30Z: Kubelet stopped posting node status.\x1b[2J\x1b]8;;https://evil.example\x07; node.kubernetes.io/unreachable:NoSchedule",
	}}
	s := poolSpec("ghcr.io/example/desktop:2", 3, nil)
	c.pool("desk", s, &engine.Status{UpdatedAt: ptrTime(t0.Add(-30 * time.Second))})
	c.member("desk", 1, s, onNode("node-b"), age(3*time.Hour))
	c.claim("desk", "desk-1", "alice@example.com", t0.Add(-42*time.Minute))
	c.member("desk", 2, s)
	c.member("desk", 3, s, onNode("node-b"), func(p *corev1.Pod) {
		p.Status.Conditions[3].Status = corev1.ConditionFalse
		p.Status.ContainerStatuses[0].Ready = false
	})
	return c
}

func hostileCluster() *cluster {
	c := &cluster{}
	s := poolSpec("ghcr.io/example/desktop:2", 3, nil)
	c.pool("evil", s, &engine.Status{UpdatedAt: ptrTime(t0.Add(-time.Minute)),
		Errors: []string{"create evil-3: \x1b[2J\x1b[Hscreen wiped\x07"}})
	p := c.member("evil", 1, s, onNode("node-\x1b[31mred\x1b[0m"))
	p.Annotations[engine.SandboxdAnnotationClaimID] = "\x1b]8;;https://evil.example\x07claim\x1b]8;;\x07-\u202e1337\r\x08"
	c.claim("evil", "evil-1", "\x1b]52;c;cm0gLXJmIH4=\x07mallory\u202Egnp.exe", t0.Add(-10*time.Minute))
	c.member("evil", 2, s, unschedulable("line one\nline two\r\x1b]8;;https://evil.example\x1b\\click me\x1b]8;;\x1b\\\ttab"))
	c.member("evil", 3, s, crashLoop("\x1bP+q544e\x1b\\back\bspace\x7f and \u2066isolate\u2069 \x9b31m c1"))
	c.claim("evil", "evil-3", "eve\r\nFAKE LINE", t0.Add(-time.Minute))
	return c
}

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
}

// newTestModel builds a model at a fixed size and time, with the data loaded.
func newTestModel(t testing.TB, c *cluster, o testOpts) (*Model, *fakeData) {
	t.Helper()
	if o.width == 0 {
		o.width, o.height = 120, 40
	}
	data := newFakeData(c.snapshots())
	m := newModel(context.Background(), Options{
		Context: "prod-eu", Namespace: ns, ReadOnly: o.readOnly, Theme: themes.Dark(),
		Renderer: themes.NoColorRenderer(io.Discard), Now: func() time.Time { return t0 },
		Data: data, Actions: o.actions, Events: o.events,
	})
	m.Update(tea.WindowSizeMsg{Width: o.width, Height: o.height})
	m.Update(loadCmd(data, func() time.Time { return t0 })())
	m.Update(tickMsg(t0))
	return m, data
}
