package engine

import "time"

// ContextHealth is the connection of one kubeconfig context of a reader of
// several contexts (kube.Contexts), as the dashboard shows it on its
// contexts line: one type for the reader and the dashboard.
type ContextHealth struct {
	Context string
	// Synced: the context's caches finished their first list.
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
