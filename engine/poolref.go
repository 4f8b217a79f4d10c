package engine

// PoolRef names one pool: its namespace and name and, in a dashboard of
// several clusters, the kubeconfig context it lives in ("" in one cluster).
// It is the one identity of a pool for the engine's callers, kube's caches,
// the in-cluster controller's work queue and the dashboard; nothing parses
// it back from a string.
type PoolRef struct {
	Context   string
	Namespace string
	Name      string
}

// String is the ref for people and logs: namespace/name, with the context
// in front when there is one (context/namespace/name). It is never parsed.
func (r PoolRef) String() string {
	s := r.Namespace + "/" + r.Name
	if r.Context != "" {
		s = r.Context + "/" + s
	}
	return s
}
