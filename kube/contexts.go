package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Contexts merges the Watchers of several clusters, one per kubeconfig
// context, into one source of pools for the dashboard of several clusters
// (--context a,b,c, --all-contexts): their snapshots and changes, their
// sync state, and each cluster's health for the header. A cluster that does
// not answer never holds the others back; one that is not watched (its
// identity may not list the pools, or it could not be connected) is only
// reported.
type Contexts struct {
	clusters []ContextCluster
	ch       chan struct{}
}

// ContextCluster is one cluster of Contexts.
type ContextCluster struct {
	// Name is the cluster's kubeconfig context.
	Name string
	// Watcher reads its pools (nil: not watched).
	Watcher *Watcher
	// Forbidden: its identity may not list the pools; nothing is read.
	Forbidden error
	// Err and ErrAt: why it could not be connected (Watcher nil).
	Err   error
	ErrAt time.Time
}

// ContextHealth is one cluster's connection as Contexts reports it.
type ContextHealth struct {
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

// NewContexts merges the clusters' Watchers (started by the caller) and
// passes their change signals on until ctx ends.
func NewContexts(ctx context.Context, clusters []ContextCluster) *Contexts {
	s := &Contexts{clusters: clusters, ch: make(chan struct{}, 1)}
	for _, c := range clusters {
		if c.Watcher != nil {
			go s.forward(ctx, c.Watcher.Changed())
		}
	}
	return s
}

// forward passes a cluster's change signals on (at most one pending).
func (s *Contexts) forward(ctx context.Context, ch <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			select {
			case s.ch <- struct{}{}:
			default:
			}
		}
	}
}

// Changed delivers at most one pending signal after any cluster's changes.
func (s *Contexts) Changed() <-chan struct{} { return s.ch }

// Snapshots are every watched cluster's, each with its cluster's Context.
func (s *Contexts) Snapshots() []engine.Snapshot {
	var out []engine.Snapshot
	for _, c := range s.clusters {
		if c.Watcher == nil {
			continue
		}
		for _, snap := range c.Watcher.Snapshots() {
			snap.Context = c.Name
			out = append(out, snap)
		}
	}
	return out
}

// TakeChanges is every watched cluster's, each with its cluster's Context
// as in Snapshots; all when one cluster must be read whole (the others' are taken too: the whole read that follows sees them).
func (s *Contexts) TakeChanges() (all bool, pools []engine.PoolChanges) {
	for _, c := range s.clusters {
		if c.Watcher == nil {
			continue
		}
		whole, changed := c.Watcher.TakeChanges()
		all = all || whole
		for _, pc := range changed {
			pc.Context = c.Name
			pools = append(pools, pc)
		}
	}
	if all {
		return true, nil
	}
	return false, pools
}

// ReadChanges reads a change from its cluster's cache.
func (s *Contexts) ReadChanges(pc engine.PoolChanges) engine.PoolUpdate {
	w := s.Watcher(pc.Context)
	if w == nil {
		// Not a cluster's: nothing of it is cached, as a Watcher reads a
		// namespace it does not watch.
		return engine.PoolUpdate{Definition: pc.Definition, Members: map[string]engine.MemberObjects{}}
	}
	pc.Context = ""
	return w.ReadChanges(pc)
}

// Synced: every watched cluster is synced or has an error (a cluster that
// does not answer never holds the others' first picture back).
func (s *Contexts) Synced() bool {
	for _, c := range s.clusters {
		if c.Watcher == nil || c.Watcher.Synced() {
			continue
		}
		if at, err := c.Watcher.LastWatchError(); err == nil || at.IsZero() {
			return false
		}
	}
	return true
}

// LastSync is the latest of the clusters'.
func (s *Contexts) LastSync() time.Time {
	var last time.Time
	for _, c := range s.clusters {
		if c.Watcher != nil && c.Watcher.LastSync().After(last) {
			last = c.Watcher.LastSync()
		}
	}
	return last
}

// LastWatchError is an error only when no cluster answers: the header then
// says disconnected; otherwise each cluster's own state is on its line.
func (s *Contexts) LastWatchError() (time.Time, error) {
	var (
		latest time.Time
		errs   []error
	)
	for _, c := range s.clusters {
		if c.Watcher == nil {
			continue
		}
		at, err := c.Watcher.LastWatchError()
		if at.IsZero() || at.Before(c.Watcher.LastSync()) {
			return time.Time{}, nil // this one is live
		}
		if at.After(latest) {
			latest = at
		}
		errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
	}
	if len(errs) == 0 {
		return time.Time{}, nil
	}
	return latest, errors.Join(errs...)
}

// Health is each cluster's, in the order given.
func (s *Contexts) Health() []ContextHealth {
	out := make([]ContextHealth, 0, len(s.clusters))
	for _, c := range s.clusters {
		h := ContextHealth{Context: c.Name, Forbidden: c.Forbidden}
		switch {
		case c.Watcher != nil:
			h.Synced, h.LastSync = c.Watcher.Synced(), c.Watcher.LastSync()
			h.ErrAt, h.Err = c.Watcher.LastWatchError()
		case c.Err != nil:
			h.ErrAt, h.Err = c.ErrAt, c.Err
		}
		out = append(out, h)
	}
	return out
}

// Watcher is the Watcher of the cluster of this context (nil: none, or
// not watched).
func (s *Contexts) Watcher(context string) *Watcher {
	for _, c := range s.clusters {
		if c.Name == context {
			return c.Watcher
		}
	}
	return nil
}
