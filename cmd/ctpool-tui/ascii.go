package main

import (
	"bytes"
	"io"
	"strings"

	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

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

// asciiOut is where --once writes its report: w itself, or with --ascii
// (and a table: JSON keeps the cluster's text as it is) a buffer that
// flush writes to w in plain ASCII (render.ASCII).
func asciiOut(w io.Writer, df dashFlags) (out io.Writer, flush func()) {
	if !df.ascii || df.output == "json" {
		return w, func() {}
	}
	var b bytes.Buffer
	return &b, func() { io.WriteString(w, render.ASCII(b.String())) }
}
