package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Contexts merges the Watchers of several kubeconfig contexts (each its own
// cluster and identity) into one source of pools for the dashboard of
// several contexts (--context a,b,c, --all-contexts): their snapshots and
// changes, their sync state, and each context's health for the header. A context that does
// not answer never holds the others back; one that is not watched (its
// identity may not list the pools, or it could not be connected) is only
// reported.
type Contexts struct {
	contexts []WatchedContext
	ch       chan struct{}
}

// WatchedContext is one context of Contexts: its Watcher, or why it is
// not watched.
type WatchedContext struct {
	// Name is the kubeconfig context.
	Name string
	// Watcher reads its pools (nil: not watched).
	Watcher *Watcher
	// Forbidden: its identity may not list the pools; nothing is read.
	Forbidden error
	// Err and ErrAt: why it could not be connected (Watcher nil).
	Err   error
	ErrAt time.Time
}

// NewContexts merges the contexts' Watchers (started by the caller) and
// passes their change signals on until ctx ends.
func NewContexts(ctx context.Context, contexts []WatchedContext) *Contexts {
	s := &Contexts{contexts: contexts, ch: make(chan struct{}, 1)}
	for _, c := range contexts {
		if c.Watcher != nil {
			go s.forward(ctx, c.Watcher.Changed())
		}
	}
	return s
}

// forward passes a context's change signals on (at most one pending).
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

// Changed delivers at most one pending signal after any context's changes.
func (s *Contexts) Changed() <-chan struct{} { return s.ch }

// Snapshots are every watched context's, each with its Context.
func (s *Contexts) Snapshots() []engine.Snapshot {
	var out []engine.Snapshot
	for _, c := range s.contexts {
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

// TakeChanges is every watched context's, each with its Context as in
// Snapshots; all when one context must be read whole (the others' are taken too: the whole read that follows sees them).
func (s *Contexts) TakeChanges() (all bool, pools []engine.PoolChanges) {
	for _, c := range s.contexts {
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

// ReadChanges reads a change from its context's cache.
func (s *Contexts) ReadChanges(pc engine.PoolChanges) engine.PoolUpdate {
	w := s.Watcher(pc.Context)
	if w == nil {
		// Not a context's: nothing of it is cached, as a Watcher reads a
		// namespace it does not watch.
		return engine.PoolUpdate{Definition: pc.Definition, Members: map[string]engine.MemberObjects{}}
	}
	pc.Context = ""
	return w.ReadChanges(pc)
}

// Synced: every watched context is synced or has an error (a context that
// does not answer never holds the others' first picture back).
func (s *Contexts) Synced() bool {
	for _, c := range s.contexts {
		if c.Watcher == nil || c.Watcher.Synced() {
			continue
		}
		if at, err := c.Watcher.LastWatchError(); err == nil || at.IsZero() {
			return false
		}
	}
	return true
}

// LastSync is the latest of the contexts'.
func (s *Contexts) LastSync() time.Time {
	var last time.Time
	for _, c := range s.contexts {
		if c.Watcher != nil && c.Watcher.LastSync().After(last) {
			last = c.Watcher.LastSync()
		}
	}
	return last
}

// LastWatchError is an error only when no context answers: the header then
// says disconnected; otherwise each context's own state is on its line.
func (s *Contexts) LastWatchError() (time.Time, error) {
	var (
		latest time.Time
		errs   []error
	)
	for _, c := range s.contexts {
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

// Health is each context's, in the order given (tui.ContextSource).
func (s *Contexts) Health() []engine.ContextHealth {
	out := make([]engine.ContextHealth, 0, len(s.contexts))
	for _, c := range s.contexts {
		h := engine.ContextHealth{Context: c.Name, Forbidden: c.Forbidden}
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

// Watcher is the Watcher of this context (nil: none, or
// not watched).
func (s *Contexts) Watcher(context string) *Watcher {
	for _, c := range s.contexts {
		if c.Name == context {
			return c.Watcher
		}
	}
	return nil
}
