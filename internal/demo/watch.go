// The emulated API server's watches and the selectors they filter by.

package demo

import (
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// watcher is one watch: an unbounded queue drained into an unbuffered
// result channel by its own goroutine, so a slow reader never blocks or
// breaks a writer.
type watcher struct {
	api  *apiServer
	gvr  schema.GroupVersionResource
	ns   string
	sel  selectors
	seen map[string]bool // guarded by api.mu

	mu     sync.Mutex
	queue  []watch.Event
	notify chan struct{}
	result chan watch.Event
	stop   chan struct{}
	once   sync.Once
}

func newWatcher(a *apiServer, gvr schema.GroupVersionResource, ns string, sel selectors) *watcher {
	return &watcher{
		api: a, gvr: gvr, ns: ns, sel: sel, seen: map[string]bool{},
		notify: make(chan struct{}, 1),
		result: make(chan watch.Event),
		stop:   make(chan struct{}),
	}
}

func (w *watcher) push(ev watch.Event) {
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *watcher) run() {
	defer close(w.result)
	for {
		w.mu.Lock()
		var ev watch.Event
		have := len(w.queue) > 0
		if have {
			ev = w.queue[0]
		}
		w.mu.Unlock()
		if !have {
			select {
			case <-w.notify:
				continue
			case <-w.stop:
				return
			}
		}
		select {
		case w.result <- ev:
			w.mu.Lock()
			w.queue[0] = watch.Event{}
			w.queue = w.queue[1:]
			w.mu.Unlock()
		case <-w.stop:
			return
		}
	}
}

// Stop ends the watch; ResultChan is closed soon after.
func (w *watcher) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.api.removeWatcher(w)
	})
}

// ResultChan returns the channel of events.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// selectors are a parsed label and field selector.
type selectors struct {
	gvr    schema.GroupVersionResource
	labels labels.Selector
	fields fields.Selector
}

func parseSelectors(gvr schema.GroupVersionResource, label, field string) (selectors, error) {
	s := selectors{gvr: gvr, labels: labels.Everything(), fields: fields.Everything()}
	var err error
	if label != "" {
		if s.labels, err = labels.Parse(label); err != nil {
			return s, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
	}
	if field != "" {
		if s.fields, err = fields.ParseSelector(field); err != nil {
			return s, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
		supported := selectableFields(gvr)
		for _, r := range s.fields.Requirements() {
			if !supported[r.Field] {
				return s, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
			}
		}
	}
	return s, nil
}

func (s selectors) matches(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if !s.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if s.fields.Empty() {
		return true
	}
	return s.fields.Matches(fieldSet(obj, m))
}
