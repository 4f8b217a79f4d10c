package demo

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
)

// apiServer puts what a real API server does, and client-go's object tracker
// does not, in front of the fake clientset's tracker:
//
//   - every write gets a resourceVersion (one revision counter, as in etcd),
//     a create gets a UID and a creationTimestamp from the simulation clock,
//     and generateName is honoured;
//   - an update or patch that carries a resourceVersion is a compare-and-swap,
//     and delete preconditions (UID, resourceVersion) are checked, so the
//     engine's Lease and ConfigMap writes keep their guarantees;
//   - list and watch honour label and field selectors;
//   - watches are served from an unbounded queue per watcher (the tracker's
//     own watchers panic when 100 events are not read in time) and replay the
//     objects changed after the requested resourceVersion;
//   - admit, when set, defaults new objects as admission would.
//
// Server-side apply is refused: nothing in ctpool-tui uses it, and objects
// carry no managedFields.
type apiServer struct {
	inner  k8stesting.ObjectTracker
	mapper meta.RESTMapper
	now    func() time.Time
	admit  func(gvr schema.GroupVersionResource, obj runtime.Object)

	mu       sync.Mutex
	rev      int64
	rng      *rand.Rand
	watchers map[*watcher]struct{}
}

var _ k8stesting.ObjectTracker = (*apiServer)(nil)

// newClientset returns a fake clientset whose reactions go through an
// apiServer. The apiServer stores objects in client-go's plain object tracker
// rather than the field-managed one of fake.NewClientset, which rebuilds a
// REST mapper of the whole scheme on every write (milliseconds each); so
// objects carry no managedFields, and cs.Tracker() is not the store.
func newClientset(now func() time.Time, seed int64) (*fake.Clientset, *apiServer) {
	cs := fake.NewClientset()
	api := &apiServer{
		inner:    k8stesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder()),
		mapper:   testrestmapper.TestOnlyStaticRESTMapper(scheme.Scheme),
		now:      now,
		rng:      rand.New(rand.NewPCG(uint64(seed), 0x5eed_a11c_e0ff_1ce5)),
		watchers: map[*watcher]struct{}{},
	}
	cs.Lock()
	cs.ReactionChain = nil
	cs.WatchReactionChain = nil
	cs.Unlock()
	cs.AddReactor("*", "*", k8stesting.ObjectReaction(api))
	cs.AddWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := api.Watch(action.GetResource(), action.GetNamespace(), opts)
		return true, w, err
	})
	return cs, api
}

// Add stores an object as it is (the tracker's seeding entry point).
func (a *apiServer) Add(obj runtime.Object) error { return a.inner.Add(obj) }

// Get returns a copy of the stored object.
func (a *apiServer) Get(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.GetOptions) (runtime.Object, error) {
	return a.inner.Get(gvr, ns, name, opts...)
}

// Create stores a new object with a UID, a creationTimestamp and a resourceVersion.
func (a *apiServer) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + a.randomSuffix())
	}
	if m.GetName() == "" {
		return apierrors.NewBadRequest("name or generateName is required")
	}
	if a.admit != nil {
		a.admit(gvr, obj)
	}
	m.SetUID(a.newUID())
	m.SetCreationTimestamp(metav1.NewTime(a.now()))
	m.SetDeletionTimestamp(nil)
	m.SetResourceVersion(a.nextRev())
	if err := a.inner.Create(gvr, obj, ns, opts...); err != nil {
		return err
	}
	a.broadcastStored(gvr, ns, m.GetName(), watch.Added)
	return nil
}

// Update replaces an object; a resourceVersion in obj must match the stored one.
func (a *apiServer) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	return a.modify(gvr, obj, ns, func() error { return a.inner.Update(gvr, obj, ns, opts...) })
}

// Patch stores a patched object (computed by the reaction from the stored one).
func (a *apiServer) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	return a.modify(gvr, obj, ns, func() error { return a.inner.Patch(gvr, obj, ns, opts...) })
}

// modify checks a write, stores it with store and tells the watchers.
func (a *apiServer) modify(gvr schema.GroupVersionResource, obj runtime.Object, ns string, store func() error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.prepareWrite(gvr, obj, ns); err != nil {
		return err
	}
	if err := store(); err != nil {
		return err
	}
	m, _ := meta.Accessor(obj)
	a.broadcastStored(gvr, ns, m.GetName(), watch.Modified)
	return nil
}

// Apply is refused: the demo cluster does not do server-side apply.
func (a *apiServer) Apply(gvr schema.GroupVersionResource, _ runtime.Object, _ string, _ ...metav1.PatchOptions) error {
	return apierrors.NewMethodNotSupported(gvr.GroupResource(), "apply (server-side apply is not simulated by the demo cluster)")
}

// Delete removes an object at once (no graceful deletion, no finalizers),
// after checking the UID and resourceVersion preconditions.
func (a *apiServer) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur, err := a.inner.Get(gvr, ns, name)
	if err != nil {
		return err
	}
	cm, err := meta.Accessor(cur)
	if err != nil {
		return err
	}
	if len(opts) > 0 && opts[0].Preconditions != nil {
		p := opts[0].Preconditions
		if p.UID != nil && *p.UID != cm.GetUID() {
			return apierrors.NewConflict(gvr.GroupResource(), name,
				fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, cm.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != cm.GetResourceVersion() {
			return apierrors.NewConflict(gvr.GroupResource(), name,
				fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, cm.GetResourceVersion()))
		}
	}
	if err := a.inner.Delete(gvr, ns, name, opts...); err != nil {
		return err
	}
	cm.SetResourceVersion(a.nextRev())
	a.broadcast(gvr, watch.Deleted, cur)
	return nil
}

// List returns the objects that match the label and field selectors, with
// the current revision as the list's resourceVersion.
func (a *apiServer) List(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, ns string, opts ...metav1.ListOptions) (runtime.Object, error) {
	_, sel, err := listOptions(gvr, opts)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	list, items, err := a.matching(gvr, gvk, ns, sel)
	if err != nil {
		return nil, err
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	if lm, err := meta.ListAccessor(list); err == nil {
		lm.SetResourceVersion(strconv.FormatInt(a.rev, 10))
	}
	return list, nil
}

// listOptions takes the optional list options of a List or Watch call and
// parses their selectors.
func listOptions(gvr schema.GroupVersionResource, opts []metav1.ListOptions) (metav1.ListOptions, selectors, error) {
	var o metav1.ListOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	sel, err := parseSelectors(gvr, o.LabelSelector, o.FieldSelector)
	return o, sel, err
}

// matching lists the stored objects of a resource and keeps those sel
// matches. The caller holds a.mu.
func (a *apiServer) matching(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, ns string, sel selectors) (runtime.Object, []runtime.Object, error) {
	list, err := a.inner.List(gvr, gvk, ns)
	if err != nil {
		return nil, nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, nil, err
	}
	kept := items[:0]
	for _, it := range items {
		if sel.matches(it) {
			kept = append(kept, it)
		}
	}
	return list, kept, nil
}

// Watch starts a watch. Objects changed after opts.ResourceVersion (all of
// them when it is "" or "0") are sent first as Added events.
func (a *apiServer) Watch(gvr schema.GroupVersionResource, ns string, opts ...metav1.ListOptions) (watch.Interface, error) {
	o, sel, err := listOptions(gvr, opts)
	if err != nil {
		return nil, err
	}
	from := int64(0)
	if o.ResourceVersion != "" {
		if from, err = strconv.ParseInt(o.ResourceVersion, 10, 64); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", o.ResourceVersion))
		}
	}
	gvk, err := a.mapper.KindFor(gvr)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, items, err := a.matching(gvr, gvk, ns, sel)
	if err != nil {
		return nil, err
	}
	w := newWatcher(a, gvr, ns, sel)
	for _, it := range items {
		m, err := meta.Accessor(it)
		if err != nil {
			continue
		}
		w.seen[objectKey(m)] = true
		if rv, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64); rv > from {
			w.push(watch.Event{Type: watch.Added, Object: it})
		}
	}
	a.watchers[w] = struct{}{}
	go w.run()
	return w, nil
}

// prepareWrite checks the compare-and-swap and carries the identity of the
// stored object over to the new one.
func (a *apiServer) prepareWrite(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(ns)
	}
	cur, err := a.inner.Get(gvr, m.GetNamespace(), m.GetName())
	if err != nil {
		return err
	}
	cm, err := meta.Accessor(cur)
	if err != nil {
		return err
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
		return apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	m.SetUID(cm.GetUID())
	m.SetCreationTimestamp(cm.GetCreationTimestamp())
	m.SetDeletionTimestamp(cm.GetDeletionTimestamp())
	m.SetResourceVersion(a.nextRev())
	return nil
}

func (a *apiServer) nextRev() string {
	a.rev++
	return strconv.FormatInt(a.rev, 10)
}

func (a *apiServer) newUID() types.UID {
	b := make([]byte, 16)
	for i := 0; i < 16; i += 8 {
		v := a.rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

// randomSuffix is what the API server appends to generateName.
func (a *apiServer) randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var sb strings.Builder
	for range 5 {
		sb.WriteByte(alphabet[a.rng.IntN(len(alphabet))])
	}
	return sb.String()
}

// broadcastStored sends the stored copy of an object to the watchers.
func (a *apiServer) broadcastStored(gvr schema.GroupVersionResource, ns, name string, typ watch.EventType) {
	obj, err := a.inner.Get(gvr, ns, name)
	if err != nil {
		return
	}
	a.broadcast(gvr, typ, obj)
}

// broadcast sends one change to every watcher of the resource, turning it
// into Added, Modified or Deleted as the object enters, stays in or leaves
// the watcher's selection. Called with a.mu held.
func (a *apiServer) broadcast(gvr schema.GroupVersionResource, typ watch.EventType, obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	key := objectKey(m)
	for w := range a.watchers {
		if w.gvr != gvr || (w.ns != "" && w.ns != m.GetNamespace()) {
			continue
		}
		was := w.seen[key]
		match := typ != watch.Deleted && w.sel.matches(obj)
		var t watch.EventType
		switch {
		case match && was:
			t = watch.Modified
		case match:
			t = watch.Added
		case was:
			t = watch.Deleted
		default:
			continue
		}
		if match {
			w.seen[key] = true
		} else {
			delete(w.seen, key)
		}
		w.push(watch.Event{Type: t, Object: obj.DeepCopyObject()})
	}
}

func (a *apiServer) removeWatcher(w *watcher) {
	a.mu.Lock()
	delete(a.watchers, w)
	a.mu.Unlock()
}

func objectKey(m metav1.Object) string { return m.GetNamespace() + "/" + m.GetName() }
