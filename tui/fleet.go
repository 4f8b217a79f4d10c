package tui

import (
	"context"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The fleet view (Options.Fleet) shows the pools of several namespaces. A
// pool is named by its key: its name in one namespace, namespace/pool in the
// fleet, where two namespaces may each have a pool "desk". Views, the
// selection and action requests carry the key; what goes to the cluster is
// split back into the namespace and the pool's name (splitPoolKey).
//
// What the user may do is asked per namespace in the fleet
// (Options.AccessIn), the first time a pool of that namespace is selected;
// until the answer comes an action is offered and the API server decides,
// as in one namespace before the first answer.

// key names a pool: its name, or namespace/name in the fleet.
func (c *viewContext) key(v *engine.PoolView) string { return poolKey(c.fleet, v) }

func poolKey(fleet bool, v *engine.PoolView) string {
	if fleet {
		return v.Namespace + "/" + v.Name
	}
	return v.Name
}

// findPool returns the pool of views with this key, or nil.
func findPool(views []engine.PoolView, fleet bool, key string) *engine.PoolView {
	ns, name := "", key
	if fleet {
		ns, name = splitPoolKey(key)
	}
	for i := range views {
		if v := &views[i]; v.Name == name && (!fleet || v.Namespace == ns) {
			return v
		}
	}
	return nil
}

// splitPoolKey splits a fleet key into the namespace and the pool's name
// at its last "/" (a pool name has none; the namespace of a fleet of
// clusters is context/namespace, and a context name may hold "/"); a key
// without one is a name in the dashboard's
// namespace (ns "").
func splitPoolKey(key string) (ns, name string) {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// poolName is the pool's name in its namespace.
func poolName(key string) string {
	_, name := splitPoolKey(key)
	return name
}

// canAct reports whether actions can run at all (not read-only, and wired).
func (m *Model) canAct() bool {
	return !m.opts.ReadOnly && (m.opts.Actions != nil || m.opts.ActionsIn != nil)
}

// actionsFor returns the operations for the pool with this key and the
// pool's name in its namespace.
func (m *Model) actionsFor(key string) (Actions, string) {
	ns, name := splitPoolKey(key)
	if m.opts.Fleet && m.opts.ActionsIn != nil {
		return m.opts.ActionsIn(ns), name
	}
	return m.opts.Actions, name
}

// currentPool is the key of the pool the screen is about ("" for none).
func (m *Model) currentPool() string {
	switch m.screen {
	case screenPools:
		return m.pools.selected
	case screenMembers:
		return m.members.pool
	case screenDetail:
		return m.detail.pool
	case screenLogs:
		return m.logs.pool
	}
	return ""
}

// nsCaps is what the user may do in one namespace of the fleet.
type nsCaps struct {
	caps map[engine.Action]engine.Capability // nil until known
	err  error
}

// capsFor returns what is known of the user's capabilities for the pool
// with this key.
func (m *Model) capsFor(key string) (map[engine.Action]engine.Capability, error) {
	if !m.opts.Fleet {
		return m.side.caps, m.side.capsErr
	}
	c := m.side.inNS[m.namespaceOf(key)]
	if c == nil {
		return nil, nil
	}
	return c.caps, c.err
}

// askCaps asks what the user may do in the current pool's namespace, once
// per namespace (again after an error, once the connection is back).
func (m *Model) askCaps() tea.Cmd {
	if !m.opts.Fleet || m.opts.AccessIn == nil || m.opts.ReadOnly {
		return nil
	}
	key := m.currentPool()
	if key == "" {
		return nil
	}
	ns := m.namespaceOf(key)
	if _, asked := m.side.inNS[ns]; asked || ns == "" {
		return nil
	}
	if m.side.inNS == nil {
		m.side.inNS = map[string]*nsCaps{}
	}
	m.side.inNS[ns] = &nsCaps{}
	return capsCmdIn(m.ctx, m.opts.AccessIn(ns), ns)
}

// capsCmdIn asks what the user may do in namespace ns.
func capsCmdIn(ctx context.Context, a Access, ns string) tea.Cmd {
	ask := capsCmd(ctx, a)
	return func() tea.Msg {
		msg := ask().(capsMsg)
		msg.namespace = ns
		return msg
	}
}
