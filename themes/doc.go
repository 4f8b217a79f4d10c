// Package themes owns the colours and lipgloss styles of ctpool-tui: a Theme
// is a struct of lipgloss.AdaptiveColor values (Dark, Light, HighContrast,
// chosen by ByName), and NewStyles builds the Styles the views render with
// from a Theme and a lipgloss renderer. Nothing here is mutable package
// state: every call builds new values. Colour is never the only carrier of a
// status; the views always add a glyph or a word.
package themes
