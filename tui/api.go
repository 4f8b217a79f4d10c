package tui

import (
	"context"
	"errors"
	"io"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// DataSource is where the dashboard reads the pools from. *kube.Watcher
// satisfies it: Changed delivers at most one pending signal after any number
// of changes, and Snapshots reads the informer caches.
type DataSource interface {
	Changed() <-chan struct{}
	Snapshots() []engine.Snapshot
	// Synced reports whether the caches finished their first list.
	Synced() bool
	// LastSync is when an object last arrived from the API server.
	LastSync() time.Time
	// LastWatchError is the last list or watch error and its time (zero: none).
	LastWatchError() (time.Time, error)
}

// Actions are the pool operations the dashboard can run. *engine.Engine
// satisfies it. In read-only mode it is never asked for.
type Actions interface {
	Reconcile(ctx context.Context, pool string) (engine.ReconcileResult, error)
	// ForceRelease ends a claim whoever holds it (administrators: the
	// dashboard is never a claim's holder).
	ForceRelease(ctx context.Context, pool, member string) (engine.ReleaseResult, error)
	Resize(ctx context.Context, pool string, size int) (engine.ReconcileResult, error)
	Delete(ctx context.Context, pool string) (engine.DeleteResult, error)
	// Claim gives a free member of pool to identity, or renews identity's
	// expired claim (the action table's claim and renew).
	Claim(ctx context.Context, pool, identity string) (engine.ClaimResult, error)
	// ResumeRollout resumes a pool's halted rollout and reconciles once.
	ResumeRollout(ctx context.Context, pool string) (engine.ReconcileResult, error)
}

// ConsoleRunner runs an interactive shell in a member's desktop container on
// the terminal the dashboard hands over (the console action). *kube.Exec satisfies it
// with its Interactive method wrapped by cmd; a non-zero exit of the shell
// comes back as an error with an ExitStatus() int method.
type ConsoleRunner interface {
	Console(ctx context.Context, namespace, pod string, stdin io.Reader, stdout, stderr io.Writer) error
}

// LogSource streams a member's desktop container log (the logs action): followed, or
// the previous container's when previous is set. *kube.Logs satisfies it.
type LogSource interface {
	Stream(ctx context.Context, namespace, pod string, previous bool) (io.ReadCloser, error)
}

// EventSource reads the Events of one object, newest first. *kube.Events
// satisfies it. It is called asynchronously when a detail pane opens.
type EventSource interface {
	Events(ctx context.Context, namespace, kind, name string) ([]corev1.Event, error)
}

// NodeSource lists the cluster's nodes for the diagnosis (optional). It
// returns nil and no error when the user may not read nodes (then it is not
// asked again); an empty readable list is a non-nil empty slice.
type NodeSource interface {
	Nodes(ctx context.Context) ([]*corev1.Node, error)
}

// Access asks the API server what the user may do (optional). It is called
// asynchronously (Resolver.Access says when), and again after an outage,
// with ActionNames.
type Access interface {
	Capabilities(ctx context.Context, actions []engine.Action) ([]engine.Capability, error)
}

// ActionNames are the engine actions the dashboard offers, each once: the
// kinds of its action table, whose permissions it asks about.
var ActionNames = tableKinds()

var _ Actions = (*engine.Engine)(nil)

// Resolver reaches the cluster of a pool: for the pool's kubeconfig context
// ("" in one cluster) and namespace, the operations the dashboard runs there
// and what it reads. cmd/ctpool-tui implements it for one namespace, the
// fleet and several contexts. A method returns nil for what is not wired
// there (no Events reader, no console); read-only mode never asks for
// Actions, Access or Console.
type Resolver interface {
	// Actions runs the pool operations of a namespace.
	Actions(context, namespace string) Actions
	// Access reports what the user may do in a namespace: asked at start in
	// one namespace, else the first time a pool of the namespace is selected.
	Access(context, namespace string) Access
	// Events reads Pod, PVC and ConfigMap Events (the detail pane, the audit
	// trail).
	Events(context string) EventSource
	// Logs streams member logs (a read, so offered in read-only mode too).
	Logs(context string) LogSource
	// Console opens a terminal in a member (exec is a write).
	Console(context string) ConsoleRunner
}

// Options wire the dashboard. Only Data is required.
type Options struct {
	// Context and Namespace are shown in the header (with Fleet, Namespace
	// names the namespaces shown, e.g. "all").
	Context, Namespace string
	// Fleet: the pools come from several namespaces (every Snapshot carries
	// its namespace). The pools view gets a NAMESPACE column, a pool is named
	// namespace/pool, and the actions, Events, logs and console of a pool go
	// to its own namespace.
	Fleet bool
	// Contexts: the pools come from several kubeconfig contexts (with
	// Fleet): a Snapshot carries its Context, and Data may report each
	// context's health (ContextSource) for a header line of their states.
	// The pools view gets a CONTEXT column, and every read and action of a
	// pool goes to its context.
	Contexts bool
	// ContextNames are the contexts of a dashboard of several contexts, for
	// `:ctx NAME` and its completion (default: those Data reports as
	// ContextSource).
	ContextNames []string
	// Namespaces are offered by the command line's completion besides the
	// namespaces seen (--namespaces a,b,c).
	Namespaces []string
	// ReadOnly is the wall-display mode: no action key is bound and no
	// action, capability question or console is asked of Resolver.
	ReadOnly bool
	// ReadOnlyWhy says where read-only mode comes from when it is not
	// --readonly ("config: context prod"); the header shows it.
	ReadOnlyWhy string
	// ReadOnlyContexts are the contexts of a dashboard of several contexts
	// that the settings make read-only while the others are not: no action,
	// capability question or console is asked of Resolver for their pools,
	// and their action keys refuse, naming the context (their clients refuse
	// every write too: cmd/ctpool-tui builds them read-only).
	ReadOnlyContexts []string
	// Keys rebind keys: a KeyNames name to its keys (checked by the caller;
	// unknown names are ignored). The help and the help lines show them.
	Keys map[string][]string
	// Wall is the wall display's layout (zero: automatic).
	Wall WallLayout
	// Theme defaults to themes.Auto(), the adaptive theme.
	Theme themes.Theme
	// NoColor renders without any colour or attribute (NO_COLOR, dumb terminals).
	NoColor bool
	// ASCII draws in plain ASCII, for terminals without Unicode (a dumb
	// terminal, a locale that is not UTF-8) and screen readers (--ascii):
	// the trend sparklines with ASCII levels ("_.:-=+*#"), a spinner
	// without braille, and every other glyph and box line by an ASCII
	// stand-in of the same width (render.ASCII).
	ASCII bool
	// Now is the clock (default time.Now). The model never reads it in
	// Update: it arrives in tick messages.
	Now func() time.Time
	// Data is the source of pool snapshots.
	Data DataSource
	// Resolver reaches each pool's cluster: its actions, what the user may
	// do there, its Events, logs and console (optional: without it nothing
	// runs and only the pools are shown).
	Resolver Resolver
	// Nodes lists nodes for the diagnosis (optional).
	Nodes NodeSource
	// Demo marks the header as a simulated cluster.
	Demo bool
	// Scoper switches the namespaces shown (`:ns NAME`, `:ns all`;
	// optional: without it, and unless Contexts, there is no command line;
	// with several contexts `:ns` and `:ctx` narrow what is shown).
	Scoper Scoper
	// StopData stops Data's informers when a switch replaces it (optional).
	StopData func()
	// Clipboard puts text on the user's clipboard (y, Y: a member's name,
	// its console command, a pool's --once line); cmd/ctpool-tui writes
	// OSC 52 to the terminal. Optional: without it, y and Y say so.
	Clipboard func(text string) error
	// Renderer overrides the lipgloss renderer (tests pin an ASCII one).
	Renderer *lipgloss.Renderer
	// ActionTimeout bounds one action (default 10 minutes: a release waits
	// up to 2 minutes for each deleted object).
	ActionTimeout time.Duration
}

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Theme.Name == "" {
		o.Theme = themes.Auto()
	}
	if o.ActionTimeout <= 0 {
		o.ActionTimeout = 10 * time.Minute
	}
	if o.Renderer == nil && o.NoColor {
		o.Renderer = themes.NoColorRenderer(io.Discard)
	}
}

// New returns the root model of the dashboard.
func New(opts Options) tea.Model { return newModel(context.Background(), opts) }

// starter is implemented by data sources that must be started (kube.Watcher).
type starter interface {
	Start(ctx context.Context) error
}

// Run starts opts.Data when it has a Start(ctx) error method and has not
// been started, and runs the dashboard in the alternate screen until the user
// quits or ctx ends. klog must not write into the terminal the dashboard
// owns: the caller routes it away first (cmd/ctpool-tui does, into its
// logger).
func Run(ctx context.Context, opts Options) error {
	if opts.Data == nil {
		return errors.New("tui: no data source")
	}
	if s, ok := opts.Data.(starter); ok {
		// A second Start reports an error and changes nothing: cmd may start it first.
		_ = s.Start(ctx)
	}
	m := newModel(ctx, opts)
	// Ask the terminal for its background now, before bubbletea reads the
	// input: adaptive colours would otherwise query it mid-program.
	m.st.Renderer.HasDarkBackground()
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx))
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}
