package engine

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// world is a namespace's pool objects, by name, as a cache holds them; the
// tests change it and check that PoolState.Update on the changed members
// gives what Observe gives on the whole snapshot.
type world struct {
	pool   string
	cm     *corev1.ConfigMap
	pods   map[string]*corev1.Pod
	pvcs   map[string]*corev1.PersistentVolumeClaim
	leases map[string]*coordinationv1.Lease
	now    time.Time

	// What changed since the last observation, as kube.Watcher records it.
	full       bool
	definition bool
	members    map[string]struct{}
}

const incrNS = "vdi"

func newWorld(size, members int, now time.Time) *world {
	w := &world{pool: "desk", pods: map[string]*corev1.Pod{}, pvcs: map[string]*corev1.PersistentVolumeClaim{},
		leases: map[string]*coordinationv1.Lease{}, now: now, members: map[string]struct{}{}}
	spec := baseSpec(size)
	w.cm = BuildConfigMap(incrNS, w.pool, spec)
	for i := 1; i <= members; i++ {
		p, c := readyMember(w.pool, i, spec)
		w.pods[p.Name], w.pvcs[c.Name] = p, c
	}
	return w
}

// spec is the pool's spec, or a default one when it is broken or gone.
func (w *world) spec() Spec {
	if w.cm != nil {
		if s, err := ParseSpec(w.cm.Data[KeySpec]); err == nil {
			return s
		}
	}
	return baseSpec(12)
}

// snapshot is what GroupByPool makes of the objects labelled with the pool
// (and the Leases named for it, labelled or not).
func (w *world) snapshot() Snapshot {
	snap := Snapshot{Namespace: incrNS, Pool: w.pool}
	if w.cm != nil && w.cm.Labels[LabelPool] == w.pool {
		snap.ConfigMap = w.cm
	}
	for _, name := range sortedKeys(w.pods) {
		if p := w.pods[name]; p.Labels[LabelPool] == w.pool {
			snap.Pods = append(snap.Pods, p)
		}
	}
	for _, name := range sortedKeys(w.pvcs) {
		if c := w.pvcs[name]; c.Labels[LabelPool] == w.pool {
			snap.PVCs = append(snap.PVCs, c)
		}
	}
	for _, name := range sortedKeys(w.leases) {
		if l := w.leases[name]; LeaseInPool(l, w.pool) {
			snap.Leases = append(snap.Leases, l)
		}
	}
	return snap
}

// touch records a changed object (its old and new value) the way the
// dashboard's Watcher does.
func (w *world) touch(obj any) {
	var pool, member string
	var named, ok bool
	switch o := obj.(type) {
	case *corev1.Pod:
		pool, member, named, ok = PodMember(o)
	case *corev1.PersistentVolumeClaim:
		pool, member, named, ok = PVCMember(o)
	case *coordinationv1.Lease:
		pool, member, named, ok = LeaseMember(o)
	case *corev1.ConfigMap:
		if p, fits := PoolFromConfigMapName(o.Name); fits && p == w.pool {
			w.definition = true
		}
		return
	}
	if !ok || pool != w.pool {
		return
	}
	if !named {
		w.full = true
	}
	w.members[member] = struct{}{}
}

func (w *world) putPod(p *corev1.Pod) {
	if old := w.pods[p.Name]; old != nil {
		w.touch(old)
	}
	w.pods[p.Name] = p
	w.touch(p)
}

func (w *world) delPod(name string) {
	if old := w.pods[name]; old != nil {
		w.touch(old)
		delete(w.pods, name)
	}
}

func (w *world) putPVC(c *corev1.PersistentVolumeClaim) {
	if old := w.pvcs[c.Name]; old != nil {
		w.touch(old)
	}
	w.pvcs[c.Name] = c
	w.touch(c)
}

func (w *world) delPVC(name string) {
	if old := w.pvcs[name]; old != nil {
		w.touch(old)
		delete(w.pvcs, name)
	}
}

func (w *world) putLease(l *coordinationv1.Lease) {
	if old := w.leases[l.Name]; old != nil {
		w.touch(old)
	}
	w.leases[l.Name] = l
	w.touch(l)
}

func (w *world) delLease(name string) {
	if old := w.leases[name]; old != nil {
		w.touch(old)
		delete(w.leases, name)
	}
}

func (w *world) putCM(cm *corev1.ConfigMap) {
	w.cm = cm
	w.definition = true
}

// update reads the changed members by name (as the Watcher's cache does).
func (w *world) update() PoolUpdate {
	u := PoolUpdate{Definition: w.definition, Members: map[string]MemberObjects{}}
	if u.Definition && w.cm != nil && w.cm.Labels[LabelPool] == w.pool {
		u.ConfigMap = w.cm
	}
	for m := range w.members {
		var o MemberObjects
		if p := w.pods[m]; p != nil && p.Labels[LabelPool] == w.pool {
			o.Pod = p
		}
		if c := w.pvcs[PVCName(m)]; c != nil && c.Labels[LabelPool] == w.pool {
			o.PVC = c
		}
		if l := w.leases[LeaseName(m)]; l != nil && LeaseInPool(l, w.pool) {
			o.Lease = l
		}
		u.Members[m] = o
	}
	return u
}

// observe brings s up to date as the dashboard does (by difference, or
// whole when the Watcher or Update says so), checks it against Observe and
// returns the state and whether the update was applied by difference.
func (w *world) observe(t *testing.T, s *PoolState) (*PoolState, bool) {
	t.Helper()
	snap := w.snapshot()
	incremental := false
	if !w.full {
		prev := append([]Member(nil), s.View().Members...)
		var changes []MemberChange
		changes, incremental = s.Update(w.update(), w.now)
		if incremental {
			checkChanges(t, prev, s.View().Members, changes)
		} else if !reflect.DeepEqual(prev, s.View().Members) {
			t.Fatal("an update that was not applied changed the members")
		}
	}
	if !incremental {
		s = NewPoolState(snap, w.now)
	}
	w.full, w.definition = false, false
	clear(w.members)
	want := Observe(snap, w.now)
	if got := *s.View(); !reflect.DeepEqual(got, want) {
		t.Fatalf("incremental %v: the view differs from Observe:\n%s", incremental, viewDiff(got, want))
	}
	return s, incremental
}

// checkChanges: the changes name every member that differs, in order, with
// its value before; every other member is as it was.
func checkChanges(t *testing.T, prev, cur []Member, changes []MemberChange) {
	t.Helper()
	if len(prev) != len(cur) {
		t.Fatalf("%d members before, %d after an update by difference", len(prev), len(cur))
	}
	listed := map[int]bool{}
	for i, c := range changes {
		if i > 0 && changes[i-1].Pos >= c.Pos {
			t.Fatalf("changes out of order: %d then %d", changes[i-1].Pos, c.Pos)
		}
		if !reflect.DeepEqual(c.Old, prev[c.Pos]) {
			t.Fatalf("change of %s: Old is not the member before", c.Old.Name)
		}
		listed[c.Pos] = true
	}
	for i := range cur {
		if !listed[i] && !reflect.DeepEqual(prev[i], cur[i]) {
			t.Fatalf("member %s changed but is not among the changes", cur[i].Name)
		}
	}
}

func viewDiff(got, want PoolView) string {
	if len(got.Members) != len(want.Members) {
		return fmt.Sprintf("%d members, want %d", len(got.Members), len(want.Members))
	}
	for i := range got.Members {
		if !reflect.DeepEqual(got.Members[i], want.Members[i]) {
			return fmt.Sprintf("member %d:\n got %s\nwant %s", i, brief(&got.Members[i]), brief(&want.Members[i]))
		}
	}
	got.Members, want.Members = nil, nil
	return fmt.Sprintf(" got %+v\nwant %+v", got, want)
}

// brief is a member without its objects.
func brief(m *Member) string {
	c := *m
	c.Pod, c.PVC, c.Lease, c.Claim, c.Hold = nil, nil, nil, nil, nil
	claim := "no claim"
	if m.Claim != nil {
		claim = fmt.Sprintf("claim %+v", *m.Claim)
	}
	if m.Hold != nil {
		claim += fmt.Sprintf(" hold %+v", *m.Hold)
	}
	return fmt.Sprintf("%+v pod %v pvc %v lease %v %s", c, m.Pod != nil, m.PVC != nil, m.Lease != nil, claim)
}

// Helpers that build changed objects.

func (w *world) member(n int) string { return MemberName(w.pool, n) }

func (w *world) podOf(name string) *corev1.Pod {
	if p := w.pods[name]; p != nil {
		return p.DeepCopy()
	}
	n, _ := MemberIndex(w.pool, name)
	p := BuildPod(incrNS, w.pool, max(n, 1), w.spec())
	p.Name, p.Labels[LabelMember] = name, name
	return p
}

func (w *world) pvcOf(name string) *corev1.PersistentVolumeClaim {
	if c := w.pvcs[PVCName(name)]; c != nil {
		return c.DeepCopy()
	}
	n, _ := MemberIndex(w.pool, name)
	c := BuildPVC(incrNS, w.pool, max(n, 1), w.spec())
	c.Name, c.Labels[LabelMember] = PVCName(name), name
	return c
}

func (w *world) withCM(f func(cm *corev1.ConfigMap)) {
	if w.cm == nil {
		w.cm = BuildConfigMap(incrNS, w.pool, w.spec())
	}
	cm := w.cm.DeepCopy()
	f(cm)
	w.putCM(cm)
}

func (w *world) resize(size int) {
	s := w.spec()
	s.Size = size
	cm := BuildConfigMap(incrNS, w.pool, s)
	cm.Data[KeyStatus] = w.cm.Data[KeyStatus]
	w.putCM(cm)
}

func setPhase(p *corev1.Pod, state State) {
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	p.DeletionTimestamp = nil
	switch state {
	case StateReady:
		readyPod(p)
	case StateFailed:
		p.Status.Phase = corev1.PodFailed
		p.Status.Reason = "Evicted"
	case StateUnschedulable:
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}}
	case StateTerminating:
		readyPod(p)
		p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	}
}

func TestPoolStateUpdate(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		// change changes the world of a pool of size 4 whose members 1-4
		// are Ready and member 2 is claimed until t0+10m.
		change      func(w *world)
		incremental bool
	}{
		{"nothing, later", func(w *world) { w.now = w.now.Add(time.Minute) }, true},
		{"a Pod becomes not ready", func(w *world) {
			p := w.podOf(w.member(3))
			setPhase(p, StateStarting)
			w.putPod(p)
		}, true},
		{"a Pod fails", func(w *world) {
			p := w.podOf(w.member(1))
			setPhase(p, StateFailed)
			w.putPod(p)
		}, true},
		{"a Pod is deleted", func(w *world) { w.delPod(w.member(4)) }, true},
		{"a member within the size loses all its objects", func(w *world) {
			w.delPod(w.member(4))
			w.delPVC(PVCName(w.member(4)))
		}, true},
		{"a missing member within the size is created", func(w *world) {
			w.delPod(w.member(4))
			w.delPVC(PVCName(w.member(4)))
			w.putPod(w.podOf(w.member(4))) // in one observation: net a new Pod
		}, true},
		{"a Pod's source drifts", func(w *world) {
			p := w.podOf(w.member(3))
			p.Labels[LabelSource] = "old"
			w.putPod(p)
		}, true},
		{"a member is claimed", func(w *world) {
			w.putLease(ClaimLease(incrNS, w.pool, w.member(3), "bob@example.com", w.now))
		}, true},
		{"a member is claimed by a Lease with no label", func(w *world) {
			l := ClaimLease(incrNS, w.pool, w.member(3), "bob@example.com", w.now)
			l.Labels = nil
			w.putLease(l)
		}, true},
		{"a claim is released", func(w *world) { w.delLease(LeaseName(w.member(2))) }, true},
		{"a claim expires with time alone", func(w *world) { w.now = w.now.Add(11 * time.Minute) }, true},
		{"a reconciler Lease goes stale with time alone", func(w *world) {
			w.putLease(ReconcilerLease(incrNS, w.pool, w.member(3), w.now))
			w.now = w.now.Add(ReconcilerLeaseTTL + time.Second)
		}, true},
		{"a Lease renewed in the future follows the clock", func(w *world) {
			l := ClaimLease(incrNS, w.pool, w.member(3), "bob@example.com", w.now.Add(time.Hour))
			w.putLease(l)
			w.now = w.now.Add(time.Second)
		}, true},
		{"the recorded status changes", func(w *world) {
			w.withCM(func(cm *corev1.ConfigMap) { cm.Data[KeyStatus] = Status{Desired: 4, Ready: 3}.Encode() })
		}, true},
		{"the recorded status breaks", func(w *world) {
			w.withCM(func(cm *corev1.ConfigMap) { cm.Data[KeyStatus] = "{{{" })
		}, true},
		{"the pool grows", func(w *world) { w.resize(6) }, false},
		{"the pool shrinks", func(w *world) { w.resize(2) }, false},
		{"the template changes", func(w *world) {
			s := w.spec()
			s.Image = "ghcr.io/example/desktop:3"
			cm := BuildConfigMap(incrNS, w.pool, s)
			w.putCM(cm)
		}, false},
		{"the spec breaks", func(w *world) {
			w.withCM(func(cm *corev1.ConfigMap) { cm.Data[KeySpec] = "size: 4\nimage: [" })
		}, false},
		{"the definition is deleted", func(w *world) { w.cm = nil; w.definition = true }, false},
		{"a member appears above the size", func(w *world) { w.putPod(w.podOf(w.member(5))) }, false},
		{"a member is named off the pattern", func(w *world) { w.putPod(w.podOf("desk-x")) }, false},
		{"a Pod is labelled for another member", func(w *world) {
			p := w.podOf(w.member(3))
			p.Name = "desk-3-copy"
			w.putPod(p)
		}, false},
		{"a Pod moves to another pool", func(w *world) {
			p := w.podOf(w.member(3))
			p.Labels[LabelPool] = "other"
			w.putPod(p)
		}, true},
		{"the clock goes back", func(w *world) {
			w.now = w.now.Add(-time.Second)
			w.putPod(w.podOf(w.member(1)))
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(4, 4, t0)
			w.putLease(ClaimLease(incrNS, w.pool, w.member(2), "ann@example.com", t0))
			w.full = true
			s, _ := w.observe(t, nil)
			tc.change(w)
			if _, incremental := w.observe(t, s); incremental != tc.incremental {
				t.Errorf("applied by difference: %v, want %v", incremental, tc.incremental)
			}
		})
	}
}

// TestPoolStateRandomChanges drives random changes of every kind into a
// pool and checks after each one that the state kept by difference is what
// Observe makes of the whole snapshot at the same time.
func TestPoolStateRandomChanges(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 18))
			t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			w := newWorld(12, 10, t0)
			w.full = true
			s, _ := w.observe(t, nil)
			incremental := 0
			const steps = 1500
			for i := range steps {
				desc := randomChange(rnd, w)
				var inc bool
				t.Run("", func(t *testing.T) {
					defer func() {
						if t.Failed() {
							t.Logf("step %d: %s", i, desc)
						}
					}()
					s, inc = w.observe(t, s)
				})
				if t.Failed() {
					return
				}
				if inc {
					incremental++
				}
			}
			t.Logf("%d of %d steps applied by difference", incremental, steps)
			if incremental < steps/3 {
				t.Errorf("only %d of %d steps were applied by difference", incremental, steps)
			}
		})
	}
}

// randomChange makes one to three random changes (mostly to members, some
// to the definition and the clock) and says what they were.
func randomChange(rnd *rand.Rand, w *world) string {
	var desc []string
	for range 1 + rnd.IntN(3) {
		desc = append(desc, randomOne(rnd, w))
	}
	return fmt.Sprint(desc)
}

func randomOne(rnd *rand.Rand, w *world) string {
	size := 0
	if w.cm != nil {
		size = lenientSpec(w.cm.Data[KeySpec]).Size
	}
	// Members: within the size, a little beyond, near the placement limit,
	// and off the pattern.
	var name string
	switch r := rnd.IntN(20); {
	case r < 15:
		name = w.member(1 + rnd.IntN(max(size, 1)+2))
	case r < 17:
		// Near the limit past which Observe places an indexed name with
		// the names that do not fit: a Pod or PVC more or less moves it.
		snap := w.snapshot()
		name = w.member(placementLimit(size, len(snap.Pods), len(snap.PVCs)) + rnd.IntN(9) - 4)
	case r < 18:
		name = []string{"desk-x", "desk-1000"}[rnd.IntN(2)]
	default:
		name = w.member(1 + rnd.IntN(20))
	}
	states := []State{StateReady, StateStarting, StateFailed, StateUnschedulable, StateTerminating}
	switch op := rnd.IntN(100); {
	case op < 25:
		p := w.podOf(name)
		setPhase(p, states[rnd.IntN(len(states))])
		p.Spec.NodeName = fmt.Sprintf("node-%d", rnd.IntN(3))
		w.putPod(p)
		return "pod " + name + " " + string(p.Status.Phase)
	case op < 32:
		w.delPod(name)
		return "delete pod " + name
	case op < 36:
		p := w.podOf(name)
		p.Labels[LabelSource] = []string{"old", w.spec().SourceHash(), ""}[rnd.IntN(3)]
		w.putPod(p)
		return "pod source " + name
	case op < 44:
		c := w.pvcOf(name)
		switch rnd.IntN(3) {
		case 0:
			c.DeletionTimestamp = &metav1.Time{Time: w.now}
		case 1:
			c.Annotations = map[string]string{AnnotationReleased: "x"}
		default:
			c.DeletionTimestamp, c.Annotations = nil, nil
		}
		w.putPVC(c)
		return "pvc " + name
	case op < 49:
		w.delPVC(PVCName(name))
		return "delete pvc " + name
	case op < 62:
		at := w.now.Add([]time.Duration{-2 * time.Hour, -50 * time.Minute, -time.Minute, 0, 10 * time.Minute}[rnd.IntN(5)])
		var l *coordinationv1.Lease
		switch rnd.IntN(4) {
		case 0:
			l = ReconcilerLease(incrNS, w.pool, name, at)
		case 1:
			l = ClaimLease(incrNS, w.pool, name, "", at)
		default:
			l = ClaimLease(incrNS, w.pool, name, fmt.Sprintf("user%d@example.com", rnd.IntN(3)), at)
		}
		switch rnd.IntN(6) {
		case 0:
			l.Spec.LeaseDurationSeconds = nil
		case 1:
			l.Spec.RenewTime, l.Spec.AcquireTime = nil, nil
		case 2:
			d := int32(rnd.IntN(3) * 60)
			l.Spec.LeaseDurationSeconds = &d
		}
		w.putLease(l)
		return "lease " + name
	case op < 70:
		w.delLease(LeaseName(name))
		return "delete lease " + name
	case op < 72:
		p := w.podOf(name)
		p.Labels[LabelPool] = []string{"other", w.pool}[rnd.IntN(2)]
		w.putPod(p)
		return "pod pool label " + name
	case op < 73:
		if rnd.IntN(3) > 0 {
			return "nothing"
		}
		p := w.podOf(name)
		p.Name = name + "-copy"
		w.putPod(p)
		return "pod named off its member " + name
	case op < 77:
		for _, n := range sortedKeys(w.pods) {
			if strings.HasSuffix(n, "-copy") {
				w.delPod(n)
			}
		}
		return "delete the pods named off their member"
	case op < 80:
		if w.cm == nil {
			w.putCM(BuildConfigMap(incrNS, w.pool, baseSpec(12)))
			return "create the definition"
		}
		// A status with a block the last reconcile recorded (an object
		// without this pool's labels, which no snapshot shows) on a member.
		kind := []string{"pod", "pvc"}[rnd.IntN(2)]
		obj := name
		if kind == "pvc" {
			obj = PVCName(name)
		}
		blocked := Status{Desired: rnd.IntN(20), Members: []MemberRow{{Name: name, State: StateMissing, Blocked: blockReason(kind, obj, "it has no pool labels")}}}.Encode()
		w.withCM(func(cm *corev1.ConfigMap) {
			cm.Data[KeyStatus] = []string{"", "{{{", Status{Desired: rnd.IntN(20), Ready: rnd.IntN(9)}.Encode(), blocked, blocked}[rnd.IntN(5)]
		})
		return "status"
	case op < 82:
		if w.cm != nil && size > 0 {
			if _, err := ParseSpec(w.cm.Data[KeySpec]); err == nil {
				w.resize(max(1, size+rnd.IntN(7)-3))
				return "resize"
			}
		}
		w.putCM(BuildConfigMap(incrNS, w.pool, baseSpec(12)))
		return "reset the definition"
	case op < 83:
		w.withCM(func(cm *corev1.ConfigMap) {
			cm.Data[KeySpec] = fmt.Sprintf("size: %d\nimage: [%d", size, rnd.IntN(3))
		})
		return "break the spec"
	case op < 84:
		w.cm, w.definition = nil, true
		return "delete the definition"
	case op < 98:
		d := []time.Duration{0, time.Second, 30 * time.Second, 5 * time.Minute, 31 * time.Minute, 2 * time.Hour}[rnd.IntN(6)]
		w.now = w.now.Add(d)
		return "later by " + d.String()
	default:
		w.now = w.now.Add(-time.Second)
		return "clock back"
	}
}
