package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Kinds recorded by the fake, as the engine's Kind plus the three it does not wait on.
const (
	kCM    = "ConfigMap"
	kPod   = string(KindPod)
	kPVC   = string(KindPVC)
	kSvc   = "Service"
	kLease = "Lease"
	kPDB   = "PodDisruptionBudget"
)

// act is one call the fake saw: verb (create, update, patch, delete, wait),
// kind and name. Failed writes are recorded too, so "no write" means no attempt.
type act struct {
	Verb, Kind, Name string
}

func (a act) String() string { return a.Verb + " " + a.Kind + " " + a.Name }

type failKey struct{ verb, kind, name string }

type failure struct {
	err   error
	times int // 0: every time
}

// fakeCluster is an in-memory engine.Cluster. It enforces what the API server
// enforces for the engine: AlreadyExists on create, resourceVersion
// compare-and-swap on updates, UID and resourceVersion preconditions on
// deletes, NotFound on updates of missing objects. It records every call.
type fakeCluster struct {
	ns string

	mu      sync.Mutex
	rv      int
	uid     int
	cms     map[string]*corev1.ConfigMap
	pods    map[string]*corev1.Pod
	pvcs    map[string]*corev1.PersistentVolumeClaim
	svcs    map[string]bool // name → Terminating
	leases  map[string]*coordinationv1.Lease
	pdbs    map[string]*policyv1.PodDisruptionBudget
	acts    []act
	fails   map[failKey]*failure
	changed chan struct{}

	// terminating: deletes of Pods and PVCs leave the object with a
	// deletionTimestamp instead of removing it (a finalizer that never ends
	// unless finish is called).
	terminating bool
	// hook runs before each write, outside the lock; it may change the cluster.
	hook func(a act)
	// snapshotErr fails every Snapshot.
	snapshotErr error
	// nodeDown is every Snapshot's NodeDown (nil: the nodes are unknown).
	nodeDown map[string]string
	// cordoned is every Snapshot's NodeCordoned.
	cordoned map[string]bool
	// waits, when set, receives each WaitGone call before it blocks.
	waits chan act
	// nsLabels are the namespace's labels (NamespaceLabels); nsErr fails
	// their read.
	nsLabels map[string]string
	nsErr    error
	// secrets are the types of the namespace's Secrets (SecretType);
	// secretErrs fail the read of one.
	secrets    map[string]corev1.SecretType
	secretErrs map[string]error
}

var _ Cluster = (*fakeCluster)(nil)
var _ NamespaceReader = (*fakeCluster)(nil)

var _ SecretReader = (*fakeCluster)(nil)

// SecretType is a read: it is not recorded.
func (f *fakeCluster) SecretType(_ context.Context, name string) (corev1.SecretType, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.secretErrs[name]; err != nil {
		return "", err
	}
	t, ok := f.secrets[name]
	if !ok {
		return "", fmt.Errorf("secrets %q: %w", name, ErrNotFound)
	}
	return t, nil
}

// NamespaceLabels is a read: it is not recorded.
func (f *fakeCluster) NamespaceLabels(context.Context) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nsErr != nil {
		return nil, f.nsErr
	}
	out := make(map[string]string, len(f.nsLabels))
	for k, v := range f.nsLabels {
		out[k] = v
	}
	return out, nil
}

func newFake(ns string) *fakeCluster {
	return &fakeCluster{
		ns:      ns,
		cms:     map[string]*corev1.ConfigMap{},
		pods:    map[string]*corev1.Pod{},
		pvcs:    map[string]*corev1.PersistentVolumeClaim{},
		svcs:    map[string]bool{},
		leases:  map[string]*coordinationv1.Lease{},
		pdbs:    map[string]*policyv1.PodDisruptionBudget{},
		fails:   map[failKey]*failure{},
		changed: make(chan struct{}),
	}
}

// add seeds objects as they are, giving each a UID and resourceVersion when it has none.
func (f *fakeCluster) add(objs ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			c := o.DeepCopy()
			f.stamp(&c.ObjectMeta)
			f.cms[c.Name] = c
		case *corev1.Pod:
			c := o.DeepCopy()
			f.stamp(&c.ObjectMeta)
			f.pods[c.Name] = c
		case *corev1.PersistentVolumeClaim:
			c := o.DeepCopy()
			f.stamp(&c.ObjectMeta)
			f.pvcs[c.Name] = c
		case *coordinationv1.Lease:
			c := o.DeepCopy()
			f.stamp(&c.ObjectMeta)
			f.leases[c.Name] = c
		case *corev1.Service:
			f.svcs[o.Name] = o.DeletionTimestamp != nil
		case *policyv1.PodDisruptionBudget:
			c := o.DeepCopy()
			f.stamp(&c.ObjectMeta)
			f.pdbs[c.Name] = c
		default:
			panic(fmt.Sprintf("fake: cannot add %T", o))
		}
	}
	f.notify()
}

func (f *fakeCluster) stamp(m *metav1.ObjectMeta) {
	if m.UID == "" {
		f.uid++
		m.UID = types.UID("uid-" + strconv.Itoa(f.uid))
	}
	if m.ResourceVersion == "" {
		m.ResourceVersion = f.nextRV()
	}
	if m.Namespace == "" {
		m.Namespace = f.ns
	}
}

func (f *fakeCluster) nextRV() string {
	f.rv++
	return strconv.Itoa(f.rv)
}

// notify wakes WaitGone; call with mu held.
func (f *fakeCluster) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// fail makes (verb, kind, name) fail with err, every time (times 0) or the next times calls.
func (f *fakeCluster) fail(verb, kind, name string, err error, times int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[failKey{verb, kind, name}] = &failure{err: err, times: times}
}

func (f *fakeCluster) clearFailures() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails = map[failKey]*failure{}
}

// record logs a call and returns the injected failure, if any. It runs the
// hook first, without the lock, and returns with mu held.
func (f *fakeCluster) record(verb, kind, name string) error {
	a := act{verb, kind, name}
	if f.hook != nil && verb != "wait" {
		f.hook(a)
	}
	f.mu.Lock()
	f.acts = append(f.acts, a)
	if fl := f.fails[failKey{verb, kind, name}]; fl != nil {
		if fl.times > 0 {
			fl.times--
			if fl.times == 0 {
				delete(f.fails, failKey{verb, kind, name})
			}
		}
		return fl.err
	}
	return nil
}

// actions returns every recorded call; writes leaves out waits, reads and
// the calls on PodDisruptionBudgets (budgetActs has those).
func (f *fakeCluster) actions() []act {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]act(nil), f.acts...)
}

func (f *fakeCluster) writes() []act {
	var out []act
	for _, a := range f.actions() {
		if a.Verb != "wait" && a.Verb != "list" && a.Verb != "get" && a.Kind != kPDB {
			out = append(out, a)
		}
	}
	return out
}

func (f *fakeCluster) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acts = nil
}

// finish removes a Terminating Pod or PVC, as the kubelet or the PV controller would.
func (f *fakeCluster) finish(kind Kind, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch kind {
	case KindPod:
		delete(f.pods, name)
	case KindPVC:
		delete(f.pvcs, name)
	case KindService:
		delete(f.svcs, name)
	}
	f.notify()
}

func (f *fakeCluster) pod(name string) *corev1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods[name].DeepCopy()
}

func (f *fakeCluster) pvc(name string) *corev1.PersistentVolumeClaim {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pvcs[name].DeepCopy()
}

func (f *fakeCluster) lease(name string) *coordinationv1.Lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leases[name].DeepCopy()
}

func (f *fakeCluster) cm(name string) *corev1.ConfigMap {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cms[name].DeepCopy()
}

func (f *fakeCluster) count() (pods, pvcs, leases int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pods), len(f.pvcs), len(f.leases)
}

func (f *fakeCluster) Snapshot(_ context.Context, pool string) (Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snapshotErr != nil {
		return Snapshot{}, f.snapshotErr
	}
	s := Snapshot{Namespace: f.ns, Pool: pool, ConfigMap: f.cms[ConfigMapName(pool)].DeepCopy(), NodeDown: f.nodeDown, NodeCordoned: f.cordoned}
	for _, name := range sortedKeys(f.pods) {
		if p := f.pods[name]; p.Labels[LabelPool] == pool {
			s.Pods = append(s.Pods, p.DeepCopy())
		}
	}
	for _, name := range sortedKeys(f.pvcs) {
		if c := f.pvcs[name]; c.Labels[LabelPool] == pool {
			s.PVCs = append(s.PVCs, c.DeepCopy())
		}
	}
	for _, name := range sortedKeys(f.leases) {
		if l := f.leases[name]; LeaseInPool(l, pool) { // by its name, labelled or not
			s.Leases = append(s.Leases, l.DeepCopy())
		}
	}
	return s, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (f *fakeCluster) CreateConfigMap(_ context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	err := f.record("create", kCM, cm.Name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if f.cms[cm.Name] != nil {
		return nil, fmt.Errorf("configmaps %q: %w", cm.Name, ErrAlreadyExists)
	}
	c := cm.DeepCopy()
	c.ResourceVersion, c.UID = "", ""
	f.stamp(&c.ObjectMeta)
	f.cms[c.Name] = c
	f.notify()
	return c.DeepCopy(), nil
}

func (f *fakeCluster) PatchConfigMap(_ context.Context, name, rv string, labels, data map[string]string) error {
	err := f.record("cas", kCM, name) // the compare-and-swap patch of the definition
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	cur := f.cms[name]
	if cur == nil {
		return fmt.Errorf("configmaps %q: %w", name, ErrNotFound)
	}
	if rv == "" || rv != cur.ResourceVersion {
		return fmt.Errorf("configmaps %q: resourceVersion %q is not %q: %w", name, rv, cur.ResourceVersion, ErrConflict)
	}
	c := cur.DeepCopy()
	for k, v := range labels {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[k] = v
	}
	for k, v := range data {
		if c.Data == nil {
			c.Data = map[string]string{}
		}
		c.Data[k] = v
	}
	if n := configMapDataSize(c.Data); n > maxConfigMapBytes {
		return fmt.Errorf("ConfigMap %q is invalid: []: Too long: may not be more than %d bytes", name, maxConfigMapBytes)
	}
	c.ResourceVersion = f.nextRV()
	f.cms[c.Name] = c
	f.notify()
	return nil
}

// maxConfigMapBytes is the API server's bound of a ConfigMap's data (its
// keys and values together).
const maxConfigMapBytes = 1 << 20

func configMapDataSize(data map[string]string) int {
	n := 0
	for k, v := range data {
		n += len(k) + len(v)
	}
	return n
}

func (f *fakeCluster) ListLeases(_ context.Context, pool string) ([]*coordinationv1.Lease, error) {
	err := f.record("list", kLease, pool)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var out []*coordinationv1.Lease
	for _, name := range sortedKeys(f.leases) {
		if l := f.leases[name]; LeaseInPool(l, pool) {
			out = append(out, l.DeepCopy())
		}
	}
	return out, nil
}

func (f *fakeCluster) ListLabelledLeases(_ context.Context, pool, holder string) ([]*coordinationv1.Lease, error) {
	err := f.record("list", kLease, pool)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var out []*coordinationv1.Lease
	for _, name := range sortedKeys(f.leases) {
		l := f.leases[name]
		if l.Labels[LabelPool] == pool && (holder == "" || l.Labels[LabelHolder] == HolderLabel(holder)) {
			out = append(out, l.DeepCopy())
		}
	}
	return out, nil
}

func (f *fakeCluster) GetLease(_ context.Context, name string) (*coordinationv1.Lease, error) {
	err := f.record("get", kLease, name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	l := f.leases[name]
	if l == nil {
		return nil, fmt.Errorf("leases %q: %w", name, ErrNotFound)
	}
	return l.DeepCopy(), nil
}

func (f *fakeCluster) GetConfigMap(_ context.Context, name string) (*corev1.ConfigMap, error) {
	err := f.record("get", kCM, name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if f.snapshotErr != nil {
		return nil, f.snapshotErr
	}
	cm := f.cms[name]
	if cm == nil {
		return nil, fmt.Errorf("configmaps %q: %w", name, ErrNotFound)
	}
	return cm.DeepCopy(), nil
}

func (f *fakeCluster) PatchConfigMapData(_ context.Context, name, key, value string) error {
	err := f.record("patch", kCM, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	cur := f.cms[name]
	if cur == nil {
		return fmt.Errorf("configmaps %q: %w", name, ErrNotFound)
	}
	n := configMapDataSize(cur.Data) + len(key) + len(value)
	if old, ok := cur.Data[key]; ok {
		n -= len(key) + len(old)
	}
	if n > maxConfigMapBytes {
		return fmt.Errorf("ConfigMap %q is invalid: []: Too long: may not be more than %d bytes", name, maxConfigMapBytes)
	}
	if cur.Data == nil {
		cur.Data = map[string]string{}
	}
	cur.Data[key] = value
	cur.ResourceVersion = f.nextRV()
	f.notify()
	return nil
}

func (f *fakeCluster) DeleteConfigMap(_ context.Context, name string, uid types.UID) error {
	err := f.record("delete", kCM, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	cur := f.cms[name]
	if cur == nil {
		return nil
	}
	if uid != "" && cur.UID != uid {
		return fmt.Errorf("configmaps %q: UID precondition: %w", name, ErrConflict)
	}
	delete(f.cms, name)
	f.notify()
	return nil
}

func (f *fakeCluster) CreatePod(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	err := f.record("create", kPod, pod.Name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if f.pods[pod.Name] != nil {
		return nil, fmt.Errorf("pods %q: %w", pod.Name, ErrAlreadyExists)
	}
	c := pod.DeepCopy()
	f.stamp(&c.ObjectMeta)
	f.pods[c.Name] = c
	f.notify()
	return c.DeepCopy(), nil
}

func (f *fakeCluster) GetPod(_ context.Context, name string) (*corev1.Pod, error) {
	err := f.record("get", kPod, name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	p := f.pods[name]
	if p == nil {
		return nil, fmt.Errorf("pods %q: %w", name, ErrNotFound)
	}
	return p.DeepCopy(), nil
}

func (f *fakeCluster) GetPVC(_ context.Context, name string) (*corev1.PersistentVolumeClaim, error) {
	err := f.record("get", kPVC, name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	c := f.pvcs[name]
	if c == nil {
		return nil, fmt.Errorf("persistentvolumeclaims %q: %w", name, ErrNotFound)
	}
	return c.DeepCopy(), nil
}

func (f *fakeCluster) CreatePVC(_ context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	err := f.record("create", kPVC, pvc.Name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if f.pvcs[pvc.Name] != nil {
		return nil, fmt.Errorf("persistentvolumeclaims %q: %w", pvc.Name, ErrAlreadyExists)
	}
	c := pvc.DeepCopy()
	f.stamp(&c.ObjectMeta)
	f.pvcs[c.Name] = c
	f.notify()
	return c.DeepCopy(), nil
}

// deleteMeta applies the UID precondition and the delete mode to one object;
// it reports whether the object is to be removed now. Called with mu held.
func (f *fakeCluster) deleteMeta(m *metav1.ObjectMeta, uid types.UID) (remove bool, err error) {
	if uid != "" && m.UID != uid {
		return false, fmt.Errorf("%s: UID precondition %s is not %s: %w", m.Name, uid, m.UID, ErrConflict)
	}
	if !f.terminating {
		return true, nil
	}
	if m.DeletionTimestamp == nil {
		t := metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		m.DeletionTimestamp = &t
		m.ResourceVersion = f.nextRV()
	}
	return false, nil
}

func (f *fakeCluster) DeletePod(_ context.Context, name string, uid types.UID) error {
	err := f.record("delete", kPod, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	cur := f.pods[name]
	if cur == nil {
		return nil
	}
	remove, err := f.deleteMeta(&cur.ObjectMeta, uid)
	if remove {
		delete(f.pods, name)
	}
	f.notify()
	return err
}

func (f *fakeCluster) DeletePVC(_ context.Context, name string, uid types.UID) error {
	err := f.record("delete", kPVC, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	cur := f.pvcs[name]
	if cur == nil {
		return nil
	}
	remove, err := f.deleteMeta(&cur.ObjectMeta, uid)
	if remove {
		delete(f.pvcs, name)
	}
	f.notify()
	return err
}

func (f *fakeCluster) AnnotatePVC(_ context.Context, name, key string, value *string) error {
	err := f.record("patch", kPVC, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	cur := f.pvcs[name]
	if cur == nil {
		return fmt.Errorf("persistentvolumeclaims %q: %w", name, ErrNotFound)
	}
	if value == nil {
		delete(cur.Annotations, key)
	} else {
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[key] = *value
	}
	cur.ResourceVersion = f.nextRV()
	f.notify()
	return nil
}

func (f *fakeCluster) DeleteService(_ context.Context, name string) error {
	err := f.record("delete", kSvc, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	if _, ok := f.svcs[name]; ok && f.terminating {
		f.svcs[name] = true
	} else {
		delete(f.svcs, name)
	}
	f.notify()
	return nil
}

func (f *fakeCluster) CreateLease(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	err := f.record("create", kLease, l.Name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if f.leases[l.Name] != nil {
		return nil, fmt.Errorf("leases %q: %w", l.Name, ErrAlreadyExists)
	}
	c := l.DeepCopy()
	c.ResourceVersion, c.UID = "", ""
	f.stamp(&c.ObjectMeta)
	f.leases[c.Name] = c
	f.notify()
	return c.DeepCopy(), nil
}

func (f *fakeCluster) UpdateLease(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	err := f.record("update", kLease, l.Name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	cur := f.leases[l.Name]
	if cur == nil {
		return nil, fmt.Errorf("leases %q: %w", l.Name, ErrNotFound)
	}
	if l.ResourceVersion == "" || l.ResourceVersion != cur.ResourceVersion {
		return nil, fmt.Errorf("leases %q: resourceVersion %q is not %q: %w", l.Name, l.ResourceVersion, cur.ResourceVersion, ErrConflict)
	}
	c := l.DeepCopy()
	c.UID = cur.UID
	c.ResourceVersion = f.nextRV()
	f.leases[c.Name] = c
	f.notify()
	return c.DeepCopy(), nil
}

func (f *fakeCluster) DeleteLease(_ context.Context, name, rv string) error {
	err := f.record("delete", kLease, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	cur := f.leases[name]
	if cur == nil {
		return nil
	}
	if rv != "" && cur.ResourceVersion != rv {
		return fmt.Errorf("leases %q: resourceVersion precondition %q is not %q: %w", name, rv, cur.ResourceVersion, ErrConflict)
	}
	delete(f.leases, name)
	f.notify()
	return nil
}

func (f *fakeCluster) WaitGone(ctx context.Context, kind Kind, name string, uid types.UID) error {
	err := f.record("wait", string(kind), name)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if f.waits != nil {
		f.waits <- act{"wait", string(kind), name}
	}
	for {
		f.mu.Lock()
		var m *metav1.ObjectMeta
		switch kind {
		case KindPod:
			if p := f.pods[name]; p != nil {
				m = &p.ObjectMeta
			}
		case KindPVC:
			if c := f.pvcs[name]; c != nil {
				m = &c.ObjectMeta
			}
		case KindService:
			if _, ok := f.svcs[name]; ok {
				m = &metav1.ObjectMeta{Name: name}
			}
		default:
			f.mu.Unlock()
			return fmt.Errorf("fake: unknown kind %q", kind)
		}
		gone := m == nil || (uid != "" && m.UID != uid)
		ch := f.changed
		f.mu.Unlock()
		if gone {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestFakeCluster checks the fake itself: the engine tests rely on its semantics.
func TestFakeCluster(t *testing.T) {
	ctx := context.Background()
	f := newFake(testNS)
	l := ReconcilerLease(testNS, "desk", "desk-1", testNow)
	got, err := f.CreateLease(ctx, l)
	if err != nil || got.ResourceVersion == "" {
		t.Fatalf("create lease: %v %v", got, err)
	}
	if _, err := f.CreateLease(ctx, l); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	stale := got.DeepCopy()
	if _, err := f.UpdateLease(ctx, got); err != nil {
		t.Fatalf("update: %v", err)
	}
	if _, err := f.UpdateLease(ctx, stale); !errors.Is(err, ErrConflict) {
		t.Fatalf("update with old rv: %v", err)
	}
	if err := f.DeleteLease(ctx, l.Name, stale.ResourceVersion); !errors.Is(err, ErrConflict) {
		t.Fatalf("delete with old rv: %v", err)
	}
	if err := f.DeleteLease(ctx, l.Name, ""); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := f.DeleteLease(ctx, l.Name, "1"); err != nil {
		t.Fatalf("delete missing: %v", err)
	}
	if _, err := f.UpdateLease(ctx, got); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}

	p, _ := readyMember("desk", 1, baseSpec(1))
	f.add(p)
	if err := f.DeletePod(ctx, p.Name, "other"); !errors.Is(err, ErrConflict) {
		t.Fatalf("delete with wrong uid: %v", err)
	}
	f.terminating = true
	uid := f.pod(p.Name).UID
	if err := f.DeletePod(ctx, p.Name, uid); err != nil || f.pod(p.Name).DeletionTimestamp == nil {
		t.Fatalf("terminating delete: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := f.WaitGone(wctx, KindPod, p.Name, uid); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on a stuck pod: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- f.WaitGone(ctx, KindPod, p.Name, uid) }()
	f.finish(KindPod, p.Name)
	if err := <-done; err != nil {
		t.Fatalf("wait after finish: %v", err)
	}

	boom := errors.New("boom")
	f.fail("create", kPVC, "x-1-data", boom, 1)
	if _, err := f.CreatePVC(ctx, BuildPVC(testNS, "x", 1, baseSpec(1))); !errors.Is(err, boom) {
		t.Fatalf("injected failure: %v", err)
	}
	if _, err := f.CreatePVC(ctx, BuildPVC(testNS, "x", 1, baseSpec(1))); err != nil {
		t.Fatalf("failure injected once only: %v", err)
	}
	want := wantActs("create Lease corral-vdi-ct-desk-1", "create Lease corral-vdi-ct-desk-1")
	if got := f.writes()[:2]; got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("recorded %v", got)
	}
}

var _ DisruptionBudgetClient = (*fakeCluster)(nil)

// budgetActs are the recorded calls on PodDisruptionBudgets.
func (f *fakeCluster) budgetActs() []act {
	var out []act
	for _, a := range f.actions() {
		if a.Kind == kPDB {
			out = append(out, a)
		}
	}
	return out
}

func (f *fakeCluster) pdb(name string) *policyv1.PodDisruptionBudget {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pdbs[name].DeepCopy()
}

func (f *fakeCluster) GetPodDisruptionBudget(_ context.Context, name string) (*policyv1.PodDisruptionBudget, error) {
	err := f.record("get", kPDB, name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	p := f.pdbs[name]
	if p == nil {
		return nil, fmt.Errorf("poddisruptionbudgets %q: %w", name, ErrNotFound)
	}
	return p.DeepCopy(), nil
}

func (f *fakeCluster) CreatePodDisruptionBudget(_ context.Context, pdb *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error) {
	err := f.record("create", kPDB, pdb.Name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if f.pdbs[pdb.Name] != nil {
		return nil, fmt.Errorf("poddisruptionbudgets %q: %w", pdb.Name, ErrAlreadyExists)
	}
	c := pdb.DeepCopy()
	f.stamp(&c.ObjectMeta)
	f.pdbs[c.Name] = c
	return c.DeepCopy(), nil
}

func (f *fakeCluster) UpdatePodDisruptionBudget(_ context.Context, pdb *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error) {
	err := f.record("update", kPDB, pdb.Name)
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	cur := f.pdbs[pdb.Name]
	switch {
	case cur == nil:
		return nil, fmt.Errorf("poddisruptionbudgets %q: %w", pdb.Name, ErrNotFound)
	case cur.ResourceVersion != pdb.ResourceVersion:
		return nil, fmt.Errorf("poddisruptionbudgets %q: %w", pdb.Name, ErrConflict)
	}
	c := pdb.DeepCopy()
	c.UID, c.ResourceVersion = cur.UID, f.nextRV()
	f.pdbs[c.Name] = c
	return c.DeepCopy(), nil
}

func (f *fakeCluster) DeletePodDisruptionBudget(_ context.Context, name string, uid types.UID) error {
	err := f.record("delete", kPDB, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	cur := f.pdbs[name]
	switch {
	case cur == nil:
		return nil
	case uid != "" && cur.UID != uid:
		return fmt.Errorf("poddisruptionbudgets %q: %w", name, ErrConflict)
	}
	delete(f.pdbs, name)
	return nil
}

// PatchPodMeta is recorded as a patch of the Pod.
func (f *fakeCluster) PatchPodMeta(_ context.Context, name string, uid types.UID, labels, annotations map[string]*string) error {
	err := f.record("patch", kPod, name)
	defer f.mu.Unlock()
	if err != nil {
		return err
	}
	cur := f.pods[name]
	switch {
	case cur == nil:
		return fmt.Errorf("pods %q: %w", name, ErrNotFound)
	case uid != "" && cur.UID != uid:
		return fmt.Errorf("pods %q: %w", name, ErrConflict)
	}
	set := func(m map[string]string, kv map[string]*string) map[string]string {
		for k, v := range kv {
			if v == nil {
				delete(m, k)
				continue
			}
			if m == nil {
				m = map[string]string{}
			}
			m[k] = *v
		}
		return m
	}
	cur.Labels = set(cur.Labels, labels)
	cur.Annotations = set(cur.Annotations, annotations)
	cur.ResourceVersion = f.nextRV()
	f.notify()
	return nil
}
