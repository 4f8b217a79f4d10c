// Package tui is the ctpool-tui dashboard: bubbletea models for the pools
// view, a pool's members, a member's details, confirmation dialogs, a log of
// actions, the read-only wall display, and the headless --once renderer.
//
// Wiring (cmd/ctpool-tui calls exactly this):
//
//	w := kube.NewWatcher(client, namespace)           // a tui.DataSource
//	err := tui.Run(ctx, tui.Options{
//		Context: ctxName, Namespace: namespace,
//		ReadOnly: readonly, Theme: theme, NoColor: noColor,
//		Data: w, Actions: eng, Events: &kube.Events{Client: client},
//	})
//
//	code := tui.RenderOnce(os.Stdout, engine.ObserveAll(snaps, now), tui.OnceOptions{...})
//
// Run silences klog, starts the Watcher (a second Start is harmless), and
// runs in the alternate screen. *engine.Engine satisfies Actions; *kube.Events
// satisfies EventSource; *kube.Watcher satisfies DataSource. In read-only mode
// Actions is dropped: no action key is bound and nothing can write.
//
// Every piece of cluster-provided text is passed through tui/sanitize before
// it is measured or rendered. Update never does I/O and never reads the
// clock: time arrives in a tick every second, change signals arrive through a
// Cmd that blocks on DataSource.Changed and re-arms itself, and rebuilds are
// coalesced to at most one per 100 ms. Actions and event reads are Cmds whose
// results come back as typed messages.
package tui
