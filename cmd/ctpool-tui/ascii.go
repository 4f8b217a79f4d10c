package main

import "strings"

// asciiTerminal reports whether the terminal cannot be trusted with Unicode
// block glyphs, so the trend sparklines are drawn with ASCII levels
// (tui.Options.ASCII, render.OnceOptions.ASCII): TERM=dumb, or a locale set
// (LC_ALL, else LC_CTYPE, else LANG) that is not UTF-8. No locale set at all
// keeps Unicode, as every other glyph of the dashboard does.
func asciiTerminal(getenv func(string) string) bool {
	if getenv("TERM") == "dumb" {
		return true
	}
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v := getenv(k); v != "" {
			v = strings.ToLower(v)
			return !strings.Contains(v, "utf-8") && !strings.Contains(v, "utf8")
		}
	}
	return false
}
