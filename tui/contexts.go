package tui

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// The dashboard of several contexts (Options.Contexts) merges the pools of
// several kubeconfig contexts, each its own cluster and identity. A pool
// then carries its Context, so that its ref is context/namespace/pool and
// every read and action of the pool goes through the Resolver to its own
// context and namespace; what the user may do is asked per context and
// namespace. The header gets a line with each context's own state, so that
// one context down never hides the others.

// ContextSource is a DataSource of several contexts (kube.Contexts): the
// header shows each one's state.
type ContextSource interface {
	Health() []engine.ContextHealth
}

// contextState is a context's state as the header shows it.
type contextState struct {
	context string
	word    string // live, syncing, stale 42s, unreachable, credentials refused, forbidden
	level   int
	err     string // why it is not live (its last error), as the API said it
}

// stateOf names a context's health at now: forbidden, credentials refused
// (the API server answered 401 since its last data, with that data's age
// when there is some), unreachable (an error and no data yet), stale with
// the age of its data (an error since its last data), syncing, or live.
func stateOf(h engine.ContextHealth, now time.Time) contextState {
	s := contextState{context: h.Context}
	switch {
	case h.Forbidden != nil:
		s.err = h.Forbidden.Error()
	case h.Err != nil:
		s.err = h.Err.Error()
	}
	switch {
	case h.Forbidden != nil:
		s.word, s.level = render.GlyphBad+" forbidden", levelError
	case !h.ErrAt.IsZero() && !h.ErrAt.Before(h.LastSync) && credentialsRefused(h.Err):
		// The kubeconfig's token or certificate is expired, revoked or not
		// yet rotated in: no retry mends it, unlike a network error.
		s.word, s.level = render.GlyphBad+" credentials refused", levelError
		if !h.LastSync.IsZero() {
			s.word += ", stale " + render.Duration(now.Sub(h.LastSync))
		}
	case !h.ErrAt.IsZero() && !h.ErrAt.Before(h.LastSync) && h.LastSync.IsZero():
		s.word, s.level = render.GlyphBad+" unreachable", levelError
	case !h.ErrAt.IsZero() && !h.ErrAt.Before(h.LastSync):
		s.word, s.level = render.GlyphWarn+" stale "+render.Duration(now.Sub(h.LastSync)), levelWarn
	case !h.Synced:
		s.word, s.level = render.GlyphSyncing+" syncing", levelWarn
	default:
		s.word, s.level = render.GlyphLive+" live", levelOK
	}
	return s
}

// contextsLine is the header's second line with several contexts: each
// context and its state.
func contextsLine(c viewContext) string {
	parts := make([]string, 0, len(c.contextStates))
	for _, s := range c.contextStates {
		part := sanitize.Sanitize(s.context) + " " + c.level(s.level).Render(sanitize.Sanitize(s.word))
		if !c.readOnly && slices.Contains(c.readOnlyContexts, s.context) {
			part += " " + c.st.Bold.Render("read-only (config)")
		}
		parts = append(parts, part)
	}
	return sanitize.Cut(" contexts: "+strings.Join(parts, "  "), c.width)
}

// narrowing is what the commands `:ctx NAME` and, with several contexts,
// `:ns NAME` narrow the view to, among what the dashboard watches ("":
// everything). It narrows what is shown, never what is watched: the other
// clusters' informers keep running, so `:ctx all` is instant and each
// cluster's state stays on the header.
type narrowing struct {
	context, namespace string
}

// takePools notes the namespaces of every watched pool (for the completion
// of names) and returns the pools the view is narrowed to.
func (m *Model) takePools(pools []engine.PoolView) []engine.PoolView {
	if m.seenNS == nil {
		m.seenNS = map[string]bool{}
	}
	for i := range pools {
		m.seenNS[pools[i].Namespace] = true
	}
	return m.narrowed(pools)
}

// narrowed returns those of pools that the narrowing shows (pools
// itself when nothing is narrowed).
func (m *Model) narrowed(pools []engine.PoolView) []engine.PoolView {
	n := m.narrow
	if !m.opts.Contexts || n == (narrowing{}) {
		return pools
	}
	out := make([]engine.PoolView, 0, len(pools))
	for _, v := range pools {
		if (n.context == "" || v.Context == n.context) && (n.namespace == "" || v.Namespace == n.namespace) {
			out = append(out, v)
		}
	}
	return out
}

// watchedContexts are the contexts the dashboard watches: those of the
// several contexts, else the one it was started with.
func (m *Model) watchedContexts() []string {
	if m.opts.Contexts {
		if len(m.opts.ContextNames) > 0 {
			return m.opts.ContextNames
		}
		out := make([]string, 0, len(m.feed.contexts))
		for _, h := range m.feed.contexts {
			out = append(out, h.Context)
		}
		return out
	}
	if m.opts.Context == "" {
		return nil
	}
	return []string{m.opts.Context}
}

// commandNames are the names the command line completes: the watched
// contexts, and every namespace named on the command line or seen in a
// snapshot since the start.
func (m *Model) commandNames() completionNames {
	ns := append([]string(nil), m.opts.Namespaces...)
	for n := range m.seenNS {
		ns = append(ns, n)
	}
	if !m.opts.Fleet && m.opts.Namespace != "" {
		ns = append(ns, m.opts.Namespace)
	}
	sort.Strings(ns)
	return completionNames{namespaces: slices.Compact(ns), contexts: m.watchedContexts()}
}

// narrowContext runs `:ctx NAME` ("": all): only a watched context can be
// shown (a context the dashboard was not started with is not connected).
func (m *Model) narrowContext(name string) error {
	watched := m.watchedContexts()
	if name != "" && !slices.Contains(watched, name) {
		return fmt.Errorf("context %q is not watched here (watched: %s); start with --context a,b,c or --all-contexts",
			name, strings.Join(watched, ", "))
	}
	if !m.opts.Contexts {
		m.setNote(render.GlyphOK+" showing context "+render.OrWord(m.opts.Context, "(current)")+", the only one watched", levelOK)
		return nil
	}
	m.narrow.context = name
	m.applyNarrowing()
	return nil
}

// narrowNamespace runs `:ns NAME` ("": all) with several contexts: the
// namespace must be one seen in a snapshot or named on the command line.
func (m *Model) narrowNamespace(name string) error {
	if name != "" && !m.seenNS[name] && !slices.Contains(m.opts.Namespaces, name) {
		known := m.commandNames().namespaces
		return fmt.Errorf("no pools seen in namespace %q (seen: %s)", name, strings.Join(known, ", "))
	}
	m.narrow.namespace = name
	m.applyNarrowing()
	return nil
}

// applyNarrowing shows the watched pools the view is now narrowed to; a
// screen about a pool no longer shown goes back to the pools.
func (m *Model) applyNarrowing() {
	m.pools = m.narrowed(m.feed.watched)
	m.leaveGonePool()
	ctx := m.viewCtx()
	m.table.sync(ctx)
	m.members.reload(ctx)
	m.layout()
	kctx, ns := m.where()
	m.setNote(render.GlyphOK+" showing context "+kctx+", namespace "+ns, levelOK)
}

// where is the context and namespace the header shows: the narrowing, else
// what the dashboard watches ("all (N)" contexts of several contexts).
func (m *Model) where() (kctx, ns string) {
	kctx, ns = m.opts.Context, m.opts.Namespace
	if n := len(m.watchedContexts()); m.opts.Contexts && n > 0 {
		kctx = fmt.Sprintf("all (%d)", n)
	}
	if m.narrow.context != "" {
		kctx = m.narrow.context
	}
	if m.narrow.namespace != "" {
		ns = m.narrow.namespace
	}
	return kctx, ns
}
