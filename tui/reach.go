package tui

import (
	"context"
	"slices"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// reach is how the dashboard reaches a pool's cluster: Options.Resolver,
// asked with the pool's context and namespace (the dashboard's namespace
// for a pool that names none), with nothing that writes in read-only mode.
// The root builds it from its options; views get it in their context for
// the reads they start themselves (a member's Events, the audit trail).
type reach struct {
	// ctx is the program's: every read and action ends with it.
	ctx      context.Context
	res      Resolver // nil: nothing wired
	readOnly bool
	// readOnlyIn are the contexts the settings make read-only
	// (Options.ReadOnlyContexts): nothing that writes is asked there.
	readOnlyIn []string
	fleet      bool
	namespace  string // the dashboard's, in one namespace
}

// reach is how the dashboard reaches its pools' clusters now.
func (m *Model) reach() reach {
	return reach{ctx: m.ctx, res: m.opts.Resolver, readOnly: m.opts.ReadOnly, readOnlyIn: m.opts.ReadOnlyContexts, fleet: m.opts.Fleet, namespace: m.opts.Namespace}
}

// namespaceOf is the namespace of the pool (the dashboard's when unknown).
func (r reach) namespaceOf(pool engine.PoolRef) string {
	if r.fleet || pool.Namespace != "" {
		return pool.Namespace
	}
	return r.namespace
}

// events is where the pool's Events are read (nil: nowhere).
func (r reach) events(pool engine.PoolRef) EventSource {
	if r.res == nil {
		return nil
	}
	return r.res.Events(pool.Context)
}

// logs is where the pool's member logs are streamed from (nil: nowhere).
func (r reach) logs(pool engine.PoolRef) LogSource {
	if r.res == nil {
		return nil
	}
	return r.res.Logs(pool.Context)
}

// readOnlyAt reports whether nothing may write where the pool is: the
// dashboard is read-only, or the pool's context is.
func (r reach) readOnlyAt(pool engine.PoolRef) bool {
	return r.readOnly || slices.Contains(r.readOnlyIn, pool.Context)
}

// console runs the pool's members' consoles (nil: no console).
func (r reach) console(pool engine.PoolRef) ConsoleRunner {
	if r.res == nil || r.readOnlyAt(pool) {
		return nil
	}
	return r.res.Console(pool.Context)
}

// actions returns the operations for the pool (nil: none) and the pool's
// name in its namespace.
func (r reach) actions(pool engine.PoolRef) (Actions, string) {
	if r.res == nil || r.readOnlyAt(pool) {
		return nil, pool.Name
	}
	return r.res.Actions(pool.Context, r.namespaceOf(pool)), pool.Name
}

// access asks what the user may do where the pool is (nil: not asked).
func (r reach) access(pool engine.PoolRef) Access {
	if r.res == nil || r.readOnlyAt(pool) {
		return nil
	}
	return r.res.Access(pool.Context, r.namespaceOf(pool))
}

// canAct reports whether actions can run at all (not read-only, and wired).
func (r reach) canAct() bool { return !r.readOnly && r.res != nil }
