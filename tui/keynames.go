package tui

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// Key groups: the keys that are live at the same time. A key may mean one
// thing on the screens and another in the log view (f force-release, f
// follow), but never two things within one group.
const (
	// KeyGroupScreens: the pools, members, details and wall screens.
	KeyGroupScreens = "screens"
	// KeyGroupLogs: the log view.
	KeyGroupLogs = "logs"
)

// KeyName is a binding the settings may rebind (Options.Keys): an action of
// the action table (named as in the help, a space written as a dash:
// "force-release", "resume-rollout") or one of the views' keys ("up",
// "filter", "follow").
type KeyName struct {
	Name string
	// Keys are its keys by default, as bubbletea names them ("x",
	// "ctrl+r", "pgdown").
	Keys []string
	// Groups are where its keys are live (KeyGroupScreens, KeyGroupLogs):
	// within one group no two bindings share a key.
	Groups []string
	// Fixed: it cannot be rebound (ctrl+c); it is listed so that no other
	// binding takes its key.
	Fixed bool
}

// keySetting is how the settings name an action.
func keySetting(a *action) string { return strings.ReplaceAll(a.name, " ", "-") }

// namedKeys are the views' bindings the settings may rebind, by name, in
// the order KeyNames lists them.
func (k *keyMap) namedKeys() []struct {
	name   string
	b      *key.Binding
	groups []string
} {
	both := []string{KeyGroupScreens, KeyGroupLogs}
	screens := []string{KeyGroupScreens}
	logs := []string{KeyGroupLogs}
	return []struct {
		name   string
		b      *key.Binding
		groups []string
	}{
		{"up", &k.Up, both}, {"down", &k.Down, both}, {"page-up", &k.PageUp, both}, {"page-down", &k.PageDown, both},
		{"top", &k.Top, both}, {"bottom", &k.Bottom, both}, {"open", &k.Open, screens}, {"back", &k.Back, both},
		{"filter", &k.Filter, screens}, {"sort", &k.Sort, screens}, {"wall", &k.Wall, screens},
		{"action-log", &k.Log, both}, {"audit", &k.Audit, screens}, {"command", &k.Command, both},
		{"copy", &k.Copy, screens}, {"copy-console", &k.CopyConsole, screens},
		{"help", &k.Help, both}, {"quit", &k.Quit, both},
		{"follow", &k.Follow, logs}, {"previous", &k.Previous, logs}, {"wrap", &k.Wrap, logs},
		{"search", &k.Search, logs}, {"next-match", &k.NextMatch, logs}, {"prev-match", &k.PrevMatch, logs},
	}
}

// KeyNames lists every binding the settings may rebind, with its default
// keys and groups: the action table's actions first, in the help's order,
// then the views' keys; ctrl+c (interrupt) last, fixed.
func KeyNames() []KeyName {
	k := newKeyMap(false, nil)
	var out []KeyName
	for _, ab := range k.actions {
		out = append(out, KeyName{Name: keySetting(ab.act), Keys: ab.b.Keys(), Groups: []string{KeyGroupScreens}})
	}
	for _, n := range k.namedKeys() {
		out = append(out, KeyName{Name: n.name, Keys: n.b.Keys(), Groups: n.groups})
	}
	return append(out, KeyName{Name: "interrupt", Keys: k.Interrupt.Keys(), Groups: []string{KeyGroupScreens, KeyGroupLogs}, Fixed: true})
}

// ValidKey reports whether s is a key as bubbletea names the keys it reads:
// one printable character ("x", "R", "/"), or a named key ("enter",
// "ctrl+r", "f5", "pgdown", "space"), either with "alt+" before it.
func ValidKey(s string) bool {
	s = strings.TrimPrefix(s, "alt+")
	if s == "space" {
		return true
	}
	if r, size := utf8.DecodeRuneInString(s); size == len(s) && r != utf8.RuneError && unicode.IsPrint(r) && r != ' ' {
		return true
	}
	_, ok := keyTypeNames()[s]
	return ok
}

// keyTypeNames are bubbletea's names of the keys that are no character.
func keyTypeNames() map[string]bool {
	names := map[string]bool{}
	for t := tea.KeyType(-200); t < 200; t++ {
		if n := t.String(); n != "" && n != " " && t != tea.KeyRunes {
			names[n] = true
		}
	}
	return names
}

// keyLabel is how the help shows keys: ↑ for up, pgdn for pgdown, joined by
// slashes.
func keyLabel(keys []string) string {
	shown := make([]string, len(keys))
	for i, k := range keys {
		switch k {
		case "up":
			k = "↑"
		case "down":
			k = "↓"
		case "left":
			k = "←"
		case "right":
			k = "→"
		case "pgdown":
			k = "pgdn"
		case " ":
			k = "space"
		}
		shown[i] = k
	}
	return strings.Join(shown, "/")
}

// bubbleteaKeys are keys as bubbletea's KeyMsg.String() spells them (space
// is " ").
func bubbleteaKeys(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		if k == "space" {
			k = " "
		}
		out[i] = k
	}
	return out
}

// rebind gives b the keys, its help label following them.
func rebind(b *key.Binding, keys []string) {
	keys = bubbleteaKeys(keys)
	enabled := b.Enabled()
	b.SetKeys(keys...)
	b.SetHelp(keyLabel(keys), b.Help().Desc)
	b.SetEnabled(enabled)
}

// applyKeys rebinds the bindings the overrides name (KeyNames' names; the
// caller has checked them: an unknown name or a fixed binding is left
// alone). The log view's scroll help follows up and down.
func (k *keyMap) applyKeys(overrides map[string][]string) {
	if len(overrides) == 0 {
		return
	}
	for i := range k.actions {
		if keys, ok := overrides[keySetting(k.actions[i].act)]; ok && len(keys) > 0 {
			rebind(&k.actions[i].b, keys)
		}
	}
	for _, n := range k.namedKeys() {
		if keys, ok := overrides[n.name]; ok && len(keys) > 0 {
			rebind(n.b, keys)
		}
	}
	_, up := overrides["up"]
	_, down := overrides["down"]
	if up || down {
		k.Scroll = key.NewBinding(key.WithKeys(append(slices.Clone(k.Up.Keys()), k.Down.Keys()...)...),
			key.WithHelp(keyLabel(k.Up.Keys()[:1])+"/"+keyLabel(k.Down.Keys()[:1]), "scroll"))
	}
	if _, ok := overrides["next-match"]; ok {
		k.NextMatch.SetHelp(keyLabel(k.NextMatch.Keys())+"/"+keyLabel(k.PrevMatch.Keys()), "next/prev")
	}
	if _, ok := overrides["prev-match"]; ok {
		k.NextMatch.SetHelp(keyLabel(k.NextMatch.Keys())+"/"+keyLabel(k.PrevMatch.Keys()), "next/prev")
	}
}
