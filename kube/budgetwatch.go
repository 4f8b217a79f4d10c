package kube

import (
	"context"
	"sync/atomic"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// BudgetWatch is the controller's optional informer of the pools'
// PodDisruptionBudgets (labelled with a pool, in one namespace or in all of
// them): a reconcile of a pool whose budget it holds as the engine writes it
// reads nothing more, so that a pool at rest costs no request. It never
// counts in the cache's sync or health: an identity that may not list or
// watch PodDisruptionBudgets (Forbidden) stops it for good, and every
// reconcile then reads the budget fresh (and says so when it cannot).
type BudgetWatch struct {
	factory   informers.SharedInformerFactory
	informer  cache.SharedIndexInformer
	synced    func() bool
	stop      context.CancelFunc
	forbidden atomic.Bool
}

// NewBudgetWatch builds the informer and registers h (when set), which
// learns of a budget changed or deleted by hand; nothing is read until Start.
func NewBudgetWatch(client kubernetes.Interface, namespace string, h cache.ResourceEventHandler) *BudgetWatch {
	sel := poolLabelSelector().String()
	b := &BudgetWatch{}
	b.factory = informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }),
		informers.WithTransform(StripForCache),
	)
	b.informer = b.factory.Policy().V1().PodDisruptionBudgets().Informer()
	b.synced = b.informer.HasSynced
	if h != nil {
		reg, _ := b.informer.AddEventHandler(h)
		b.synced = reg.HasSynced
	}
	_ = b.informer.SetWatchErrorHandlerWithContext(b.onWatchError)
	return b
}

// Start runs the informer until ctx ends (or a Forbidden stops it).
func (b *BudgetWatch) Start(ctx context.Context) {
	ctx, b.stop = context.WithCancel(ctx)
	b.factory.Start(ctx.Done())
	context.AfterFunc(ctx, b.factory.Shutdown)
}

func (b *BudgetWatch) onWatchError(ctx context.Context, r *cache.Reflector, err error) {
	if apierrors.IsForbidden(err) {
		b.forbidden.Store(true)
		if b.stop != nil {
			b.stop()
		}
		return
	}
	cache.DefaultWatchErrorHandler(ctx, r, err)
}

// Read is the pool's budget as the cache holds it, when the cache holds it
// as the engine writes it (engine.ObserveProtection: protected); nil
// otherwise (not synced, not readable, missing, changed, or someone else's:
// a reconcile reads it fresh and acts).
func (b *BudgetWatch) Read(namespace, pool string) *engine.DisruptionBudgetRead {
	if b == nil || b.forbidden.Load() || !b.synced() {
		return nil
	}
	obj, ok, err := b.informer.GetStore().GetByKey(namespace + "/" + engine.DisruptionBudgetName(pool))
	if err != nil || !ok {
		return nil
	}
	pdb, ok := obj.(*policyv1.PodDisruptionBudget)
	if !ok || !engine.ObserveProtection(pool, pdb).Protected() {
		return nil
	}
	return &engine.DisruptionBudgetRead{Budget: pdb}
}
