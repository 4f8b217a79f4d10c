// Package render turns what the engine observes into plain text: a
// member's row (its cells, marks, holder, claim time left, level and search
// text), the reasons and errors a table shows, and the --once report (its
// table and its JSON document). It is modelled on k9s's internal/render:
// the renderers are pure functions of their arguments (time arrives as a
// parameter), they return sanitised text without styling, and they import
// no terminal library (no bubbletea, bubbles or lipgloss; a test holds
// that). The dashboard (tui) styles the cells; --once prints them.
package render
