// Package controller runs the pool reconciler inside the cluster: every pool
// of a namespace (or of all namespaces) from shared informers and a
// rate-limited work queue keyed by namespace/pool, several workers that call
// engine.Engine.Reconcile, optional leader election on its own Lease, the
// Prometheus metrics and health endpoints, and the manifests that deploy it.
//
// Informer event handlers only enqueue the pool named by the changed object's
// corral.dev/vdi-ct-pool label; the sync function (sync) is the unit under
// test. Reads come from the informer cache, except that a reconcile the cache
// says has work to do reads fresh from the API server before it writes (see
// ReadMode): a no-op reconcile costs no request at all, and a stale cache
// never makes the engine act on objects it would not see fresh. The engine
// guards every write with a Lease, a UID or a resourceVersion anyway.
package controller
