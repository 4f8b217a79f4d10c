// Package tui is the ctpool-tui dashboard: bubbletea models for the pools
// view (home), a pool's members, a member's details, confirmation dialogs,
// the action log and the wall display. The headless --once renderer is
// internal/render's.
//
// # API for cmd/ctpool-tui
//
// Options wires the dashboard (see the type for its fields; only Data is
// required).
//
//	func New(opts Options) tea.Model
//	func Run(ctx context.Context, opts Options) error
//	func render.RenderOnce(w io.Writer, views []engine.PoolView, opts render.OnceOptions) int
//
// Typical wiring:
//
//	w := kube.NewWatcher(client, namespace)
//	err := tui.Run(ctx, tui.Options{Context: ctxName, Namespace: namespace, ReadOnly: ro,
//		Theme: theme, NoColor: noColor, Data: w, Actions: eng, Events: &kube.Events{Client: client}})
//
// Run starts Data when it has a Start(context.Context) error method (a
// second Start is harmless, so cmd may start the Watcher itself) and runs in
// the alternate screen until q, ctrl+c or the end of ctx. klog must not
// write into the terminal the dashboard owns: cmd routes it into its own
// logger before anything logs.
//
// render.RenderOnce writes a table, or with OnceOptions.Format "json" the
// OnceReport document (schemaVersion 1), without colour, and returns 0 when
// every pool has a free member and no recorded errors or problems, 3
// otherwise (also when OnceOptions.Pool names no pool). Exit codes 1 (the
// cluster could not be read) and 2 (usage) are the caller's.
//
// # How it works
//
// Each view is a component with its own state, an update method for its
// keys and answers and a view method for its drawing, over a viewContext
// (styles, this frame's clock reading, size, the snapshot, nodes, options):
// pools.go, members.go, detail.go, logs_view.go, audit.go, actionlog.go,
// wall.go, dialog.go. The pools and members views share list.go (cursor,
// scroll, page keys, filter); every binding is in keys.go. The root model
// (model.go, route.go) owns the data and the overlays, routes messages, and
// does what a view's intent asks (open another view, run an action).
//
// Every piece of cluster-provided text passes through tui/sanitize before it
// is measured or rendered. Update never does I/O and never reads the clock:
// time arrives in a tick every second; change signals arrive through a Cmd
// that blocks on DataSource.Changed and is re-armed once per rebuild, and
// rebuilds (engine.ObserveAll over DataSource.Snapshots, in a Cmd) are at
// most one per 100 ms, so a storm of events costs a bounded number of
// rebuilds and renders. From a ChangeSource (kube.Watcher: it records which
// members' objects changed; the dashboard of several clusters merges its
// Watchers' changes) a rebuild's Cmd reads only those objects, and
// Update applies them by difference (engine.PoolState re-observes those
// members; the member list redoes only their rows), so that a change costs
// the same in a pool of 10,000 as in one of 1,000; a change of a pool's
// shape makes the next rebuild a whole one. Sorting and filtering happen
// when the data, the filter or the sort changes; View renders only the
// visible rows, and the selection follows the member's name. Actions and Event reads are Cmds that
// copy what they need; results come back as typed messages (actionDoneMsg,
// eventsMsg) and show in the status line and the action log (L).
//
// Console (c) hands the terminal to an in-process exec session
// (tea.Exec with a tea.ExecCommand that calls ConsoleRunner) and returns to
// the same view and selection when the shell exits; the session is logged
// like an action. Logs (l) stream in a Cmd that re-arms on a channel fed by
// a reader goroutine, into a ring of at most 5,000 lines or 2 MiB of
// sanitised text; leaving the view cancels the stream. Assign (a) claims a
// free member for a typed identity through Actions.Claim. Members whose
// backend serves no exec or logs (sandboxd) show both keys as unavailable.
//
// Members that are not Ready and fine carry engine.Diagnose's reason in the
// table's MESSAGE column (and in --once, as diagnosis {reason, fix}); the
// detail pane adds the fix, the evidence (the scheduler's or provider's
// words, from the Pod's and PVC's Events) and the sandboxd claim-id. Nodes
// are listed once at start; a Forbidden list means "not readable".
//
// At start (not in read-only mode) an Access Cmd asks the API server which
// of ActionNames the user may run. An unavailable action is marked ✗ in the
// help line and the help overlay (with the missing permission), and its key
// shows the reason in the status line instead of opening a dialog. Each tick
// also re-reads the data source's LastSync and LastWatchError (in a Cmd,
// without rebuilding the views), so the header's "synced Ns ago" and
// "disconnected · data N s old" stay true in a quiet namespace; while
// disconnected every action is refused with "API server unreachable". A on
// the members view lists the pool's recent audit Events (those on the pool
// ConfigMap marked ctpool.dev/audit-action or reported by ctpool-tui).
//
// Status is never told by colour alone: every marker has a glyph or a word
// (● live, ✗ expired, ⚠ EXHAUSTED, ⟳ drift, ⚙ maintenance, ↑ above size).
package tui
