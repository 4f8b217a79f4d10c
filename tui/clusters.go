package tui

import (
	"strings"
	"time"
)

// A fleet of clusters (Options.Contexts) merges the pools of several
// kubeconfig contexts. A pool's Namespace is then context/namespace, so that
// its key is context/namespace/pool and every read and action of the pool
// (ActionsIn, AccessIn, Events, logs, console) is routed by the caller to
// its own cluster and namespace; what the user may do is asked per
// context/namespace, so per cluster. The header gets a line with each
// cluster's own state, so that one cluster down never hides the others.

// ClusterHealth is one cluster's connection, as a DataSource of several
// clusters reports it (ClusterSource).
type ClusterHealth struct {
	Context string
	// Synced: the cluster's caches finished their first list.
	Synced bool
	// LastSync is when an object last arrived from its API server.
	LastSync time.Time
	// ErrAt and Err are its last list or watch error (zero: none).
	ErrAt time.Time
	Err   error
	// Forbidden: the identity of this context may not list the pools
	// there; nothing is read from it.
	Forbidden error
}

// ClusterSource is a DataSource of several clusters: the header shows each
// one's state.
type ClusterSource interface {
	Clusters() []ClusterHealth
}

// clusterState is a cluster's state as the header shows it.
type clusterState struct {
	context string
	word    string // live, syncing, stale 42s, unreachable, forbidden
	level   int
}

// state names a cluster's health at now: forbidden, unreachable (an error
// and no data yet), stale with the age of its data (an error since its
// last data), syncing, or live.
func (h ClusterHealth) state(now time.Time) clusterState {
	s := clusterState{context: h.Context}
	switch {
	case h.Forbidden != nil:
		s.word, s.level = glyphBad+" forbidden", levelError
	case !h.ErrAt.IsZero() && !h.ErrAt.Before(h.LastSync) && h.LastSync.IsZero():
		s.word, s.level = glyphBad+" unreachable", levelError
	case !h.ErrAt.IsZero() && !h.ErrAt.Before(h.LastSync):
		s.word, s.level = glyphWarn+" stale "+short(now.Sub(h.LastSync)), levelWarn
	case !h.Synced:
		s.word, s.level = glyphSyncing+" syncing", levelWarn
	default:
		s.word, s.level = glyphLive+" live", levelOK
	}
	return s
}

// clustersLine is the header's second line in a fleet of clusters: each
// cluster's context and state.
func clustersLine(c viewContext) string {
	parts := make([]string, 0, len(c.clusters))
	for _, s := range c.clusters {
		parts = append(parts, clean(s.context)+" "+c.level(s.level).Render(clean(s.word)))
	}
	return cut(" clusters: "+strings.Join(parts, "  "), c.width)
}

// splitNamespace splits a pool's namespace into its context and namespace
// in a fleet of clusters (context/namespace, at the last "/": a namespace
// name has none); otherwise the context is "".
func (c *viewContext) splitNamespace(ns string) (kctx, name string) {
	return splitNamespace(c.contexts, ns)
}

// splitNamespace is viewContext.splitNamespace in a fleet of clusters
// (contexts) or not.
func splitNamespace(contexts bool, ns string) (kctx, name string) {
	if !contexts {
		return "", ns
	}
	if i := strings.LastIndexByte(ns, '/'); i >= 0 {
		return ns[:i], ns[i+1:]
	}
	return "", ns
}
