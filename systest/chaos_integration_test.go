//go:build integration

package systest_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// The randomized run is the contract's proof under concurrency: operations
// from goroutines that share identities, two reconcilers at once, releases
// that fail while destroying, Pods and members that vanish under their
// claims, checked after every batch on the API server's own state and on the
// complete history its watches delivered.

const (
	// chaosOpsEnv sets the number of operations (default chaosDefaultOps).
	chaosOpsEnv     = "CTPOOL_CHAOS_OPS"
	chaosDefaultOps = 500
	// chaosSeedEnv sets the seed of the operations' random choices (default:
	// the clock); the run prints the seed it used. The same seed gives the
	// same choices per worker and batch, not the same interleaving.
	chaosSeedEnv = "CTPOOL_CHAOS_SEED"
	chaosPool    = "chaos"
	// holdFinalizer keeps a PVC Terminating, so that a release fails while
	// it waits for the data to go.
	holdFinalizer = "chaos.ctpool-tui.dev/hold"
	// stampTolerance bounds how long before its write (or before the watch
	// delivered it) a reconciler Lease may be stamped.
	stampTolerance      = 2 * time.Second
	watchStampTolerance = 5 * time.Second
	// stuckDeadline: a member not Ready, a vanished Pod not started again, a
	// stale maintenance Lease not finished or an unclaimed member left
	// drifted is a violation once it has stayed so with no change of its
	// objects (no Pod, PVC or Lease event: no step of any reconciler or
	// release on it) for this long, on the wall clock (judgeStuck). Batch
	// ends are no measure: at the start of a run they come seconds apart.
	stuckDeadline = 60 * time.Second
	// afterOutage: for this many batch ends after an API server restart the
	// plane's own controllers (PVC protection, the volume binder, kwok's Pod
	// status) catch up at their own pace, their work queues backing off, so
	// the deadline is stuckDeadlineAfterOutage instead. The run must still
	// converge fully at its end.
	afterOutage              = 10
	stuckDeadlineAfterOutage = 3 * time.Minute
	// outageRecovery: for this long after the restarted API server answers,
	// no settle window ends (see chaosHarness.outageOver).
	outageRecovery = 60 * time.Second
	// podGCWindow: how long after its deletion an unscheduled Pod may stay
	// Terminating: the controller-manager's Pod GC runs every 20 s and removes
	// it; a cut delete (a stopped controller's canceled request) leaves one.
	podGCWindow   = 90 * time.Second
	maxViolations = 30
	// elasticShare and elasticWorkers: one operation in elasticShare of a
	// batch is the elastic pool's, run by elasticWorkers of its own beside
	// the fixed pool's workers (each of its operations does real work; the
	// fixed pool's are often no-ops).
	elasticShare, elasticWorkers = 6, 2
	// maxTakeoverReports: of the reconciler Leases taken over too early,
	// this many are reported (each a violation); the report counts all.
	maxTakeoverReports = 3
)

var chaosIdentities = []string{"ann@example.com", "ben@example.com", "cat@example.com", "dan@example.com"}

// chaosOps reads the run's size from chaosOpsEnv.
func chaosOps(t *testing.T, def int) int {
	t.Helper()
	s := os.Getenv(chaosOpsEnv)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number of operations", chaosOpsEnv, s)
	}
	return n
}

// chaosSeed reads the run's seed from chaosSeedEnv, or takes the clock's.
func chaosSeed(t *testing.T) uint64 {
	t.Helper()
	s := os.Getenv(chaosSeedEnv)
	if s == "" {
		return uint64(time.Now().UnixNano())
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: want an unsigned decimal seed", chaosSeedEnv, s)
	}
	return n
}

// chaosClock is the clock of every engine of the run: the wall clock plus an
// offset that only moves forward, and only while no operation and no
// reconciler runs. The API server does not interpret Lease times; the engines
// do, so writers and readers of Leases must share one clock. (A clock ahead
// for one reconciler alone would make every live Lease look stale to it, and
// the Leases it stamps would be in the future for the others, which honour
// such a time as "now", so never stale.)
//
// The API server's clock jumps with it: each client of the run reads the
// time of a Lease's last write on the run's clock (onRunClock).
type chaosClock struct {
	off   atomic.Int64
	jumps jumpLog
}

func (c *chaosClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *chaosClock) jump(d time.Duration) {
	c.jumps.add(time.Now(), time.Duration(c.off.Add(int64(d))))
}

// stampCheck wraps a Cluster and checks that every reconciler Lease the engine
// writes is stamped with the reading of its clock (now) at the moment it is
// taken.
type stampCheck struct {
	engine.Cluster
	now func() time.Time
	bad func(format string, a ...any)
}

func (s stampCheck) CreateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	s.check("create", l)
	return s.Cluster.CreateLease(ctx, l)
}

func (s stampCheck) UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	s.check("update", l)
	return s.Cluster.UpdateLease(ctx, l)
}

func (s stampCheck) check(verb string, l *coordinationv1.Lease) {
	if holderOf(l) != engine.ReconcilerIdentity {
		return
	}
	if lag := s.now().Sub(stampOf(l)); lag > stampTolerance {
		s.bad("reconciler Lease %s (%s) stamped %s before it was written", l.Name, verb, lag.Round(time.Millisecond))
	}
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func stampOf(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime != nil {
		return l.Spec.RenewTime.Time
	}
	if l.Spec.AcquireTime != nil {
		return l.Spec.AcquireTime.Time
	}
	return time.Time{}
}

// ---- the recorder: every Lease, Pod and PVC change of the pool, in order ----

// objEvent is one change of one object as a watch delivered it.
type objEvent struct {
	rv       int64
	kind     string // Lease, Pod or PVC
	member   string
	uid      types.UID
	gone     bool // deleted
	deleting bool // has a deletionTimestamp
	holder   string
	stamp    time.Time
	seenAt   time.Time // the run's clock when the watch delivered it
	written  time.Time // the run's clock when the API server took a Lease write
	writer   string    // the field manager of a Lease's newest write
	gap      bool      // made up from a relist after the watch lost its place
	running  bool      // a Pod past Pending (scheduled and started)
	podState string    // a Pod's phase, node and readiness, for the history
	source   string    // a Pod's or PVC's source label
	pool     string    // the pool of the object
	at       time.Time // the wall clock when the watch delivered it
	// obj is the object as delivered, without its managed fields: kept for
	// the elastic pool's objects only (elasticTrack rebuilds the pool).
	obj runtime.Object
}

func shortUID(u types.UID) string {
	if len(u) > 8 {
		return string(u[:8])
	}
	return string(u)
}

func rvOf(m metav1.Object) int64 {
	n, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	return n
}

// recorder follows the pool's Leases, Pods and PVCs from one resourceVersion
// on, resuming its watches after they end (an API server restart), and keeps
// what it saw for the replay. resourceVersions of all kinds come from one
// etcd, so they order the events of all kinds.
type recorder struct {
	clk     *chaosClock
	env     *kubetest.Env
	mu      sync.Mutex
	pending []objEvent
	live    map[string]map[types.UID]string // kind -> uid -> resourceVersion
	last    map[types.UID]objEvent
	relists int
}

type source struct {
	kind  string
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	list  func(context.Context, metav1.ListOptions) ([]runtime.Object, string, error)
	// selector is the label selector of the list and watch; keep (when set)
	// tells which of the objects they return belong to the pool.
	selector string
	keep     func(metav1.Object) bool
}

// isPoolLease tells a Lease named for a member of the run's pools: its
// claim, whether or not it carries the pool's label (a broker writes it by
// name).
func isPoolLease(m metav1.Object) bool {
	member, ok := engine.MemberFromLeaseName(m.GetName())
	if !ok {
		return false
	}
	_, fixed := engine.MemberIndex(chaosPool, member)
	return fixed || isElasticMember(member)
}

// ours tells whether the source keeps the object.
func (s source) ours(m metav1.Object) bool { return s.keep == nil || s.keep(m) }

func (r *recorder) sources() []source {
	c, ns := r.env.Client, r.env.Namespace
	sel := fmt.Sprintf("%s in (%s,%s)", engine.LabelPool, chaosPool, elasticPool)
	// Leases are followed by name, not by label: a broker's claim carries
	// none (the namespace is the test's own, so the list stays small).
	return []source{
		{kind: "Lease", selector: "", keep: isPoolLease, watch: c.CoordinationV1().Leases(ns).Watch, list: func(ctx context.Context, o metav1.ListOptions) ([]runtime.Object, string, error) {
			l, err := c.CoordinationV1().Leases(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			var out []runtime.Object
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, l.ResourceVersion, nil
		}},
		{kind: "Pod", selector: sel, watch: c.CoreV1().Pods(ns).Watch, list: func(ctx context.Context, o metav1.ListOptions) ([]runtime.Object, string, error) {
			l, err := c.CoreV1().Pods(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			var out []runtime.Object
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, l.ResourceVersion, nil
		}},
		{kind: "PVC", selector: sel, watch: c.CoreV1().PersistentVolumeClaims(ns).Watch, list: func(ctx context.Context, o metav1.ListOptions) ([]runtime.Object, string, error) {
			l, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			var out []runtime.Object
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, l.ResourceVersion, nil
		}},
		// The elastic pool's definition and status: its size decisions.
		{kind: "ConfigMap", selector: kube.PoolSelector(elasticPool), watch: c.CoreV1().ConfigMaps(ns).Watch, list: func(ctx context.Context, o metav1.ListOptions) ([]runtime.Object, string, error) {
			l, err := c.CoreV1().ConfigMaps(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			var out []runtime.Object
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, l.ResourceVersion, nil
		}},
	}
}

func (r *recorder) toEvent(kind string, obj runtime.Object, gone bool) (objEvent, bool) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return objEvent{}, false
	}
	e := objEvent{rv: rvOf(m), kind: kind, uid: m.GetUID(), gone: gone, deleting: m.GetDeletionTimestamp() != nil, seenAt: r.clk.Now(), at: time.Now(),
		pool: m.GetLabels()[engine.LabelPool]}
	switch o := obj.(type) {
	case *coordinationv1.Lease:
		e.member, _ = engine.MemberFromLeaseName(o.Name)
		e.pool = poolOf(e.member) // a broker's carries no label
		e.holder = holderOf(o)
		e.stamp = stampOf(o)
		// When the API server took the write (its managedFields time, to the
		// second), on the run's clock: the clock never jumps between a write
		// and its delivery (jumps wait until the recorder has caught up).
		for _, f := range o.ManagedFields {
			if f.Time != nil && f.Time.After(e.written) {
				e.written, e.writer = f.Time.Time, f.Manager
			}
		}
		if e.written.IsZero() {
			e.written = e.seenAt
		} else {
			e.written = e.written.Add(r.clk.jumps.offAt(e.written))
		}
	case *corev1.Pod:
		e.member = m.GetLabels()[engine.LabelMember]
		e.source = m.GetLabels()[engine.LabelSource]
		e.running = o.Status.Phase != "" && o.Status.Phase != corev1.PodPending
		e.podState = podSummary(o)
	case *corev1.ConfigMap:
		e.pool, _ = engine.PoolFromConfigMapName(o.Name)
	default:
		e.member = m.GetLabels()[engine.LabelMember]
		e.source = m.GetLabels()[engine.LabelSource]
	}
	if e.pool == elasticPool && !gone {
		c := obj.DeepCopyObject()
		c.(metav1.Object).SetManagedFields(nil)
		e.obj = c
	}
	return e, true
}

func (r *recorder) add(e objEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	live := r.live[e.kind]
	if e.gone {
		delete(live, e.uid)
	} else {
		live[e.uid] = strconv.FormatInt(e.rv, 10)
	}
	last := e
	last.obj = nil
	r.last[e.uid] = last
	r.pending = append(r.pending, e)
}

// start lists every kind (the state the replay starts from) and follows it.
func (r *recorder) start(ctx context.Context, t *testing.T) {
	t.Helper()
	r.live = map[string]map[types.UID]string{}
	r.last = map[types.UID]objEvent{}
	for _, s := range r.sources() {
		r.live[s.kind] = map[types.UID]string{}
		rv, err := r.relist(ctx, s, false)
		if err != nil {
			t.Fatalf("list %ss: %v", s.kind, err)
		}
		go r.follow(ctx, s, rv)
	}
}

// relist reads the kind afresh and records what changed since the last event
// seen (as made-up events: the order within the gap is lost).
func (r *recorder) relist(ctx context.Context, s source, gap bool) (string, error) {
	items, rv, err := s.list(ctx, metav1.ListOptions{LabelSelector: s.selector})
	if err != nil {
		return "", err
	}
	listRV, _ := strconv.ParseInt(rv, 10, 64)
	seen := map[types.UID]bool{}
	for _, o := range items {
		if !s.ours(o.(metav1.Object)) {
			continue
		}
		e, ok := r.toEvent(s.kind, o, false)
		if !ok {
			continue
		}
		seen[e.uid] = true
		r.mu.Lock()
		same := r.live[s.kind][e.uid] == o.(metav1.Object).GetResourceVersion()
		r.mu.Unlock()
		if !same {
			e.gap = gap
			r.add(e)
		}
	}
	r.mu.Lock()
	var gone []objEvent
	for uid := range r.live[s.kind] {
		if !seen[uid] {
			e := r.last[uid]
			e.gone, e.rv, e.gap, e.seenAt, e.at = true, listRV, true, r.clk.Now(), time.Now()
			gone = append(gone, e)
		}
	}
	if gap {
		r.relists++
	}
	r.mu.Unlock()
	for _, e := range gone {
		r.add(e)
	}
	return rv, nil
}

// follow watches one kind until ctx ends, resuming after every end of the
// watch from the last resourceVersion seen, or from a relist when that is
// too old.
func (r *recorder) follow(ctx context.Context, s source, rv string) {
	retryEvery := time.NewTicker(250 * time.Millisecond)
	defer retryEvery.Stop()
	for ctx.Err() == nil {
		w, err := s.watch(ctx, metav1.ListOptions{LabelSelector: s.selector, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				if nrv, lerr := r.relist(ctx, s, true); lerr == nil {
					rv = nrv
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-retryEvery.C:
			}
			continue
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Error:
				if st := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(st) || apierrors.IsGone(st) {
					if nrv, lerr := r.relist(ctx, s, true); lerr == nil {
						rv = nrv
					}
				}
			case watch.Bookmark:
				if m, ok := ev.Object.(metav1.Object); ok {
					rv = m.GetResourceVersion()
				}
			default:
				m, isObj := ev.Object.(metav1.Object)
				if !isObj {
					continue
				}
				rv = m.GetResourceVersion()
				if !s.ours(m) {
					continue
				}
				if e, ok := r.toEvent(s.kind, ev.Object, ev.Type == watch.Deleted); ok {
					r.add(e)
				}
			}
		}
		w.Stop()
	}
}

// caughtUp reports whether the recorder's objects are exactly those a fresh
// list returns (same UIDs, same resourceVersions).
func (r *recorder) caughtUp(ctx context.Context) (bool, error) {
	for _, s := range r.sources() {
		items, _, err := s.list(ctx, metav1.ListOptions{LabelSelector: s.selector})
		if err != nil {
			return false, nil
		}
		items = slices.DeleteFunc(items, func(o runtime.Object) bool { return !s.ours(o.(metav1.Object)) })
		r.mu.Lock()
		live := r.live[s.kind]
		same := len(live) == len(items)
		for _, o := range items {
			m := o.(metav1.Object)
			if live[m.GetUID()] != m.GetResourceVersion() {
				same = false
			}
		}
		r.mu.Unlock()
		if !same {
			return false, nil
		}
	}
	return true, nil
}

// take hands the events not yet replayed over, in resourceVersion order.
func (r *recorder) take() []objEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.pending
	r.pending = nil
	sort.SliceStable(out, func(i, j int) bool { return out[i].rv < out[j].rv })
	return out
}

// ---- the replay: invariants over the whole history ----

type pvcState struct {
	uid      types.UID
	deleting bool
}

// replay holds the pool's state as of the last event replayed.
type replay struct {
	holder  map[string]string          // member -> Lease holder ("" = none)
	stamp   map[string]time.Time       // member -> Lease stamp
	pvc     map[string]pvcState        // member -> its PVC
	held    map[string]map[string]bool // identity -> members it holds
	byTest  map[types.UID]bool         // Pods and PVCs the test deleted itself
	seenDel map[types.UID]bool
	seenPod map[types.UID]bool
	// onDeleting: Pods created while their PVC was being deleted (a claimed
	// start that lost the race with a release) -> member and that PVC. They
	// may never start on it, and must be gone by the next batch end, unless
	// that PVC went first: an unscheduled Pod does not hold a PVC's
	// protection, and a start whose read was cut (an outage) keeps its Pod,
	// which then waits for, and runs on, the member's next, fresh PVC.
	onDeleting   map[types.UID]racePod
	recent       map[string][]string // member -> its last events, for the messages
	doubles      int                 // an identity came to hold two members
	maxHeld      int
	leaseChanges int
	deletions    int
	racePods     int // Pods created on a PVC being deleted
	raceMoved    int // of those, left for the member's next PVC (that PVC went first)
	// unexplained: the deletions reported as violations, whose audited
	// deletes the report prints (who sent them, with which preconditions).
	unexplained []objEvent
	// byKwok tells a deletion that kwok's name-only delete made (see
	// deletedByKwok); nil in the replay's unit tests.
	byKwok      func(objEvent) bool
	kwokDeletes int
	// releaseAsked: per member, the releases (and a broker's give-backs)
	// asked of a claim a broker holds and not known to have left it alone:
	// a broker's claim ends only so (chaos_actors_integration_test.go).
	releaseAsked map[string]int
	brokerEnds   int
	// claimSrc: the source of the Pod a user's claim started with, and the
	// PVC it ran on (claimPVC); a Pod created for the claim on that PVC must
	// carry the same source, whatever the pool's definition says by then.
	claimSrc        map[string]string
	claimPVC        map[string]types.UID
	podSrc          map[string]string // member -> its live Pod's source
	claimedRestarts int
	// lastChange: member -> the wall clock when the watch delivered its
	// last Pod, PVC or Lease event (judgeStuck).
	lastChange map[string]time.Time
	// el rebuilds the elastic pool and checks its size decisions (nil in
	// the replay's unit tests).
	el *elasticTrack
	// written and leaseUID: member -> when the API server took its Lease's
	// current version (the run's clock), and that Lease's UID.
	written  map[string]time.Time
	leaseUID map[string]types.UID
	// takeovers: reconciler Leases taken over before they could be stale
	// (the first maxTakeoverReports reported, all counted).
	takeovers int
	// writers: the field managers besides this run's engines that may write
	// the pool's Leases (the reconciler processes of a mixed-version run).
	writers map[string]bool
}

// racePod is a Pod created on its member's PVC while that PVC was being deleted.
type racePod struct {
	member string
	pvc    types.UID
}

func newReplay() *replay {
	return &replay{
		holder: map[string]string{}, stamp: map[string]time.Time{}, pvc: map[string]pvcState{},
		held: map[string]map[string]bool{}, byTest: map[types.UID]bool{}, seenDel: map[types.UID]bool{},
		seenPod: map[types.UID]bool{}, recent: map[string][]string{}, onDeleting: map[types.UID]racePod{},
		releaseAsked: map[string]int{}, claimSrc: map[string]string{}, claimPVC: map[string]types.UID{}, podSrc: map[string]string{},
		lastChange: map[string]time.Time{}, written: map[string]time.Time{}, leaseUID: map[string]types.UID{},
	}
}

func (p *replay) apply(e objEvent, bad func(format string, a ...any)) {
	if p.el != nil && e.pool == elasticPool {
		p.el.apply(e, bad)
	}
	if e.kind == "ConfigMap" {
		return
	}
	m := e.member
	if m != "" {
		p.lastChange[m] = e.at
	}
	desc := fmt.Sprintf("%s rv %d %s %s", e.at.UTC().Format("15:04:05.000"), e.rv, e.kind, shortUID(e.uid))
	switch {
	case e.gone:
		desc += " gone"
	case e.deleting:
		desc += " deleting"
	}
	if e.kind == "Lease" {
		desc += fmt.Sprintf(" holder %q stamp %s", e.holder, e.stamp.Format("15:04:05.000"))
	}
	if e.kind == "Pod" && !e.gone {
		desc += " " + e.podState
	}
	p.recent[m] = append(p.recent[m], desc)
	if n := len(p.recent[m]); n > 14 {
		p.recent[m] = p.recent[m][n-14:]
	}
	history := func() string { return "\n\t\thistory of " + m + ": " + strings.Join(p.recent[m], "; ") }
	switch e.kind {
	case "Lease":
		if m == "" {
			return
		}
		if !e.gone && e.writer != "" && e.writer != kubetest.UserAgent && !p.writers[e.writer] {
			// Only this run's engines write the pool's Leases; anything else
			// (a reconciler of every namespace run by another test) voids
			// what the run finds.
			bad("rv %d: the Lease of %s was written by %q, not by this run's engines: another program works in this namespace%s", e.rv, m, e.writer, history())
		}
		prev, next := p.holder[m], e.holder
		if e.gone {
			next = ""
		}
		if prev != next {
			p.leaseChanges++
			if prev != "" && next != "" && prev != engine.ReconcilerIdentity && next != engine.ReconcilerIdentity {
				bad("rv %d: %s passed from %q straight to %q", e.rv, m, prev, next)
			}
			if isBroker(prev) {
				// A broker's claim ends by its release (through the engine,
				// or an administrator's force-release) or its give-back of a
				// member never used, nothing else.
				if p.releaseAsked[m] > 0 {
					p.releaseAsked[m]--
					p.brokerEnds++
				} else {
					bad("rv %d: the claim of broker %q on %s passed to %q, and no release of it was asked%s", e.rv, prev, m, next, history())
				}
			}
			if next != "" && next != engine.ReconcilerIdentity {
				p.claimSrc[m], p.claimPVC[m] = p.podSrc[m], p.pvc[m].uid
			} else {
				delete(p.claimSrc, m)
				delete(p.claimPVC, m)
			}
			if prev != "" && prev != engine.ReconcilerIdentity {
				delete(p.held[prev], m)
			}
			if next != "" && next != engine.ReconcilerIdentity {
				if p.held[next] == nil {
					p.held[next] = map[string]bool{}
				}
				p.held[next][m] = true
				if n := len(p.held[next]); n == 2 {
					p.doubles++
				}
				p.maxHeld = max(p.maxHeld, len(p.held[next]))
				if c := p.pvc[m]; c.uid != "" && c.deleting && !p.byTest[c.uid] {
					bad("rv %d: %s was given to %q while its PVC (uid %s) was being deleted: a release's destruction was handed back to a user%s", e.rv, m, next, c.uid, history())
				}
			}
		}
		if next == engine.ReconcilerIdentity && !e.gap && !e.stamp.Equal(p.stamp[m]) {
			// The elastic pool's slow reconciler stamps with its own clock.
			if lag := e.written.Sub(e.stamp); lag > watchStampTolerance && (e.pool != elasticPool || (lag+elasticSkew).Abs() > watchStampTolerance) {
				bad("rv %d: reconciler Lease of %s was stamped %s before the API server took it", e.rv, m, lag.Round(time.Millisecond))
			}
			// A reconciler's Lease is taken over only once stale: when it
			// has stood for the TTL on the run's clock, from the API
			// server's write of it, whatever its stamp says (DECISIONS,
			// "Clocks": no reader trusts another writer's clock for a
			// duration after which something is taken).
			if w, ok := p.written[m]; ok && prev == engine.ReconcilerIdentity && p.leaseUID[m] == e.uid {
				if stood := e.written.Sub(w); stood < engine.ReconcilerLeaseTTL-watchStampTolerance {
					p.takeovers++
				}
				if stood := e.written.Sub(w); stood < engine.ReconcilerLeaseTTL-watchStampTolerance && p.takeovers <= maxTakeoverReports {
					bad("rv %d: the reconciler Lease of %s, written at %s (the run's clock) and stamped %s, was taken over %s later, before it could be stale (%s): the taker trusted the stamp of a clock not its own, and two reconcilers work on the member%s",
						e.rv, m, w.Format("15:04:05"), p.stamp[m].Format("15:04:05.000"), stood.Round(time.Second), engine.ReconcilerLeaseTTL, history())
				}
			}
		}
		if e.gone || e.gap {
			delete(p.written, m)
		} else {
			p.written[m], p.leaseUID[m] = e.written, e.uid
		}
		p.holder[m], p.stamp[m] = next, e.stamp
	case "PVC", "Pod":
		if e.kind == "PVC" {
			if e.gone {
				if p.pvc[m].uid == e.uid {
					delete(p.pvc, m)
				}
				for uid, r := range p.onDeleting {
					if r.pvc == e.uid {
						delete(p.onDeleting, uid)
						p.raceMoved++
					}
				}
			} else {
				p.pvc[m] = pvcState{uid: e.uid, deleting: e.deleting}
			}
		}
		if e.kind == "Pod" {
			if e.gone || e.deleting {
				delete(p.podSrc, m)
			} else {
				p.podSrc[m] = e.source
			}
		}
		if e.kind == "Pod" && !e.gone && !e.deleting && !p.seenPod[e.uid] {
			p.seenPod[e.uid] = true
			if h := p.holder[m]; h != "" && h != engine.ReconcilerIdentity {
				// A Pod started for a user's claim: on the data the claim
				// started with, from the source it started with.
				switch src, pvc := p.claimSrc[m], p.pvc[m].uid; {
				case src == "" || pvc != p.claimPVC[m]:
					p.claimSrc[m], p.claimPVC[m] = e.source, pvc
				case e.source != src:
					bad("rv %d: %s, claimed by %q, was started from source %s, not from %s, the source its claim started with on the same PVC (uid %s): a changed definition reached a claimed desktop%s",
						e.rv, m, h, e.source, src, pvc, history())
				default:
					p.claimedRestarts++
				}
			}
			if c := p.pvc[m]; c.uid != "" && c.deleting && !p.byTest[c.uid] {
				p.onDeleting[e.uid] = racePod{member: m, pvc: c.uid}
				p.racePods++
			}
		}
		if _, ok := p.onDeleting[e.uid]; ok && e.kind == "Pod" {
			switch {
			case e.gone || e.deleting:
				delete(p.onDeleting, e.uid)
			case e.running:
				bad("rv %d: a Pod of %s created while its PVC was being deleted started (holder %q)%s", e.rv, m, p.holder[m], history())
				delete(p.onDeleting, e.uid)
			}
		}
		if (e.gone || e.deleting) && !p.seenDel[e.uid] {
			p.seenDel[e.uid] = true
			p.deletions++
			if h := p.holder[m]; !p.byTest[e.uid] && h != engine.ReconcilerIdentity {
				if p.byKwok != nil && p.byKwok(e) {
					p.kwokDeletes++
					break
				}
				bad("rv %d: %s of %s (uid %s) deleted while its Lease holder was %q (want the reconciler, as a release or a reconcile holds it)%s", e.rv, e.kind, m, e.uid, h, history())
				p.unexplained = append(p.unexplained, e)
			}
		}
	}
}

// ---- the harness ----

// failedRelease is a release made to fail while destroying: its PVC is held
// Terminating by holdFinalizer until the hold is lifted.
type failedRelease struct {
	member   string
	identity string
	pvcUID   types.UID
	held     bool
	batch    int
	jumped   int       // the batch end at which the clock made its Lease stale (0: not yet)
	jumpedAt time.Time // and when, on the wall clock
	// clockOff is the run's clock offset when the release failed: once the
	// clock has jumped since (for another failed release), its Lease may be
	// stale, and a reconcile may take it over and, failing on the held PVC,
	// remove it (the member is never free while its PVC is Terminating).
	clockOff int64
	why      string // the release's error, for the messages
	// unseen: the pool could not be read after the release failed (the API
	// server was down), so whether the release took the claim at all is
	// told at the batch end.
	unseen bool
}

// vanished is a claimed member whose Pod (or Pod and PVC) the test deleted.
type vanished struct {
	member   string
	identity string
	pvcUID   types.UID
	withPVC  bool
	batch    int
	at       time.Time // when, on the wall clock
	releases int       // the member's ended claims when it vanished
}

type chaosHarness struct {
	t      *testing.T
	env    *kubetest.Env
	clk    *chaosClock
	rec    *recorder
	replay *replay
	// user claims and releases; failing releases wait only briefly; cli is
	// the command-line reconcile.
	user, failing, cli *engine.Engine

	mu         sync.Mutex
	counts     map[string]int
	errSamples map[string]string
	locks      map[string]bool
	failed     map[string]*failedRelease // by member
	vanished   map[string]*vanished      // by member
	// notReady: the batch ends in a row that found a member not Ready (the
	// plane-artifact repair reads it); unsettled: what judgeStuck keeps.
	notReady   map[string]int
	unsettled  map[string]*stuckNote
	releases   map[string]int       // member -> releases that ended its claim (done, or failed after taking it)
	holds      map[types.UID]string // PVCs held by holdFinalizer -> member
	leftBehind map[types.UID]bool   // reconciler Leases reported left behind
	// outageEnd is the batch end after the API server restart (0: none):
	// an operation the outage cut mid-step may leave its reconciler Lease,
	// as a reconciler that stopped would; it must go stale and be finished.
	outageEnd int
	// outageOver is when the restarted API server answered again: the
	// plane's kwok and controllers reconnect their watches with backoff
	// (a Pod deleted as the API server came back was seen still there,
	// undeleted by kwok, 31 s later), so until outageRecovery has passed
	// no member counts as late.
	outageOver time.Time
	violations int
	batch      int
	ctrlClient kubernetes.Interface // the in-cluster controller's (its own user agent)
	// reconciled: reconcilers ran since the last batch end. Only such a
	// batch end counts towards a member's settle window (the convergence's
	// first batch end follows force-releases alone).
	reconciled bool
	// broker releases through the engine as a broker would; brokerClient
	// writes its Leases by name; admin applies new definitions.
	broker, admin *engine.Engine
	brokerClient  kubernetes.Interface
	actors        chaosActors
	// skewed reconciles the elastic pool with a clock elasticSkew off; el
	// is the state of the elastic pool's actors.
	skewed *engine.Engine
	el     elasticActors
	// evictor evicts member Pods (chaos_evictor_integration_test.go).
	evictor evictorActor
}

func newChaosHarness(t *testing.T, size int) *chaosHarness {
	env := kubetest.Require(t)
	h := &chaosHarness{
		t: t, env: env, clk: &chaosClock{}, replay: newReplay(),
		counts: map[string]int{}, errSamples: map[string]string{}, locks: map[string]bool{},
		failed: map[string]*failedRelease{}, vanished: map[string]*vanished{}, notReady: map[string]int{}, unsettled: map[string]*stuckNote{},
		releases: map[string]int{}, holds: map[types.UID]string{}, leftBehind: map[types.UID]bool{},
	}
	// Each actor has its own user agent, so that the plane's audit log
	// names the one that sent a delete (the field manager stays the test's).
	// They run on this machine and name its clock as the command does
	// (ClockID); the slow reconciler runs on another machine.
	mkAt := func(actor string, wait time.Duration, now func() time.Time, clock string) *engine.Engine {
		return &engine.Engine{
			Cluster:   stampCheck{Cluster: kube.NewCluster(onRunClock(env.ClientWithAgent(t, actor), h.clk), env.Namespace), now: now, bad: h.violate},
			Namespace: env.Namespace, Now: now, WaitTimeout: wait, ClockID: clock,
		}
	}
	mk := func(actor string, wait time.Duration) *engine.Engine {
		return mkAt(actor, wait, h.clk.Now, kube.ClockID())
	}
	h.user, h.failing, h.cli = mk("user", 20*time.Second), mk("failing-release", 1500*time.Millisecond), mk("cli", 20*time.Second)
	h.broker, h.admin = mk("broker", 20*time.Second), mk("admin", 20*time.Second)
	h.skewed = mkAt("skewed-reconciler", 20*time.Second, func() time.Time { return h.clk.Now().Add(elasticSkew) }, kube.ClockID()+"-slow")
	h.brokerClient = onRunClock(env.ClientWithAgent(t, "broker"), h.clk)
	h.actors.init()
	h.evictor.init(h)
	h.ctrlClient = onRunClock(env.ClientWithAgent(t, "controller"), h.clk)
	// Lift every hold before the namespace goes, whatever the outcome.
	t.Cleanup(func() { h.liftHolds(context.Background(), true) })
	for pool, spec := range map[string]engine.Spec{chaosPool: pooltest.SmallSpec(pooltest.Image, size), elasticPool: elasticSpec()} {
		if _, err := h.user.Apply(t.Context(), pool, spec); err != nil {
			t.Fatalf("apply %s: %v", pool, err)
		}
	}
	waitReady(t, env, h.user, chaosPool, size)
	waitReady(t, env, h.user, elasticPool, elasticStart)
	h.replay.byKwok = h.deletedByKwok
	h.replay.el = newElasticTrack(env.Namespace)
	h.rec = &recorder{clk: h.clk, env: env}
	h.rec.start(t.Context(), t)
	return h
}

func (h *chaosHarness) violate(format string, a ...any) {
	h.mu.Lock()
	h.violations++
	n := h.violations
	h.mu.Unlock()
	if n <= maxViolations {
		h.t.Errorf("batch %d: "+format, append([]any{h.batchNo()}, a...)...)
	}
}

func (h *chaosHarness) batchNo() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.batch
}

func (h *chaosHarness) count(name string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.counts[name]++
		return
	}
	key := name + " failed"
	h.counts[key]++
	if _, ok := h.errSamples[key]; !ok {
		h.errSamples[key] = err.Error()
	}
}

func (h *chaosHarness) add(name string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[name] += n
}

// lock reserves a member for one destructive operation of the test.
func (h *chaosHarness) lock(member string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.locks[member] {
		return false
	}
	for _, m := range h.holds {
		if m == member {
			return false
		}
	}
	h.locks[member] = true
	return true
}

func (h *chaosHarness) unlock(member string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.locks, member)
}

// view reads the fixed pool.
func (h *chaosHarness) view(ctx context.Context) (engine.PoolView, error) {
	return h.viewOf(ctx, chaosPool)
}

func (h *chaosHarness) viewOf(ctx context.Context, pool string) (engine.PoolView, error) {
	snap, err := h.user.Cluster.Snapshot(ctx, pool)
	if err != nil {
		return engine.PoolView{}, err
	}
	return engine.Observe(snap, h.clk.Now()), nil
}

// pick returns a random member of the fixed pool that ok accepts and that
// the test could lock.
func (h *chaosHarness) pick(ctx context.Context, rng *rand.Rand, ok func(*engine.Member) bool) (*engine.Member, bool) {
	return h.pickIn(ctx, rng, chaosPool, ok)
}

func (h *chaosHarness) pickIn(ctx context.Context, rng *rand.Rand, pool string, ok func(*engine.Member) bool) (*engine.Member, bool) {
	v, err := h.viewOf(ctx, pool)
	if err != nil {
		return nil, false
	}
	var cands []*engine.Member
	for i := range v.Members {
		if ok(&v.Members[i]) {
			cands = append(cands, &v.Members[i])
		}
	}
	rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	for _, m := range cands {
		if h.lock(m.Name) {
			return m, true
		}
	}
	return nil, false
}

func claimedWithData(m *engine.Member) bool {
	return m.Claimed && m.PVC != nil && m.PVC.DeletionTimestamp == nil
}

// opKind is an operation and its weight.
type opKind struct {
	name   string
	weight int
}

// opKinds are the fixed pool's operations and their weights.
var opKinds = []opKind{
	{"claim", 24}, {"double-claim", 10}, {"release", 14}, {"force-release", 5}, {"failing-release", 4},
	{"vanish-pod", 6}, {"vanish-member", 2}, {"reconcile", 14}, {"resize", 4},
	{"broker", 6}, {"admin-apply", 3},
	{"evict", 8},
}

// elasticOpKinds are the elastic pool's (chaos_elastic_integration_test.go),
// run by workers of their own beside the fixed pool's.
var elasticOpKinds = []opKind{
	{"elastic-claim", 8}, {"elastic-release", 5}, {"elastic-resize", 2}, {"elastic-toggle", 1},
	{"elastic-skewed-reconcile", 2}, {"elastic-foreign", 1},
}

func pickOp(rng *rand.Rand, kinds []opKind) string {
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	n := rng.IntN(total)
	for _, k := range kinds {
		if n < k.weight {
			return k.name
		}
		n -= k.weight
	}
	panic("unreachable")
}

func (h *chaosHarness) runOp(ctx context.Context, rng *rand.Rand, op string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	id := chaosIdentities[rng.IntN(len(chaosIdentities))]
	switch op {
	case "claim":
		res, err := h.user.Claim(ctx, chaosPool, id)
		if errors.Is(err, engine.ErrNoFreeMembers) {
			h.count("claim: no free member", nil)
			return
		}
		h.checkClaimResult(ctx, id, res)
		h.count("claim", err)
	case "double-claim":
		// The same user claims from two places at once.
		var wg sync.WaitGroup
		res := make([]engine.ClaimResult, 2)
		errs := make([]error, 2)
		for i := range res {
			wg.Go(func() { res[i], errs[i] = h.user.Claim(ctx, chaosPool, id) })
		}
		wg.Wait()
		for i := range res {
			h.checkClaimResult(ctx, id, res[i])
		}
		switch {
		case errs[0] != nil || errs[1] != nil:
			err := errors.Join(errs[0], errs[1])
			if errors.Is(err, engine.ErrNoFreeMembers) {
				h.count("double-claim: no free member", nil)
				return
			}
			h.count("double-claim", err)
		case res[0].Member == res[1].Member:
			h.count("double-claim: one member", nil)
		default:
			// Worth a look but not a violation by itself: another goroutine
			// of the same identity may have released meanwhile. That the
			// identity ends with one member is checked at the batch end.
			h.count("double-claim: two members returned", nil)
		}
	case "release", "force-release":
		h.releaseIn(ctx, rng, chaosPool, op)
	case "failing-release":
		h.failingRelease(ctx, rng)
	case "vanish-pod", "vanish-member":
		m, ok := h.pick(ctx, rng, func(m *engine.Member) bool {
			return claimedWithData(m) && m.Pod != nil && m.Pod.DeletionTimestamp == nil && h.vanishedOf(m.Name) == nil
		})
		if !ok {
			h.count(op+": nothing claimed", nil)
			return
		}
		defer h.unlock(m.Name)
		h.vanish(ctx, m, op == "vanish-member")
	case "reconcile":
		_, err := h.cli.Reconcile(ctx, chaosPool)
		h.count("reconcile (command line)", err)
	case "resize":
		_, err := h.user.Resize(ctx, chaosPool, 3+rng.IntN(4))
		h.count("resize", err)
	case "broker":
		h.brokerOp(ctx, rng)
	case "admin-apply":
		h.adminApply(ctx, rng)
	case "evict":
		h.evictOp(ctx, rng)
	case "elastic-claim":
		h.elasticClaim(ctx, rng)
	case "elastic-release":
		h.elasticRelease(ctx, rng)
	case "elastic-resize":
		h.elasticResize(ctx, rng)
	case "elastic-toggle":
		h.elasticToggle(ctx, rng)
	case "elastic-skewed-reconcile":
		h.skewedReconcile(ctx)
	case "elastic-foreign":
		h.elasticForeign(ctx, rng)
	}
}

// releaseIn releases a claimed member of pool by its holder, or by force
// (op "force-release").
func (h *chaosHarness) releaseIn(ctx context.Context, rng *rand.Rand, pool, op string) {
	m, ok := h.pickIn(ctx, rng, pool, func(m *engine.Member) bool { return m.Claimed })
	if !ok {
		h.count(op+": nothing claimed", nil)
		return
	}
	defer h.unlock(m.Name)
	var err error
	var res engine.ReleaseResult
	h.mu.Lock()
	asked := h.askReleaseLocked(m.Name)
	h.mu.Unlock()
	if op == "force-release" {
		res, err = h.user.ForceRelease(ctx, pool, m.Name)
	} else {
		res, err = h.user.Release(ctx, pool, m.Name, m.Holder())
	}
	h.releaseAnswered(m.Name, asked, res, err)
	if err != nil && m.PVC != nil && !errors.Is(err, engine.ErrConflict) && !errors.Is(err, engine.ErrNotFound) &&
		!errors.Is(err, engine.ErrMaintenance) && !errors.Is(err, engine.ErrNotHolder) {
		// A release that failed while destroying stays in maintenance
		// until a reconcile finishes it: followed like the test's own.
		// (One refused before it took the claim destroyed nothing; the
		// member may be in maintenance then for a reconciler's work.)
		if v, verr := h.viewOf(ctx, pool); verr == nil {
			if after := v.Member(m.Name); after != nil && after.InMaintenance() && (after.PVC == nil || after.PVC.UID == m.PVC.UID) {
				h.mu.Lock()
				if h.failed[m.Name] == nil {
					h.failed[m.Name] = &failedRelease{member: m.Name, identity: m.Holder(), pvcUID: m.PVC.UID, batch: h.batch, clockOff: h.clk.off.Load(), why: fmt.Sprintf("%s at %s: %v", op, h.clk.Now().Format("15:04:05.000"), err)}
				}
				h.mu.Unlock()
				h.count(op+": failed while destroying", nil)
			}
		}
	}
	h.count(op, err)
}

func (h *chaosHarness) vanishedOf(member string) *vanished {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.vanished[member]
}

// vanish deletes a claimed member's Pod (and with withPVC its PVC too) behind
// the engine's back.
func (h *chaosHarness) vanish(ctx context.Context, m *engine.Member, withPVC bool) {
	op := "vanish-pod"
	if withPVC {
		op = "vanish-member"
	}
	h.mu.Lock()
	h.replay.byTest[m.Pod.UID] = true
	if withPVC {
		h.replay.byTest[m.PVC.UID] = true
	}
	if b := h.actors.brokerHeld[m.Name]; b != nil {
		b.vanished = true
	}
	h.mu.Unlock()
	pods := h.env.Client.CoreV1().Pods(h.env.Namespace)
	err := pods.Delete(ctx, m.Pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &m.Pod.UID}})
	if err == nil && withPVC {
		err = h.env.Client.CoreV1().PersistentVolumeClaims(h.env.Namespace).Delete(ctx, m.PVC.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &m.PVC.UID}})
	}
	if err != nil {
		h.count(op, err)
		return
	}
	h.mu.Lock()
	h.vanished[m.Name] = &vanished{member: m.Name, identity: m.Holder(), pvcUID: m.PVC.UID, withPVC: withPVC, batch: h.batch, at: time.Now(), releases: h.releases[m.Name]}
	h.mu.Unlock()
	h.count(op, nil)
}

// failingRelease holds a claimed member's PVC with a finalizer and releases
// the member with an engine that waits only briefly: the release fails while
// destroying, and the member must stay in maintenance, never go back to its user.
func (h *chaosHarness) failingRelease(ctx context.Context, rng *rand.Rand) {
	m, ok := h.pick(ctx, rng, func(m *engine.Member) bool { return claimedWithData(m) && h.failedOf(m.Name) == nil })
	if !ok {
		h.count("failing-release: nothing claimed", nil)
		return
	}
	defer h.unlock(m.Name)
	if err := h.setHold(ctx, m.PVC.Name, m.PVC.UID, true); err != nil {
		h.count("failing-release: hold", err)
		return
	}
	h.mu.Lock()
	h.holds[m.PVC.UID] = m.Name
	h.mu.Unlock()
	f := &failedRelease{member: m.Name, identity: m.Holder(), pvcUID: m.PVC.UID, held: true, batch: h.batchNo(), clockOff: h.clk.off.Load()}
	h.mu.Lock()
	asked := h.askReleaseLocked(m.Name)
	h.mu.Unlock()
	res, err := h.failing.Release(ctx, chaosPool, m.Name, m.Holder())
	h.releaseAnswered(m.Name, asked, res, err)
	if err == nil && !res.NoOp {
		h.mu.Lock()
		hist := h.historyOf(m.Name)
		h.mu.Unlock()
		h.violate("release of %s succeeded although its PVC was held Terminating (%+v)%s", m.Name, res, hist)
	}
	v, verr := h.view(ctx)
	after := (*engine.Member)(nil)
	if verr == nil {
		after = v.Member(m.Name)
	}
	switch {
	// res.NoOp: the claim the pick saw was gone when the release read the
	// pool (a concurrent claim of the same identity gave it back), so the
	// release rightly did nothing; the PVC was held but never deleted.
	case res.NoOp || errors.Is(err, engine.ErrNotHolder) || errors.Is(err, engine.ErrConflict) || errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrMaintenance) ||
		(after != nil && after.PVC != nil && after.PVC.UID == m.PVC.UID && after.PVC.DeletionTimestamp == nil):
		// The claim changed before this release took it: nothing was destroyed.
		h.count("failing-release: claim changed first", nil)
		if herr := h.setHold(ctx, m.PVC.Name, m.PVC.UID, false); herr != nil {
			h.count("failing-release: lift", herr)
		}
		return
	case after != nil && after.Claimed && after.PVC != nil && after.PVC.UID == m.PVC.UID:
		h.mu.Lock()
		why := h.explain(ctx, m.Name)
		h.mu.Unlock()
		h.violate("failed release of %s gave the claim back to %q while its PVC is Terminating (%v)%s", m.Name, after.Holder(), err, why)
	case after != nil && !after.InMaintenance():
		h.mu.Lock()
		why := h.explain(ctx, m.Name)
		h.mu.Unlock()
		h.violate("failed release of %s left no maintenance Lease (holder %q, state %s; %v)%s", m.Name, after.Holder(), after.State, err, why)
	}
	f.why = fmt.Sprintf("failing-release at %s: %v", h.clk.Now().Format("15:04:05.000"), err)
	f.unseen = verr != nil
	h.mu.Lock()
	h.failed[m.Name] = f
	h.mu.Unlock()
	h.count("failing-release", nil)
}

func (h *chaosHarness) failedOf(member string) *failedRelease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed[member]
}

// setHold adds or removes holdFinalizer on the PVC with that UID.
func (h *chaosHarness) setHold(ctx context.Context, name string, uid types.UID, on bool) (err error) {
	pvcs := h.env.Client.CoreV1().PersistentVolumeClaims(h.env.Namespace)
	if !on {
		defer func() {
			if err == nil {
				h.mu.Lock()
				delete(h.holds, uid)
				for _, f := range h.failed {
					if f.pvcUID == uid {
						f.held = false
					}
				}
				h.mu.Unlock()
			}
		}()
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pvc, err := pvcs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && pvc.UID != uid) {
			if on {
				return fmt.Errorf("PVC %s is gone", name)
			}
			return nil
		}
		if err != nil {
			return err
		}
		has := slices.Contains(pvc.Finalizers, holdFinalizer)
		if has == on {
			return nil
		}
		if on {
			pvc.Finalizers = append(pvc.Finalizers, holdFinalizer)
		} else {
			pvc.Finalizers = slices.DeleteFunc(pvc.Finalizers, func(f string) bool { return f == holdFinalizer })
		}
		_, err = pvcs.Update(ctx, pvc, metav1.UpdateOptions{})
		return err
	})
}

// liftHolds lifts the holds of failed releases: all of them, or each with
// probability 1/2 (so that some stay held through the next batch).
func (h *chaosHarness) liftHolds(ctx context.Context, all bool) {
	h.mu.Lock()
	lift := map[types.UID]string{}
	for uid, member := range h.holds {
		if all || rand.IntN(2) == 0 {
			lift[uid] = member
		}
	}
	h.mu.Unlock()
	for uid, member := range lift {
		if err := h.setHold(ctx, engine.PVCName(member), uid, false); err != nil {
			h.t.Errorf("lifting the hold on %s: %v", member, err)
		}
	}
}

// startController runs the in-cluster reconciler (reconcile --all --watch)
// until the returned stop is called.
func (h *chaosHarness) startController(ctx context.Context) (stop func()) {
	ctrl, err := controller.New(controller.Options{
		Client: h.ctrlClient, Namespace: h.env.Namespace, Resync: time.Second, Now: h.clk.Now, ClockID: kube.ClockID(),
		Report: func(_ engine.PoolRef, _ engine.ReconcileResult, err error, _ time.Duration) {
			h.count("reconcile (controller)", err)
		},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(cctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("controller: %v", err)
		}
	}
}

// runBatch runs n operations from the workers at once, with the controller
// running throughout: of every elasticShare operations one is the elastic
// pool's, run by elasticWorkers of their own beside the fixed pool's
// workers. during (when set) runs beside them, on the calling goroutine, and
// the batch goes on until it returns.
func (h *chaosHarness) runBatch(ctx context.Context, n, workers int, seed uint64, during func()) {
	h.mu.Lock()
	h.reconciled = true
	h.mu.Unlock()
	stop := h.startController(ctx)
	var besideDone atomic.Bool // the workers go on until during returns
	besideDone.Store(during == nil)
	var wg sync.WaitGroup
	elastic := n / elasticShare
	for _, g := range []struct {
		kinds      []opKind
		n, workers int
		stream     uint64
	}{{opKinds, n - elastic, workers, 0}, {elasticOpKinds, elastic, elasticWorkers, 1 << 32}} {
		next := new(atomic.Int64)
		for w := range g.workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(seed, g.stream+uint64(w)))
				for {
					i := next.Add(1)
					if i > int64(g.n) && besideDone.Load() {
						return
					}
					h.runOp(ctx, rng, pickOp(rng, g.kinds))
					if i <= int64(g.n) {
						h.add("operations", 1)
					} else {
						h.add("operations beyond the batch while the restart ran", 1)
					}
				}
			})
		}
	}
	if during != nil {
		func() {
			defer besideDone.Store(true)
			during() // on the test's goroutine: it may fail the test
		}()
	}
	wg.Wait()
	stop()
}

// endBatch checks the invariants while nothing runs: first the history the
// watches delivered, then the API server's state read fresh. It reconciles
// the elastic pool once first (on the run's clock), so that its size is
// judged by a reconcile that saw the batch's last claims.
func (h *chaosHarness) endBatch(ctx context.Context) {
	t := h.t
	h.mu.Lock()
	h.batch++
	batch := h.batch
	counting := h.reconciled
	h.reconciled = false
	h.mu.Unlock()
	elRes, elErr := h.cli.Reconcile(ctx, elasticPool)
	h.env.WaitFor(t, 60*time.Second, "the watches to deliver every change", func() (bool, error) { return h.rec.caughtUp(ctx) })
	h.mu.Lock()
	events := h.rec.take()
	h.mu.Unlock()
	for _, e := range events {
		h.replay.apply(e, h.violate)
	}
	h.mu.Lock()
	// A claimed start whose fresh reads the outage cut keeps its Pod (never
	// running on that PVC: the replay checks it) until that PVC is gone.
	cut := h.afterOutage(batch)
	h.mu.Unlock()
	for uid, r := range h.replay.onDeleting {
		if cut {
			continue
		}
		m := r.member
		h.violate("%s: the Pod (uid %s) created while its PVC (uid %s) was being deleted is still there at the batch end, with that PVC%s", m, uid, r.pvc, h.explain(ctx, m))
		delete(h.replay.onDeleting, uid)
	}

	pools := []string{chaosPool, elasticPool}
	views := map[string]*engine.PoolView{}
	for _, pool := range pools {
		v, err := h.viewOf(ctx, pool)
		if err != nil {
			t.Fatalf("batch %d: read the pool %s: %v", batch, pool, err)
		}
		views[pool] = &v
	}
	member := func(name string) *engine.Member { return views[poolOf(name)].Member(name) }
	for _, pool := range pools {
		held := map[string][]string{}
		for i := range views[pool].Members {
			if m := &views[pool].Members[i]; m.Claimed {
				held[m.Holder()] = append(held[m.Holder()], m.Name)
			}
		}
		for id, ms := range held {
			if len(ms) > 1 {
				var why string
				for _, m := range ms {
					why += h.explain(ctx, m)
				}
				h.violate("%q holds %d members of %s: %s%s", id, len(ms), pool, strings.Join(ms, ", "), why)
			}
		}
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	deadline := h.deadline(batch)
	h.checkBrokers(ctx, *views[chaosPool])
	h.checkRefusals(events)
	h.checkElastic(ctx, elRes, elErr, views[elasticPool])
	if counting {
		for _, pool := range pools {
			h.checkDrift(ctx, *views[pool], now, deadline)
		}
	}
	for _, pool := range pools {
		for i := range views[pool].Members {
			m := &views[pool].Members[i]
			f := h.failed[m.Name]
			if m.InMaintenance() && f == nil && batch == h.outageEnd {
				// Cut by the outage: followed like a failed release, so its
				// Lease must go stale and a reconcile must finish the work.
				// The data counts as being destroyed only when it was marked.
				var uid types.UID
				if m.PVC != nil && (m.PVC.DeletionTimestamp != nil || m.PVC.Annotations[engine.AnnotationReleased] != "") {
					uid = m.PVC.UID
				}
				h.failed[m.Name] = &failedRelease{member: m.Name, identity: m.Holder(), pvcUID: uid, batch: batch, clockOff: h.clk.off.Load(),
					why: "a step the API server restart cut, Lease stamped " + stampOf(m.Lease).Format("15:04:05.000")}
				h.counts["reconciler Leases left by steps the outage cut"]++
				continue
			}
			if m.InMaintenance() && f == nil && !h.leftBehind[m.Lease.UID] {
				// Once per Lease: it stays until stale, batch after batch.
				h.leftBehind[m.Lease.UID] = true
				h.violateLocked("reconciler Lease on %s left behind with no reconciler running (stamped %s ago)%s", m.Name, h.clk.Now().Sub(stampOf(m.Lease)).Round(time.Second), h.explain(ctx, m.Name))
			}
		}
	}
	for name, f := range h.failed {
		m := member(name)
		switch {
		case f.unseen && m != nil && m.Claimed && m.Holder() == f.identity && m.PVC != nil && m.PVC.UID == f.pvcUID &&
			m.PVC.Annotations[engine.AnnotationReleased] == "" && m.PVC.DeletionTimestamp == nil:
			// A release the outage cut before it took the claim (its Lease
			// update never reached the API server): nothing was marked or
			// destroyed, and the claim is rightly still the user's. The
			// hold is lifted with the others.
			h.counts["failing-release: cut before it took the claim"]++
			delete(h.failed, name)
		case m != nil && m.Claimed && m.PVC != nil && m.PVC.UID == f.pvcUID:
			h.violateLocked("failed release of %s: the claim went back to %q with the data being destroyed (PVC marked %q, deleting %v; %s)%s",
				name, m.Holder(), m.PVC.Annotations[engine.AnnotationReleased], m.PVC.DeletionTimestamp != nil, f.why, h.explain(ctx, name))
			delete(h.failed, name)
		case f.held && (m == nil || !m.InMaintenance()) && h.clk.off.Load() == f.clockOff:
			h.violateLocked("failed release of %s: its PVC is still held Terminating but the member is not in maintenance (%s)%s", name, f.why, h.explain(ctx, name))
			delete(h.failed, name)
		case m == nil || (!m.InMaintenance() && (m.PVC == nil || m.PVC.UID != f.pvcUID)):
			h.counts["failed release finished by a reconcile"]++
			delete(h.failed, name)
		case f.jumped > 0 && h.idle(name, f.jumpedAt, now) >= deadline:
			var fin []string
			if m.PVC != nil {
				fin = m.PVC.Finalizers
			}
			h.violateLocked("failed release of %s: its maintenance Lease went stale %s ago (batch %d) and no reconcile finished it: no change of the member for %s (state %s, stale %v, Pod %v, PVC finalizers %v; %s)%s",
				name, now.Sub(f.jumpedAt).Round(time.Second), f.jumped, h.idle(name, f.jumpedAt, now).Round(time.Second), m.State, m.InMaintenance() && m.HoldStale(), m.Pod != nil, fin, f.why, h.explain(ctx, name))
			delete(h.failed, name)
		}
	}
	for name, x := range h.vanished {
		m := member(name)
		switch {
		case m == nil || m.Holder() != x.identity || h.releases[name] != x.releases:
			h.counts["vanished: released before it was back"]++
			delete(h.vanished, name)
		case !x.withPVC && m.Pod != nil && m.PVC != nil && m.PVC.UID == x.pvcUID && m.Pod.DeletionTimestamp == nil:
			h.counts["vanished Pod started again, same data, claim kept"]++
			delete(h.vanished, name)
		case x.withPVC && m.Pod != nil && m.PVC != nil && m.PVC.UID != x.pvcUID && m.Pod.DeletionTimestamp == nil:
			h.counts["vanished member rebuilt, claim kept"]++
			delete(h.vanished, name)
		case !x.withPVC && m.PVC != nil && m.PVC.UID != x.pvcUID:
			h.violateLocked("%s: its Pod vanished and its data was replaced (PVC uid %s, was %s) while %q kept the claim%s", name, m.PVC.UID, x.pvcUID, x.identity, h.explain(ctx, name))
			delete(h.vanished, name)
		case h.idle(name, x.at, now) >= deadline:
			h.violateLocked("%s, claimed by %q, is %s %s after its Pod vanished (batch %d), with no change of its objects for %s%s",
				name, x.identity, m.State, now.Sub(x.at).Round(time.Second), x.batch, h.idle(name, x.at, now).Round(time.Second), h.explain(ctx, name))
			delete(h.vanished, name)
		}
	}
	for _, pool := range pools {
		h.repairPlaneArtifacts(ctx, *views[pool])
	}
	present := map[string]bool{}
	for _, pool := range pools {
		for i := range views[pool].Members {
			m := &views[pool].Members[i]
			present[m.Name] = true
			foreign := h.el.foreign != nil && h.el.foreign.member == m.Name
			if m.State == engine.StateReady || m.AboveSize || h.failed[m.Name] != nil || h.vanished[m.Name] != nil || m.Blocked != "" || foreign {
				// Settled, followed by another check, or left alone by rule
				// (an object another program wrote holds its name).
				delete(h.notReady, m.Name)
				delete(h.unsettled, m.Name)
				continue
			}
			if p := m.Pod; p != nil && p.DeletionTimestamp != nil && p.Spec.NodeName == "" && time.Since(p.DeletionTimestamp.Time) < podGCWindow {
				// A delete cut mid-request (the controller stopped at the batch
				// end) left an unscheduled Pod Terminating; the plane's Pod GC
				// removes it on its own period, as on a real cluster.
				h.counts["unscheduled Pods left Terminating, for the plane's Pod GC"]++
				continue
			}
			if !counting {
				continue
			}
			h.notReady[m.Name]++
			note, idle, stuck := judgeStuck(h.unsettled[m.Name], false, m.State, h.replay.lastChange[m.Name], now, deadline)
			h.unsettled[m.Name] = note
			if stuck && !note.reported {
				note.reported = true
				h.violateLocked("%s has been %s for %s with no change of its Pod, PVC or Lease (holder %q; found %s at every batch end since %s UTC, its last change seen at %s UTC) %s%s",
					m.Name, m.State, idle.Round(time.Second), m.Holder(), m.State, note.since.UTC().Format("15:04:05.000"), h.replay.lastChange[m.Name].UTC().Format("15:04:05.000"), m.Message, h.explain(ctx, m.Name))
			}
		}
	}
	for name := range h.unsettled {
		if !present[name] {
			delete(h.unsettled, name)
			delete(h.notReady, name)
		}
	}
	// The failed releases whose data is free to go get a clock past the
	// staleness of their maintenance Lease, at the next batch end that
	// finds them in maintenance.
	jump := false
	for _, f := range h.failed {
		if !f.held && f.jumped == 0 {
			f.jumped, f.jumpedAt, jump = batch, now, true
		}
	}
	if jump {
		h.clk.jump(engine.ReconcilerLeaseTTL + time.Minute)
		h.counts["clock jumps past the maintenance staleness"]++
	}
	if h.violations > maxViolations {
		t.Fatalf("batch %d: %d violations; stopping", batch, h.violations)
	}
}

// stuckNote is what the batch ends know of a member that is not settled:
// the state the last one found it in, and since when (wall clock).
type stuckNote struct {
	state    engine.State
	since    time.Time
	reported bool
}

// judgeStuck is the rule of "stuck". A member that is not settled (not
// Ready, not above the size, not followed by another check) is stuck when
// it has been in the same state, with no change of its objects (no Pod, PVC
// or Lease event: no step of a reconciler, a claim or a release on it), for
// deadline. A member the engine is working on changes all the time, however
// often the batch ends find it between two steps. prev is what the
// previous batch end noted (nil: it found the member settled); lastChange
// is when the watches delivered the member's last event (zero: none). It
// returns the note to keep (nil when settled), how long the member has been
// idle, and whether that is the deadline or more.
func judgeStuck(prev *stuckNote, settled bool, state engine.State, lastChange, now time.Time, deadline time.Duration) (*stuckNote, time.Duration, bool) {
	if settled {
		return nil, 0, false
	}
	n := &stuckNote{state: state, since: now}
	if prev != nil && prev.state == state {
		c := *prev
		n = &c
	}
	idle := idleSince(n.since, lastChange, now)
	return n, idle, idle >= deadline
}

// idleSince is how long nothing has happened at now: since the later of
// since (when a check first found the condition) and the last change.
func idleSince(since, lastChange, now time.Time) time.Duration {
	if lastChange.After(since) {
		since = lastChange
	}
	return now.Sub(since)
}

// idle is idleSince for a member, from the replay's last change of it (h.mu
// held).
func (h *chaosHarness) idle(member string, since, now time.Time) time.Duration {
	return idleSince(since, h.replay.lastChange[member], now)
}

// planeArtifact is the scheduler's message for a PVC whose PersistentVolume
// the plane lost: kwok's volume stages race the PV binder when a PVC is
// created again under the name of one just deleted, and the binder releases
// (and kwok deletes) the new PV. No engine is involved; the member can never
// start.
const planeArtifact = "bound to non-existent persistentvolume"

// repairPlaneArtifacts deletes the Pod and PVC of members the plane left
// without a volume (with h.mu held), as an administrator would: the
// reconcilers build them again (a claimed one keeping its claim, so it is
// followed as a vanished member).
func (h *chaosHarness) repairPlaneArtifacts(ctx context.Context, v engine.PoolView) {
	for i := range v.Members {
		m := &v.Members[i]
		if m.Pod == nil || m.PVC == nil || m.InMaintenance() {
			continue
		}
		switch {
		case m.State == engine.StateUnschedulable && lostVolume(m.Message, h.notReady[m.Name]):
		case (m.State == engine.StateUnschedulable || m.State == engine.StateStarting) && m.Pod.Spec.NodeName == "" &&
			(misbound(m.PVC) || (m.PVC.Spec.VolumeName == "" && h.notReady[m.Name] >= 1)):
			// Not placed, on a PVC the plane bound to a volume made for
			// another claim, lost, or never provisioned by the batch end
			// after the one that found it not Ready (the plane provisions
			// in milliseconds), whatever the scheduler's condition says:
			// it may hold such a Pod with PodScheduled=False and a reason
			// other than Unschedulable (SchedulerError, Starting in the
			// engine's states, which show no message for it) until its
			// next retry, minutes later. The rule of lostVolume, by the
			// objects instead of the scheduler's message.
			h.counts["of those, not placed on a PVC the plane misbound or never provisioned"]++
		default:
			continue
		}
		h.replay.byTest[m.Pod.UID], h.replay.byTest[m.PVC.UID] = true, true
		err := h.env.Client.CoreV1().Pods(h.env.Namespace).Delete(ctx, m.Pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &m.Pod.UID}})
		if err == nil || apierrors.IsNotFound(err) {
			err = h.env.Client.CoreV1().PersistentVolumeClaims(h.env.Namespace).Delete(ctx, m.PVC.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &m.PVC.UID}})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			h.t.Errorf("repairing %s (%s): %v", m.Name, m.Message, err)
			continue
		}
		h.counts["plane artifacts repaired (a PVC whose volume the plane lost)"]++
		delete(h.notReady, m.Name)
		if m.Claimed && h.vanished[m.Name] == nil {
			h.vanished[m.Name] = &vanished{member: m.Name, identity: m.Holder(), pvcUID: m.PVC.UID, withPVC: true, batch: h.batch, at: time.Now(), releases: h.releases[m.Name]}
		}
	}
}

// misbound tells a PVC the plane's provisioning broke: kwok names the volume
// it provisions for a claim pvc-<claim UID> and patches the claim by name, so
// a step left over for a deleted claim lands on its successor of the same
// name (seen on the plane: PVC uid 35c654dd bound to pvc-3e2e1b20-…, events
// ClaimMisbound and ClaimLost); or the binder marked the claim Lost.
func misbound(c *corev1.PersistentVolumeClaim) bool {
	return c.Status.Phase == corev1.ClaimLost || (c.Spec.VolumeName != "" && c.Spec.VolumeName != "pvc-"+string(c.UID))
}

// lostVolume tells, from the scheduler's message, a member the plane left
// without a volume: a PVC bound to a PV that is gone, or (not Ready at the
// batch end before too) a PVC that kwok never provisioned. A PVC is
// provisioned within milliseconds on this plane.
func lostVolume(msg string, notReadyBefore int) bool {
	switch {
	case strings.Contains(msg, planeArtifact):
		return true
	case strings.Contains(msg, `persistentvolume "`) && strings.Contains(msg, "not found"):
		return true
	case strings.Contains(msg, "unbound immediate PersistentVolumeClaims"):
		return notReadyBefore >= 1
	}
	return false
}

// deadline is how long a member may stay unsettled with no change at batch
// end batch (h.mu held): none while the plane recovers from an API server
// restart, longer for a while after it.
func (h *chaosHarness) deadline(batch int) time.Duration {
	if !h.outageOver.IsZero() && time.Since(h.outageOver) < outageRecovery {
		return math.MaxInt64
	}
	if h.afterOutage(batch) {
		return stuckDeadlineAfterOutage
	}
	return stuckDeadline
}

// afterOutage tells the batch ends of the window after an API server restart
// (h.mu held).
func (h *chaosHarness) afterOutage(batch int) bool {
	return h.outageEnd > 0 && batch >= h.outageEnd && batch-h.outageEnd < afterOutage
}

// historyOf is the member's last events as the replay saw them (h.mu held),
// each at the wall clock (UTC) of its delivery; Lease stamps are on the
// run's clock, whose reading the header gives beside the wall clock's.
func (h *chaosHarness) historyOf(member string) string {
	return "\n\t\thistory of " + member + " (now " + time.Now().UTC().Format("15:04:05.000") + " UTC, the run's clock " + h.clk.Now().Format("15:04:05.000") + "): " +
		strings.Join(h.replay.recent[member], "; ")
}

func (h *chaosHarness) violateLocked(format string, a ...any) {
	h.violations++
	if h.violations <= maxViolations {
		h.t.Errorf("batch %d: "+format, append([]any{h.batch}, a...)...)
	}
}

// converge releases everything, lifts every hold, removes the other
// program's object, lets both reconcilers run and requires the fixed pool to
// end with no Lease and every member Ready, and the elastic one at rest.
func (h *chaosHarness) converge(ctx context.Context) {
	t := h.t
	h.liftHolds(ctx, true)
	h.brokersEnd(ctx)
	h.removeForeign(ctx)
	h.env.WaitFor(t, 2*time.Minute, "every claim released", func() (bool, error) {
		left := 0
		for _, pool := range []string{chaosPool, elasticPool} {
			v, err := h.viewOf(ctx, pool)
			if err != nil {
				return false, nil
			}
			for i := range v.Members {
				if m := &v.Members[i]; m.Claimed {
					left++
					h.mu.Lock()
					asked := h.askReleaseLocked(m.Name)
					h.mu.Unlock()
					res, err := h.user.ForceRelease(ctx, pool, m.Name)
					h.releaseAnswered(m.Name, asked, res, err)
					h.count("final force-release", err)
				}
			}
		}
		return left == 0, nil
	})
	h.mu.Lock()
	h.el.released = time.Now()
	h.mu.Unlock()
	h.endBatch(ctx) // quiescent: the failed releases get their clock jump here
	if v, err := h.view(ctx); err == nil {
		for i := range v.Members {
			if v.Members[i].InMaintenance() && !v.Members[i].HoldStale() {
				h.clk.jump(engine.ReconcilerLeaseTTL + time.Minute)
				h.add("clock jumps past the maintenance staleness", 1)
				break
			}
		}
	}
	h.rollBackBadImage(ctx)
	stop := h.startController(ctx)
	// The elastic pool comes to rest beside the fixed pool's convergence:
	// its settle time runs meanwhile.
	var rest sync.WaitGroup
	rest.Go(func() { h.elasticAtRest(ctx) })
	var last engine.PoolView
	deadline := time.Now().Add(3 * time.Minute)
	err := waitUntil(ctx, deadline, func() bool {
		_, err := h.cli.Reconcile(ctx, chaosPool)
		h.count("reconcile (command line, final)", err)
		v, verr := h.view(ctx)
		if verr != nil {
			return false
		}
		last = v
		h.mu.Lock()
		h.repairPlaneArtifacts(ctx, v)
		h.mu.Unlock()
		ready, stuckAbove := 0, 0
		for i := range v.Members {
			m := &v.Members[i]
			h.mu.Lock()
			stuck := h.actors.brokerHeld[m.Name] != nil
			h.mu.Unlock()
			if stuck {
				// A broker's claim the engine could not end (reported as
				// violations, and again below): the member stays with it,
				// on the source it was claimed with.
				if m.AboveSize {
					stuckAbove++
				} else if m.State == engine.StateReady {
					ready++
				}
				continue
			}
			if m.Lease != nil || m.AboveSize || m.Drift {
				return false
			}
			if m.State == engine.StateReady {
				ready++
			}
		}
		return ready == v.Spec.Size && len(v.Members)-stuckAbove == v.Spec.Size
	})
	rest.Wait()
	stop()
	if err != nil {
		for i := range last.Members {
			m := &last.Members[i]
			holder := ""
			if c := m.LeaseRead(); c != nil {
				holder = c.Holder
			}
			t.Errorf("not converged: %s %s lease=%q above-size=%v drift=%v (source %s, the pool's %s) %s %v%s", m.Name, m.State, holder, m.AboveSize, m.Drift, m.Source, last.Spec.SourceHash(), m.Message, m.Problems, h.explain(ctx, m.Name))
		}
		t.Fatalf("the pool did not converge within 3 minutes of the last release")
	}
	h.mu.Lock()
	h.reconciled = true
	h.mu.Unlock()
	h.endBatch(ctx)
	leases, err := h.env.Client.CoordinationV1().Leases(h.env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		t.Errorf("Lease %s (holder %q) left after everything was released", l.Name, holderOf(&l))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, f := range h.failed {
		t.Errorf("failed release of %s never finished (PVC uid %s)", name, f.pvcUID)
	}
	for name := range h.vanished {
		t.Errorf("vanished %s never came back", name)
	}
	for name, b := range h.actors.brokerHeld {
		t.Errorf("%q's claim on %s never ended: its releases through the engine did not end it", b.identity, name)
	}
}

// waitUntil polls cond every 200ms until it holds or the deadline passes.
func waitUntil(ctx context.Context, deadline time.Time, cond func() bool) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return context.DeadlineExceeded
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// report prints the counts in one block.
func (h *chaosHarness) report(took time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts["transient doubles (an identity held two members)"] = h.replay.doubles
	h.counts["most members one identity held at once"] = h.replay.maxHeld
	h.counts["Lease holder changes checked"] = h.replay.leaseChanges
	h.counts["Pods created on a PVC being deleted (never started on it)"] = h.replay.racePods
	h.counts["of those, left for the member's next PVC (that PVC went first)"] = h.replay.raceMoved
	h.counts["Pod and PVC deletions checked"] = h.replay.deletions
	h.counts["of those, kwok's name-only deletes that hit a successor (plane artifact)"] = h.replay.kwokDeletes
	h.counts["watch relists after an API server restart"] = h.rec.relists
	h.counts["batches"] = h.batch
	h.counts["broker claims ended by a release or give-back"] = h.replay.brokerEnds
	h.counts["claimed members started again, from their claim's source"] = h.replay.claimedRestarts
	h.counts["reconciler Leases taken over before they could be stale"] = h.replay.takeovers
	if el := h.replay.el; el != nil {
		h.counts["elastic shrinks checked against the settle time"] = el.shrinks
		h.counts["elastic: the pool came above its spare (after a size change)"] = el.aboves
		h.counts["elastic sizes set smaller by a resize or an apply"] = el.sets
		h.counts["elastic definition or size changes seen"] = len(el.relevant)
	}
	names := make([]string, 0, len(h.counts))
	for k := range h.counts {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "chaos run: %d operations in %s (%s)\n", h.counts["operations"], took.Round(time.Second), h.env.Namespace)
	for _, k := range names {
		fmt.Fprintf(&b, "  %-55s %6d\n", k, h.counts[k])
	}
	for _, k := range names {
		if s, ok := h.errSamples[k]; ok {
			fmt.Fprintf(&b, "  first error of %q: %s\n", k, s)
		}
	}
	fmt.Fprintf(&b, "  violations %d", h.violations)
	h.t.Log(b.String())
	h.auditUnexplained()
}

// runChaos is the randomized run: ops operations in batches, restart (when
// set) called beside the operations of batch restartAt.
func runChaos(t *testing.T, ops, restartAt int, restart func(*chaosHarness)) {
	const workers, batchOps = 6, 30
	begin := time.Now()
	h := newChaosHarness(t, 5)
	ctx := t.Context()
	seed := chaosSeed(t)
	t.Logf("seed %d (%s=%d repeats its choices)", seed, chaosSeedEnv, seed)
	defer func() { h.report(time.Since(begin)) }()
	for b := 0; b*batchOps < ops; b++ {
		var during func()
		if restart != nil && b == restartAt {
			during = func() {
				restart(h)
				h.mu.Lock()
				h.outageOver = time.Now()
				h.mu.Unlock()
			}
			h.mu.Lock()
			h.outageEnd = h.batch + 1
			h.mu.Unlock()
		}
		h.runBatch(ctx, min(batchOps, ops-b*batchOps), workers, seed+uint64(b), during)
		h.endBatch(ctx)
		if b%2 == 1 {
			h.liftHolds(ctx, false)
		}
	}
	h.converge(ctx)
	if h.replay.deletions == 0 {
		t.Fatal("no Pod or PVC was deleted: the run exercised nothing")
	}
}

// TestIntegrationRandomizedConcurrency runs CTPOOL_CHAOS_OPS operations (500
// by default): claims by identities the goroutines share (and the same
// identity claiming from two places at once), releases and force-releases,
// releases that fail while destroying, Pods and members that vanish under
// their claims, resizes and command-line reconciles, member Pods evicted
// through the eviction API (no claimed member's Pod is ever evicted:
// chaos_evictor_integration_test.go), with the in-cluster controller
// reconciling beside them. After every batch: no identity holds
// two members; no PVC or Pod was deleted but under the reconciler's Lease (a
// release or a reconcile), none the test did not delete itself; a release's
// destruction never went back to its user; reconciler Leases are stamped when
// taken and none is left when no reconciler runs (but the failed releases'
// maintenance); vanished Pods come back with the same data and the claim;
// members become Ready (a member that stays unsettled with no change of its
// objects for stuckDeadline fails: judgeStuck). Beside the fixed pool runs an
// elastic one with its own actors and invariants
// (chaos_elastic_integration_test.go). At the end everything is released,
// the fixed pool converges with no Lease left and the elastic one rests at
// its spare.
func TestIntegrationRandomizedConcurrency(t *testing.T) {
	runChaos(t, chaosOps(t, chaosDefaultOps), -1, nil)
}

// deletedByKwok tells, from the plane's audit log, a Pod or PVC deletion that
// no test actor sent: none of the audited deletes names the object's UID in
// its preconditions (every engine delete does, and so do the test's own),
// and kwok sent name-only deletes of that name. kwok's pod-delete stage can
// fire twice for one Pod, and its second delete, by name alone, hits a Pod of
// the same name created in between (a kubelet deletes with the Pod's UID).
// Seen on the plane: a member's vanished Pod restarted by a reconcile within
// a quarter of a second, then marked deleted by kwok.
func (h *chaosHarness) deletedByKwok(e objEvent) bool {
	name := e.member
	if e.kind == "PVC" {
		name = engine.PVCName(e.member)
	}
	ds, err := h.env.AuditDeletes(name)
	if err != nil {
		return false
	}
	kwok := false
	for _, d := range ds {
		switch {
		case strings.Contains(d.Preconditions, string(e.uid)):
			return false // someone deleted this very object: the check stands
		case d.Preconditions == "" && d.Code == 200 && strings.HasPrefix(d.UserAgent, "kwok/"):
			kwok = true
		case d.Preconditions == "" && !strings.HasPrefix(d.UserAgent, "kwok/"):
			return false // a name-only delete by anyone else: not explained
		}
	}
	return kwok
}

// auditUnexplained prints, for each deletion reported as a violation, every
// audited delete of that object's name in the run: the actor (user agent),
// the preconditions, the answer (h.mu held). The report runs after the
// operations, so the API server has written them.
func (h *chaosHarness) auditUnexplained() {
	for _, e := range h.replay.unexplained {
		name := e.member
		if e.kind == "PVC" {
			name = engine.PVCName(e.member)
		}
		ds, err := h.env.AuditDeletes(name)
		if err != nil {
			h.t.Logf("audit of %s %s (uid %s): %v", e.kind, name, e.uid, err)
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "audited deletes of %s %s (the violation: uid %s, rv %d):", e.kind, name, e.uid, e.rv)
		for _, d := range ds {
			fmt.Fprintf(&b, "\n\t%s", d)
		}
		h.t.Log(b.String())
	}
}

func (h *chaosHarness) counted(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[name]
}
