package tui

import (
	"context"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The fleet (Options.Fleet) is the pools of several namespaces, and of
// several contexts with Options.Contexts. A pool is named by its
// engine.PoolRef (context, namespace, name) wherever the dashboard keeps
// one: the pools shown, the selection, the incremental index and action
// requests carry it, and what goes to the cluster is its parts, never a string
// parsed back. The user sees its name, namespace/name in the fleet and
// context/namespace/name with several contexts (title).
//
// What the user may do is asked per namespace in the fleet
// (Resolver.Access), the first time a pool of that namespace is selected;
// until the answer comes an action is offered and the API server decides,
// as in one namespace before the first answer.

// title is how the user sees a pool's name: its name, or its ref
// (namespace/name, context/namespace/name) in the fleet.
func (c *viewContext) title(v *engine.PoolView) string { return poolTitle(c.fleet, v) }

func poolTitle(fleet bool, v *engine.PoolView) string {
	return refTitle(fleet, v.Ref())
}

// title is how the user sees the pool with this ref (poolTitle).
func (m *Model) title(ref engine.PoolRef) string { return refTitle(m.opts.Fleet, ref) }

// refTitle is poolTitle of a ref.
func refTitle(fleet bool, ref engine.PoolRef) string {
	if fleet {
		return ref.String()
	}
	return ref.Name
}

// fleetNamespace is how the user sees a pool's namespace in the fleet:
// context/namespace with several contexts.
func fleetNamespace(v *engine.PoolView) string {
	if v.Context != "" {
		return v.Context + "/" + v.Namespace
	}
	return v.Namespace
}

// findPool returns the pool of pools with this ref, or nil.
func findPool(pools []engine.PoolView, ref engine.PoolRef) *engine.PoolView {
	for i := range pools {
		if v := &pools[i]; v.Name == ref.Name && v.Namespace == ref.Namespace && v.Context == ref.Context {
			return v
		}
	}
	return nil
}

// nsRef is the cluster and namespace of a pool (its ref without a name):
// what the user may do is asked per nsRef in the fleet.
func nsRef(ref engine.PoolRef) engine.PoolRef {
	ref.Name = ""
	return ref
}

// canAct reports whether actions can run at all (not read-only, and wired).
func (m *Model) canAct() bool { return m.reach().canAct() }

// nsCaps is what the user may do in one namespace of the fleet.
type nsCaps struct {
	caps map[engine.Action]engine.Capability // nil until known
	err  error
}

// capsFor returns what is known of the user's capabilities for the pool.
func (m *Model) capsFor(ref engine.PoolRef) (map[engine.Action]engine.Capability, error) {
	if !m.opts.Fleet {
		return m.side.caps, m.side.capsErr
	}
	c := m.side.inNS[nsRef(ref)]
	if c == nil {
		return nil, nil
	}
	return c.caps, c.err
}

// askCaps asks what the user may do in the current pool's namespace, once
// per namespace (again after an error, once the connection is back).
func (m *Model) askCaps() tea.Cmd {
	if !m.opts.Fleet || !m.reach().canAct() {
		return nil
	}
	ref := m.currentPool()
	if ref == (engine.PoolRef{}) {
		return nil
	}
	in := nsRef(ref)
	if _, asked := m.side.inNS[in]; asked || in.Namespace == "" {
		return nil
	}
	if m.side.inNS == nil {
		m.side.inNS = map[engine.PoolRef]*nsCaps{}
	}
	a := m.reach().access(in)
	if a == nil {
		return nil
	}
	m.side.inNS[in] = &nsCaps{}
	return capsCmdIn(m.ctx, a, in)
}

// capsCmdIn asks what the user may do in one namespace (nsRef) of the fleet.
func capsCmdIn(ctx context.Context, a Access, in engine.PoolRef) tea.Cmd {
	ask := capsCmd(ctx, a)
	return func() tea.Msg {
		msg := ask().(capsMsg)
		msg.in = in
		return msg
	}
}
