package tui

import (
	"github.com/charmbracelet/bubbles/key"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// keyHints are the dashboard keys that the explanations and diagnoses
// name where they point at an action, taken from the key map; the zero
// keyHints names none (read-only, or no actions wired).
type keyHints struct {
	reconcile, forceRelease key.Binding
}

// hintsFrom are k's hints when actions can run, else none.
func hintsFrom(k *keyMap, canAct bool) keyHints {
	if !canAct {
		return keyHints{}
	}
	return keyHints{reconcile: firstKey(k.action("reconcile")), forceRelease: firstKey(k.action("force-release"))}
}

// firstKey is b as a hint names it: by its first key ("f force-release"
// for f/x).
func firstKey(b key.Binding) key.Binding {
	if keys := b.Keys(); len(keys) > 1 {
		b.SetHelp(keys[0], b.Help().Desc)
	}
	return b
}

// hint is " (r reconcile)": a binding's key and what it does, or "" when
// it is not enabled (or not given).
func hint(b key.Binding) string {
	if !b.Enabled() {
		return ""
	}
	h := b.Help()
	return " (" + render.JoinNonEmpty(" ", h.Key, h.Desc) + ")"
}

// engine is the hints as engine.DiagnoseWith takes them: the keys alone.
func (h keyHints) engine() engine.Hints {
	var e engine.Hints
	if h.reconcile.Enabled() {
		e.Reconcile = h.reconcile.Help().Key
	}
	return e
}
