// Package themes owns the colours and lipgloss styles of ctpool-tui: a Theme
// is a struct of lipgloss.AdaptiveColor values, chosen by ByName. Only the
// default, auto, adapts to the terminal's background (light or dark, asked
// of the terminal or, under tmux and screen where it cannot be, read from
// COLORFGBG: Background, TerminalRenderer); dark, light, high-contrast and
// colorblind are fixed, the same on any background. NewStyles builds the
// Styles the views render with from a Theme and a lipgloss renderer.
// Nothing here is mutable package state: every call builds new values.
// Colour is never the only carrier of a status; the views always add a
// glyph or a word.
package themes
