package tui

import (
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// viewContext is what every view reads to handle a key and to draw, as
// gh-dash passes its ProgramContext: the root builds it for each message
// and each frame. Views keep their own state and read the root's data only
// through it.
type viewContext struct {
	st   *themes.Styles
	keys *keyMap
	// now is this frame's clock reading (from the last tick).
	now time.Time
	// width and height are the body's size (the whole screen for the wall).
	width, height int

	// The snapshot: every observed pool, and whether one has arrived.
	pools  []engine.PoolView
	loaded bool
	// nodes are the cluster's nodes for the diagnosis (nil: unknown).
	nodes []*corev1.Node

	// The connection as the header shows it (health.connState), and when the
	// data was last known good.
	conn      string
	connLevel int
	dataAt    time.Time

	// The dashboard's options as views show them.
	kubeContext, namespace string
	readOnly, demo         bool
	// readOnlyWhy: where read-only mode comes from (Options.ReadOnlyWhy);
	// readOnlyContexts: the contexts the settings make read-only in a
	// dashboard of several contexts that is not (Options.ReadOnlyContexts).
	readOnlyWhy      string
	readOnlyContexts []string
	// wall is the wall display's layout (Options.Wall).
	wall WallLayout
	// fleet: pools of several namespaces, each seen as namespace/pool
	// (title).
	fleet bool
	// contexts: pools of several contexts, each pool carrying its
	// Context; contextStates is each one's state for the header.
	contexts      bool
	contextStates []contextState
	// hints: the keys that explanations and diagnoses name (none when
	// actions cannot run).
	hints keyHints
	// reach is how a view reaches a pool's cluster for the reads it starts
	// itself (a member's Events, the audit trail, a log).
	reach reach
	// live: each pool's counts as the dashboard saw them (feed.live), merged
	// over its recorded history by trend.
	live      map[engine.PoolRef]engine.History
	liveTrend bool
	// trends keeps the trends drawn while trendGen (feed.trendGen) and
	// the clock's slot stay (nil: draw them at every frame).
	trends   *trendCache
	trendGen int
	// ascii: draw sparklines with ASCII levels (Options.ASCII).
	ascii bool
}

// pool returns the pool of the snapshot with this ref, or nil.
func (c *viewContext) pool(ref engine.PoolRef) *engine.PoolView { return findPool(c.pools, ref) }

// level maps a level onto a style.
func (c *viewContext) level(level int) lipgloss.Style {
	switch level {
	case levelOK:
		return c.st.OK
	case levelInfo:
		return c.st.Info
	case levelWarn:
		return c.st.Warn
	case levelError:
		return c.st.Error
	}
	return c.st.Text
}

// component is a view: it handles the messages the root routes to it (its
// keys, and the answers to its own reads), draws itself, and answers what
// the root asks of it, so that the root routes without knowing its fields.
// What it asks of the root comes back as an intent.
type component interface {
	update(ctx viewContext, msg tea.Msg) (intent, tea.Cmd)
	view(ctx viewContext) string
	// capturing reports whether it takes typed text now (a filter, a
	// search): then every key but ctrl+c is its own.
	capturing() bool
	// about is the pool it is about and its selected member (zero and nil:
	// none): what an action key acts on, and where permissions are asked.
	about(ctx viewContext) (engine.PoolRef, *engine.Member)
	// help is its short help line.
	help(ctx viewContext) []key.Binding
}

// Views may also answer these (the root probes for them).
type (
	// refresher reads again what it shows when the data or the clock moved
	// (the detail pane's Events); asked of the view on screen.
	refresher interface{ refresh(ctx viewContext) tea.Cmd }
	// fullScreen: it draws the whole screen, header included (the wall).
	fullScreen interface{ fullScreen() }
)

// A view's update returns what it asks of the root, which owns the screens,
// the overlays and the actions: one of the intents below, or nil.
type intent interface{ isIntent() }

type (
	// showScreen: show another screen as it was left.
	showScreen struct{ screen screen }
	// openPool: show a pool's members.
	openPool struct{ pool engine.PoolRef }
	// openMember: show a member's details.
	openMember struct {
		pool   engine.PoolRef
		member string
	}
	// actionKey: a key the view does not handle, maybe an action on the
	// pool (and the member when set).
	actionKey struct {
		msg    tea.KeyMsg
		pool   engine.PoolRef
		member *engine.Member
	}
	// dialogDone: the dialog closed; run req when confirmed.
	dialogDone struct {
		req       actionRequest
		confirmed bool
	}
)

func (showScreen) isIntent() {}
func (openPool) isIntent()   {}
func (openMember) isIntent() {}
func (actionKey) isIntent()  {}
func (dialogDone) isIntent() {}
