package tui

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// changeStore is an in-memory cache of pool objects that records what
// changed as kube.Watcher does: a ChangeSource.
type changeStore struct {
	mu     sync.Mutex
	cms    map[string]*corev1.ConfigMap
	pods   map[string]*corev1.Pod
	pvcs   map[string]*corev1.PersistentVolumeClaim
	leases map[string]*coordinationv1.Lease
	ch     chan struct{}
	all    bool
	pools  map[engine.PoolRef]*engine.PoolChanges
	seen   map[engine.PoolRef]map[string]bool
}

var _ ChangeSource = (*changeStore)(nil)

func newChangeStore(c *cluster) *changeStore {
	s := &changeStore{cms: map[string]*corev1.ConfigMap{}, pods: map[string]*corev1.Pod{},
		pvcs: map[string]*corev1.PersistentVolumeClaim{}, leases: map[string]*coordinationv1.Lease{},
		ch: make(chan struct{}, 1), all: true}
	for _, o := range c.ConfigMaps {
		s.cms[o.Name] = o
	}
	for _, o := range c.Pods {
		s.pods[o.Name] = o
	}
	for _, o := range c.PVCs {
		s.pvcs[o.Name] = o
	}
	for _, o := range c.Leases {
		s.leases[o.Name] = o
	}
	return s
}

func (s *changeStore) Changed() <-chan struct{} { return s.ch }
func (s *changeStore) Synced() bool             { return true }
func (s *changeStore) LastSync() time.Time      { return t0 }
func (s *changeStore) LastWatchError() (time.Time, error) {
	return time.Time{}, nil
}

func (s *changeStore) Snapshots() []engine.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c cluster
	for _, k := range keysOf(s.cms) {
		c.ConfigMaps = append(c.ConfigMaps, s.cms[k])
	}
	for _, k := range keysOf(s.pods) {
		c.Pods = append(c.Pods, s.pods[k])
	}
	for _, k := range keysOf(s.pvcs) {
		c.PVCs = append(c.PVCs, s.pvcs[k])
	}
	for _, k := range keysOf(s.leases) {
		c.Leases = append(c.Leases, s.leases[k])
	}
	return c.Snapshots()
}

func keysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (s *changeStore) TakeChanges() (bool, []engine.PoolChanges) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, pools := s.all, s.pools
	s.all, s.pools, s.seen = false, nil, nil
	if all {
		return true, nil
	}
	var out []engine.PoolChanges
	for _, pc := range pools {
		out = append(out, *pc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return false, out
}

func (s *changeStore) ReadChanges(pc engine.PoolChanges) engine.PoolUpdate {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := engine.PoolUpdate{Definition: pc.Definition, Members: map[string]engine.MemberObjects{}}
	if cm := s.cms[engine.ConfigMapName(pc.Pool)]; pc.Definition && cm != nil && cm.Labels[engine.LabelPool] == pc.Pool {
		u.ConfigMap = cm
	}
	for _, m := range pc.Members {
		var o engine.MemberObjects
		if p := s.pods[m]; p != nil && p.Labels[engine.LabelPool] == pc.Pool {
			o.Pod = p
		}
		if c := s.pvcs[engine.PVCName(m)]; c != nil && c.Labels[engine.LabelPool] == pc.Pool {
			o.PVC = c
		}
		if l := s.leases[engine.LeaseName(m)]; l != nil && l.Labels[engine.LabelPool] == pc.Pool {
			o.Lease = l
		}
		u.Members[m] = o
	}
	return u
}

// record notes a changed object (old or new), under s.mu.
func (s *changeStore) record(obj any) {
	var pool, member string
	var named, ok, definition bool
	switch o := obj.(type) {
	case *corev1.Pod:
		pool, member, named, ok = engine.PodMember(o)
	case *corev1.PersistentVolumeClaim:
		pool, member, named, ok = engine.PVCMember(o)
	case *coordinationv1.Lease:
		pool, member, named, ok = engine.LeaseMember(o)
	case *corev1.ConfigMap:
		pool, ok = engine.PoolFromConfigMapName(o.Name)
		definition = true
	}
	if !ok || s.all {
		return
	}
	k := engine.PoolRef{Namespace: ns, Name: pool}
	if s.pools == nil {
		s.pools, s.seen = map[engine.PoolRef]*engine.PoolChanges{}, map[engine.PoolRef]map[string]bool{}
	}
	pc := s.pools[k]
	if pc == nil {
		pc = &engine.PoolChanges{Namespace: ns, Pool: pool}
		s.pools[k], s.seen[k] = pc, map[string]bool{}
	}
	switch {
	case definition:
		pc.Definition = true
	case !named:
		pc.Full, pc.Members = true, nil
	case !pc.Full && !s.seen[k][member]:
		s.seen[k][member] = true
		pc.Members = append(pc.Members, member)
	}
}

// put stores obj (replacing the object of its kind and name) or, with
// del, deletes the object of its kind and name.
func (s *changeStore) put(obj any, del bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch o := obj.(type) {
	case *corev1.Pod:
		putIn(s, s.pods, o.Name, o, del)
	case *corev1.PersistentVolumeClaim:
		putIn(s, s.pvcs, o.Name, o, del)
	case *coordinationv1.Lease:
		putIn(s, s.leases, o.Name, o, del)
	case *corev1.ConfigMap:
		putIn(s, s.cms, o.Name, o, del)
	}
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

func putIn[T any](s *changeStore, m map[string]T, name string, o T, del bool) {
	if old, ok := m[name]; ok {
		s.record(old)
	}
	if del {
		delete(m, name)
		return
	}
	m[name] = o
	s.record(o)
}

// plainSource hides a ChangeSource's changes: a model on it rebuilds whole.
type plainSource struct{ DataSource }

// reload runs one load of the model and applies it, then a whole one when
// the delta could not be applied.
func reload(m *Model) {
	m.Update(m.feed.load(m.now)())
	if m.feed.incr.needFull {
		m.Update(m.feed.load(m.now)())
	}
}

// TestMembersFollowChangesLikeAWholeRebuild drives random changes into two
// dashboards: one on a ChangeSource (pools kept by difference, rows
// updated for the changed members) and one rebuilding everything at every
// change; random keys (sort, filter, moves) go to both. After each step
// both must hold the same pools and rows and draw the same screen.
func TestMembersFollowChangesLikeAWholeRebuild(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 7))
			c := &cluster{}
			spec := fixture.Spec("ghcr.io/example/desktop:2", 40, nil)
			c.Pool("big", spec, nil)
			c.Pool("small", fixture.Spec("ghcr.io/example/desktop:2", 3, nil), nil)
			for i := 1; i <= 40; i++ {
				c.Member("big", i, spec, fixture.OnNode(fmt.Sprintf("node-%d", i%5)), fixture.Age(time.Duration(i)*time.Minute))
				if i%4 == 0 {
					c.Claim("big", engine.MemberName("big", i), fmt.Sprintf("user%d@example.com", i%3), t0.Add(-time.Duration(i)*time.Minute))
				}
			}
			store := newChangeStore(c)
			now := t0
			clock := func() time.Time { return now }
			mk := func(src DataSource) *Model {
				m := newModel(context.Background(), Options{Context: "prod-eu", Namespace: ns, Theme: themes.Dark(),
					Renderer: themes.NoColorRenderer(io.Discard), Now: clock, Data: src, Resolver: &resolver{actions: &fakeActions{}}})
				m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
				m.Update(tickMsg(now))
				reload(m)
				m.openMembers(poolRefIn(m, "big"))
				return m
			}
			inc, full := mk(store), mk(plainSource{store})
			if inc.feed.incr.states == nil || full.feed.incr.states != nil {
				t.Fatal("the sources are not what the test means")
			}
			const steps = 400
			for i := range steps {
				var did []string
				for range 1 + rnd.IntN(3) {
					did = append(did, randomStoreChange(rnd, store, now))
				}
				if rnd.IntN(4) == 0 {
					keys := randomKeys(rnd)
					did = append(did, fmt.Sprintf("keys %q", keys))
					press(inc, keys...)
					press(full, keys...)
					if inc.screen != screenMembers { // esc went back
						inc.openMembers(poolRefIn(inc, "big"))
						full.openMembers(poolRefIn(full, "big"))
					}
				}
				if rnd.IntN(3) == 0 {
					now = now.Add(time.Duration(rnd.IntN(600)) * time.Second)
					inc.Update(tickMsg(now))
					full.Update(tickMsg(now))
				}
				reload(inc)
				reload(full)
				if msg := sameDashboards(inc, full); msg != "" {
					t.Fatalf("step %d %v: %s", i, did, msg)
				}
			}
			t.Logf("%d of %d loads applied by difference", inc.feed.incr.deltas, steps)
			if inc.feed.incr.deltas < steps/3 {
				t.Errorf("only %d of %d loads applied by difference", inc.feed.incr.deltas, steps)
			}
		})
	}
}

// sameDashboards compares what a model kept by difference and one rebuilt
// whole hold and draw ("" when the same).
func sameDashboards(inc, full *Model) string {
	if !reflect.DeepEqual(inc.pools, full.pools) {
		return "the pools differ"
	}
	a, b := &inc.members, &full.members
	switch {
	case !reflect.DeepEqual(a.names, b.names):
		return "the member names differ"
	case !reflect.DeepEqual(a.hay, b.hay):
		return "the search texts differ"
	case !reflect.DeepEqual(a.rows, b.rows):
		return fmt.Sprintf("the rows differ (sort %s, filter %q):\n%v\n%v", b.sort, b.filter.Value(), a.rows, b.rows)
	case !reflect.DeepEqual(a.widths, b.widths):
		return fmt.Sprintf("the widths differ: %+v, want %+v", a.widths, b.widths)
	case a.cursor != b.cursor || a.offset != b.offset || a.selected != b.selected:
		return fmt.Sprintf("the selection differs: %d %d %q, want %d %d %q", a.cursor, a.offset, a.selected, b.cursor, b.offset, b.selected)
	}
	if va, vb := inc.View(), full.View(); va != vb {
		return "the screens differ:\n" + lineDiff(vb, va)
	}
	return ""
}

// randomKeys is a short sequence of list keys: moves, sort, filter.
func randomKeys(rnd *rand.Rand) []string {
	switch rnd.IntN(6) {
	case 0:
		return []string{"S"}
	case 1:
		q := []string{"ready", "user1", "node-2", "fail", "big-1", "expired"}[rnd.IntN(6)]
		keys := []string{"/"}
		for _, r := range q {
			keys = append(keys, string(r))
		}
		return append(keys, "enter")
	case 2:
		return []string{"esc"}
	case 3:
		return []string{"pgdown"}
	case 4:
		return []string{"j", "j", "j"}
	}
	return []string{"k"}
}

// randomStoreChange changes one object of pool big (now and then the
// definition) and says what it did.
func randomStoreChange(rnd *rand.Rand, s *changeStore, now time.Time) string {
	s.mu.Lock()
	cm := s.cms[engine.ConfigMapName("big")].DeepCopy()
	s.mu.Unlock()
	spec, err := engine.ParseSpec(cm.Data[engine.KeySpec])
	if err != nil {
		panic(err)
	}
	n := 1 + rnd.IntN(spec.Size)
	if rnd.IntN(20) == 0 {
		n = spec.Size + 1 // above the size: it appears and vanishes
	}
	name := engine.MemberName("big", n)
	s.mu.Lock()
	pod := s.pods[name]
	s.mu.Unlock()
	switch op := rnd.IntN(100); {
	case op < 40:
		p := engine.BuildPod(ns, "big", n, spec)
		if pod != nil {
			p = pod.DeepCopy()
		}
		fixture.Ready(p)
		switch rnd.IntN(5) {
		case 0:
			fixture.Unschedulable("0/3 nodes are available: insufficient cpu")(p)
		case 1:
			fixture.CrashLoop("exit 1")(p)
		case 2:
			p.Status.Conditions[3].Status = corev1.ConditionFalse
		}
		p.Spec.NodeName = fmt.Sprintf("node-%d", rnd.IntN(7))
		s.put(p, false)
		return "pod " + name
	case op < 50:
		if pod == nil {
			return "nothing"
		}
		s.put(pod, true)
		return "delete pod " + name
	case op < 55:
		s.put(engine.BuildPVC(ns, "big", n, spec), rnd.IntN(2) == 0)
		return "pvc " + name
	case op < 85:
		l := engine.ClaimLease(ns, "big", name, fmt.Sprintf("user%d@example.com", rnd.IntN(5)), now.Add(-time.Duration(rnd.IntN(90))*time.Minute))
		s.put(l, rnd.IntN(3) == 0)
		return "lease " + name
	case op < 95:
		cm.Data[engine.KeyStatus] = engine.Status{Desired: spec.Size, Ready: rnd.IntN(40)}.Encode()
		s.put(cm, false)
		return "status"
	case op < 97:
		spec.Size = max(5, spec.Size+rnd.IntN(5)-2)
		s.put(engine.BuildConfigMap(ns, "big", spec), false)
		return "resize"
	default:
		s.mu.Lock()
		var copies []*corev1.Pod
		for _, k := range keysOf(s.pods) {
			if strings.HasPrefix(k, "copy-") {
				copies = append(copies, s.pods[k])
			}
		}
		s.mu.Unlock()
		if len(copies) > 0 {
			s.put(copies[0], true)
			return "delete pod " + copies[0].Name
		}
		p := engine.BuildPod(ns, "big", n, spec)
		p.Name = strings.Replace(name, "big", "copy", 1)
		s.put(p, false)
		return "pod named off its member " + p.Name
	}
}

// TestLateDeltaAsksForAWholeLoad: a delta answered after a newer load was
// issued is dropped, and the changes it took are read again by a whole load.
func TestLateDeltaAsksForAWholeLoad(t *testing.T) {
	c := &cluster{}
	spec := fixture.Spec("ghcr.io/example/desktop:2", 3, nil)
	c.Pool("big", spec, nil)
	for i := 1; i <= 3; i++ {
		c.Member("big", i, spec)
	}
	store := newChangeStore(c)
	m := newModel(context.Background(), Options{Namespace: ns, Theme: themes.Dark(), Renderer: themes.NoColorRenderer(io.Discard),
		Now: func() time.Time { return t0 }, Data: store, Resolver: &resolver{actions: &fakeActions{}}})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	reload(m)
	if m.feed.incr.states == nil {
		t.Fatal("no pool states after the first load")
	}
	p := c.Pods[0].DeepCopy()
	p.Spec.NodeName = "node-z"
	store.put(p, false)
	older := m.feed.load(m.now)() // takes the change
	newer := m.feed.load(m.now)() // finds none
	m.Update(newer)
	if m.feed.incr.needFull || m.feed.dirty {
		t.Fatal("the newer delta asked for a whole load")
	}
	m.Update(older)
	if !m.feed.incr.needFull || !m.feed.dirty {
		t.Fatalf("a late delta was dropped without asking for a whole load (needFull %v, dirty %v)", m.feed.incr.needFull, m.feed.dirty)
	}
	reload(m)
	if got := m.pool(poolRefIn(m, "big")).Member("big-1").Node; got != "node-z" {
		t.Errorf("member big-1 on %q after the whole load, want node-z", got)
	}
}

// contextsStore merges changeStores as the dashboard of several contexts
// merges its clusters' Watchers (cmd/ctpool-tui's contextsSource): each
// pool's namespace is context/namespace, the changes are every cluster's
// (all when one cluster's are), a read of changes goes to its cluster.
type contextsStore struct {
	names  []string
	stores []*changeStore
}

var (
	_ ChangeSource  = (*contextsStore)(nil)
	_ ContextSource = (*contextsStore)(nil)
)

func (c *contextsStore) Changed() <-chan struct{} { return c.stores[0].ch }
func (c *contextsStore) Synced() bool             { return true }
func (c *contextsStore) LastSync() time.Time      { return t0 }
func (c *contextsStore) LastWatchError() (time.Time, error) {
	return time.Time{}, nil
}

func (c *contextsStore) Health() []engine.ContextHealth {
	var out []engine.ContextHealth
	for _, n := range c.names {
		out = append(out, engine.ContextHealth{Context: n, Synced: true, LastSync: t0})
	}
	return out
}

func (c *contextsStore) Snapshots() []engine.Snapshot {
	var out []engine.Snapshot
	for i, s := range c.stores {
		for _, snap := range s.Snapshots() {
			snap.Context = c.names[i]
			out = append(out, snap)
		}
	}
	return out
}

func (c *contextsStore) TakeChanges() (bool, []engine.PoolChanges) {
	all := false
	var out []engine.PoolChanges
	for i, s := range c.stores {
		a, pools := s.TakeChanges()
		all = all || a
		for _, pc := range pools {
			pc.Context = c.names[i]
			out = append(out, pc)
		}
	}
	if all {
		return true, nil
	}
	return false, out
}

func (c *contextsStore) ReadChanges(pc engine.PoolChanges) engine.PoolUpdate {
	for i, n := range c.names {
		if n == pc.Context {
			pc.Context = ""
			return c.stores[i].ReadChanges(pc)
		}
	}
	return engine.PoolUpdate{}
}

// TestClustersFollowChangesLikeAWholeRebuild is
// TestMembersFollowChangesLikeAWholeRebuild on the dashboard of two
// clusters, narrowed now and then to one of them (`:ctx`): the pools kept
// by difference are the watched ones, and what is shown is their
// narrowing, as a whole rebuild shows it.
func TestClustersFollowChangesLikeAWholeRebuild(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 11))
			src := &contextsStore{names: []string{"prod", "arn:aws:eks:eu-west-1:1:cluster/lab"}}
			for range src.names {
				c := &cluster{}
				spec := fixture.Spec("ghcr.io/example/desktop:2", 40, nil)
				c.Pool("big", spec, nil)
				c.Pool("small", fixture.Spec("ghcr.io/example/desktop:2", 3, nil), nil)
				for i := 1; i <= 40; i++ {
					c.Member("big", i, spec, fixture.OnNode(fmt.Sprintf("node-%d", i%5)))
					if i%4 == 0 {
						c.Claim("big", engine.MemberName("big", i), fmt.Sprintf("user%d@example.com", i%3), t0.Add(-time.Duration(i)*time.Minute))
					}
				}
				src.stores = append(src.stores, newChangeStore(c))
			}
			now := t0
			clock := func() time.Time { return now }
			open := func(m *Model, kctx string) {
				if kctx == "" {
					kctx = src.names[0]
				}
				m.openMembers(poolRefIn(m, kctx+"/"+ns+"/big"))
			}
			mk := func(data DataSource) *Model {
				m := newModel(context.Background(), Options{Context: "2 contexts", Namespace: "each context's", Fleet: true, Contexts: true,
					Theme: themes.Dark(), Renderer: themes.NoColorRenderer(io.Discard), Now: clock, Data: data,
					Resolver: &resolver{actions: &fakeActions{}}})
				m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
				m.Update(tickMsg(now))
				reload(m)
				open(m, "")
				return m
			}
			type plainClusters struct {
				DataSource
				ContextSource
			}
			inc, full := mk(src), mk(plainClusters{src, src})
			if inc.feed.incr.states == nil || full.feed.incr.states != nil {
				t.Fatal("the sources are not what the test means")
			}
			const steps = 200
			for i := range steps {
				var did []string
				for range 1 + rnd.IntN(3) {
					k := rnd.IntN(len(src.stores))
					did = append(did, src.names[k]+": "+randomStoreChange(rnd, src.stores[k], now))
				}
				if rnd.IntN(5) == 0 {
					kctx := []string{"", src.names[0], src.names[1]}[rnd.IntN(3)]
					did = append(did, fmt.Sprintf(":ctx %q", kctx))
					for _, m := range []*Model{inc, full} {
						if err := m.narrowContext(kctx); err != nil {
							t.Fatal(err)
						}
						open(m, kctx)
					}
				}
				if rnd.IntN(3) == 0 {
					now = now.Add(time.Duration(rnd.IntN(600)) * time.Second)
					inc.Update(tickMsg(now))
					full.Update(tickMsg(now))
				}
				reload(inc)
				reload(full)
				if !reflect.DeepEqual(inc.feed.watched, full.feed.watched) {
					t.Fatalf("step %d %v: the watched pools differ", i, did)
				}
				if msg := sameDashboards(inc, full); msg != "" {
					t.Fatalf("step %d %v: %s", i, did, msg)
				}
			}
			t.Logf("%d of %d loads applied by difference", inc.feed.incr.deltas, steps)
			// A pool with a Pod named off its member is observed whole
			// at every change while it lasts (engine.PoolState).
			if inc.feed.incr.deltas < steps/4 {
				t.Errorf("only %d of %d loads applied by difference", inc.feed.incr.deltas, steps)
			}
		})
	}
}
