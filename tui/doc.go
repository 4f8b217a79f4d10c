// Package tui is the ctpool-tui dashboard: a bubbletea program over the
// engine's observed pools (pools, a pool's members, a member's details and logs,
// dialogs, the action log, the wall display). cmd/ctpool-tui wires it with
// Options (api.go) and calls Run; Options.Resolver reaches each pool's
// cluster (reach.go). The rows' words and the headless --once report are
// internal/render's, shared by both.
//
// Where to start reading:
//
//   - model.go: the root Model (Init, Update, View); route.go is the only
//     place that knows which screen is shown: it sends keys, messages and
//     intents to that view and asks it the rest (view.go: component).
//     feed.go is the data feed: change signals coalesced into loads
//     (data.go reads them), the watched pools and the connection's health.
//   - fleet.go: a pool is its engine.PoolRef wherever the dashboard keeps
//     one; the user sees it as name, namespace/name or context/namespace/name.
//   - actions.go: every action, described once (its key, help, checks,
//     dialog and engine call); action.go derives the key handling and runs
//     them, access.go checks their permissions, dialog.go draws their
//     dialog steps. keys.go: the other key bindings; keynames.go: the
//     bindings the settings file may rebind (KeyNames, Options.Keys);
//     clipboard.go: y and Y (Options.Clipboard).
//   - members.go: the members view and the drawing of its table rows;
//     member_rows.go: its columns, cells and sort, over render.MemberRow.
//
// Words: a context is a kubeconfig context (one API server); a fleet is the
// several namespaces the dashboard watches (Options.Fleet: -A, --namespaces,
// or several contexts, whose namespaces all join it); a hold is a member's
// Lease that is no user's claim (engine.Hold: maintenance or unheld).
//
// Cluster text passes through internal/sanitize before it is measured or drawn.
// Update does no I/O and never reads the clock: reads and actions run in
// Cmds, and their results and the time arrive as messages.
package tui
