package kube

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// NodeWatch is an optional, cluster-scoped informer of the nodes (the
// Watcher's and the controller's): it keeps the down ones (engine.NodeDown)
// for the snapshots' NodeDown, and the cordoned ones for their NodeCordoned. It never counts in a cache's sync or health:
// an identity that may not list or watch nodes (Forbidden) stops it for
// good, and the snapshots then say the nodes are unknown (nil). Its handler
// calls changed only when a node goes down, comes back, or is cordoned or
// uncordoned (a node's status is
// written every few minutes without news): a node is no pool object, so the
// Watcher reads every pool whole again and the controller requeues them.
type NodeWatch struct {
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
	reg      cache.ResourceEventHandlerRegistration
	changed  func()      // a node went down or came back, after the sync
	synced   func() bool // the handler has seen the first list

	stop      context.CancelFunc // ends the informer (set by start)
	forbidden atomic.Bool
	news      atomic.Int64 // changes told after the first sync (News)

	mu       sync.Mutex
	down     map[string]string // never changed once published: copied on write
	cordoned map[string]bool   // the same
}

// NewNodeWatch builds the informer; nothing is read until Start.
func NewNodeWatch(client kubernetes.Interface, changed func()) *NodeWatch {
	n := &NodeWatch{changed: changed, down: map[string]string{}, cordoned: map[string]bool{}}
	n.factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(stripNode))
	n.informer = n.factory.Core().V1().Nodes().Informer()
	n.reg, _ = n.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { n.update(obj) },
		UpdateFunc: func(_, obj any) { n.update(obj) },
		DeleteFunc: func(obj any) { n.remove(obj) },
	})
	_ = n.informer.SetWatchErrorHandlerWithContext(n.onWatchError)
	n.synced = n.reg.HasSynced
	return n
}

// Start runs the informer until ctx ends (or a Forbidden stops it), and
// tells the Watcher once the nodes are first known.
func (n *NodeWatch) Start(ctx context.Context) {
	ctx, n.stop = context.WithCancel(ctx)
	n.factory.Start(ctx.Done())
	context.AfterFunc(ctx, n.factory.Shutdown)
	go func() {
		// Until now the nodes were unknown, which reads as every node
		// fine: only down nodes are news.
		if cache.WaitForCacheSync(ctx.Done(), n.reg.HasSynced) && (len(n.Down()) > 0 || len(n.Cordoned()) > 0) {
			n.changed()
		}
	}()
}

// onWatchError stops the informer when the identity may not list or watch
// nodes: they are optional, and a refusal does not change by retrying.
// Other errors are the pool informers' too, which report them.
func (n *NodeWatch) onWatchError(ctx context.Context, r *cache.Reflector, err error) {
	if apierrors.IsForbidden(err) {
		n.forbidden.Store(true)
		if n.stop != nil {
			n.stop()
		}
		return
	}
	cache.DefaultWatchErrorHandler(ctx, r, err)
}

// Down is the down nodes by name with their evidence, shared and never
// changed (read it, never write it); nil while the nodes are unknown: not
// listed yet, or not readable by this identity.
func (n *NodeWatch) Down() map[string]string {
	if n == nil || n.forbidden.Load() || !n.synced() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.down
}

// Cordoned is the cordoned nodes by name (engine.NodeCordoned), shared and
// never changed; nil while the nodes are unknown, as Down.
func (n *NodeWatch) Cordoned() map[string]bool {
	if n == nil || n.forbidden.Load() || !n.synced() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cordoned
}

// News is how many times a node went down or came back after the first
// list: 0 when changed was called only for that list.
func (n *NodeWatch) News() int64 { return n.news.Load() }

func (n *NodeWatch) update(obj any) {
	if nd, ok := obj.(*corev1.Node); ok {
		n.set(nd.Name, engine.NodeDown(nd), engine.NodeCordoned(nd))
	}
}

func (n *NodeWatch) remove(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if nd, ok := obj.(*corev1.Node); ok {
		n.set(nd.Name, "", false)
	}
}

// set records a node's evidence ("": fine or gone) and whether it is
// cordoned, and tells the Watcher when either changed after the first sync.
func (n *NodeWatch) set(name, why string, cordoned bool) {
	n.mu.Lock()
	if n.down[name] == why && n.cordoned[name] == cordoned {
		n.mu.Unlock()
		return
	}
	if n.down[name] != why {
		down := maps.Clone(n.down)
		if why == "" {
			delete(down, name)
		} else {
			down[name] = why
		}
		n.down = down
	}
	if n.cordoned[name] != cordoned {
		c := maps.Clone(n.cordoned)
		if cordoned {
			c[name] = true
		} else {
			delete(c, name)
		}
		n.cordoned = c
	}
	n.mu.Unlock()
	if n.synced() {
		n.news.Add(1)
		n.changed()
	}
}

// stripNode keeps of a node what NodeDown and NodeCordoned read: its name,
// Ready condition, taints and unschedulable flag (a node's images and volumes can be large, and a cluster may
// have thousands of nodes).
func stripNode(obj any) (any, error) {
	nd, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nd.Name, UID: nd.UID, ResourceVersion: nd.ResourceVersion},
		Spec:       corev1.NodeSpec{Taints: nd.Spec.Taints, Unschedulable: nd.Spec.Unschedulable},
	}
	for _, c := range nd.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{c}
		}
	}
	return out, nil
}
