// Package tui is the ctpool-tui dashboard: a bubbletea program over the
// engine's observed pools (pools, a pool's members, a member's details and logs,
// dialogs, the action log, the wall display). cmd/ctpool-tui wires it with
// Options (api.go) and calls Run. The rows' words and the headless --once
// report are internal/render's, shared by both.
//
// Where to start reading:
//
//   - model.go: the root Model (Init, Update, View); route.go sends keys
//     and intents to the view on screen. feed.go is its data feed: change
//     signals coalesced into loads (data.go reads them), the watched pools
//     and the connection's health.
//   - fleet.go: a pool is its engine.PoolRef wherever the dashboard keeps
//     one; the user sees it as name, namespace/name or context/namespace/name.
//   - keys.go: every key binding and the help lines; access.go pairs the
//     action keys with the engine's actions for the permission check.
//   - members.go: the members view and the drawing of its table rows;
//     member_rows.go: its columns, cells and sort, over render.MemberRow.
//   - actions.go: the action keys, the requests they build and actionCmd,
//     which calls the engine through the Actions interface; dialog.go and
//     claim.go are the confirmations and the claim dialog.
//
// Cluster text passes through internal/sanitize before it is measured or drawn.
// Update does no I/O and never reads the clock: reads and actions run in
// Cmds, and their results and the time arrive as messages.
package tui
