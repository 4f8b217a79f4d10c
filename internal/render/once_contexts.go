package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The states of one context of a report or a dashboard of several
// (OnceContext).
const (
	ContextLive        = "live"
	ContextStale       = "stale"
	ContextUnreachable = "unreachable"
	ContextForbidden   = "forbidden"
)

// OnceContext is one kubeconfig context of a report of several.
type OnceContext struct {
	Context string `json:"context"`
	// Namespace is the one namespace read; AllNamespaces and Namespaces
	// when the context's pools are read in several.
	Namespace     string   `json:"namespace,omitempty"`
	AllNamespaces bool     `json:"allNamespaces,omitempty"`
	Namespaces    []string `json:"namespaces,omitempty"`
	// State is live, unreachable or forbidden; Error says why it is not
	// live.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// ContextViews is what was read of one context for a report of several:
// its pools, or the error that left it unread (State unreachable or
// forbidden).
type ContextViews struct {
	Context    string
	Namespace  string   // one namespace, unless Fleet
	Fleet      bool     // several namespaces: Namespaces (nil: all)
	Namespaces []string //
	Views      []engine.PoolView
	State      string // ContextLive, ContextUnreachable, ContextForbidden
	Err        error
}

// ReportContexts builds the JSON document of several contexts and the exit
// code, the worst of theirs: 1 when a context could not be read, else
// ExitAttention when a pool needs attention or opts.Pool names no pool in
// any context, else ExitOK. Every pool names its context and namespace.
func ReportContexts(contexts []ContextViews, opts OnceOptions) (OnceReport, int) {
	r := OnceReport{SchemaVersion: OnceSchemaVersion, ObservedAt: opts.Now, Pools: []OncePool{}, Contexts: []OnceContext{}}
	code := ExitOK
	for _, c := range contexts {
		oc := OnceContext{Context: clean(c.Context), State: c.State}
		switch {
		case !c.Fleet:
			oc.Namespace = clean(c.Namespace)
		case len(c.Namespaces) == 0:
			oc.AllNamespaces = true
		default:
			oc.Namespaces = cleanAll(c.Namespaces)
		}
		if c.Err != nil {
			oc.Error = clean(c.Err.Error())
			code = 1
		}
		r.Contexts = append(r.Contexts, oc)
		if c.Err != nil {
			continue
		}
		o := opts
		o.Fleet, o.Namespaces, o.Namespace = true, c.Namespaces, c.Namespace
		sub, subCode := Report(c.Views, o)
		// A context without opts.Pool is no attention: another may have it.
		if subCode != ExitOK && sub.Error == "" && code == ExitOK {
			code = subCode
		}
		for _, p := range sub.Pools {
			p.Context = oc.Context
			r.Pools = append(r.Pools, p)
		}
	}
	if opts.Pool != "" && len(r.Pools) == 0 {
		r.Error = fmt.Sprintf("no pool named %s in %s", opts.Pool, r.where())
		if code == ExitOK {
			code = ExitAttention
		}
	}
	return r, code
}

// RenderContexts writes the pools of several contexts once (RenderOnce's
// formats, with a CONTEXT column and each context's state) and returns
// ReportContexts' exit code.
func RenderContexts(w io.Writer, contexts []ContextViews, opts OnceOptions) int {
	r, code := ReportContexts(contexts, opts)
	return writeReport(w, r, code, opts.Format)
}

// writeContexts writes each context's state: CONTEXT, NAMESPACES, STATE,
// ERROR.
func writeContexts(w io.Writer, cs []OnceContext, wide bool) {
	rows := [][]string{{"CONTEXT", "NAMESPACES", "STATE", "ERROR"}}
	for _, c := range cs {
		ns := c.Namespace
		switch {
		case c.AllNamespaces:
			ns = "all"
		case len(c.Namespaces) > 0:
			ns = strings.Join(c.Namespaces, ",")
		}
		rows = append(rows, []string{c.Context, ns, c.State, OrWord(c.Error, "-")})
	}
	writeRows(w, rows, wide)
}
