package main

import (
	"encoding/base64"
	"io"
	"strings"
)

// osc52 is the dashboard's clipboard (tui.Options.Clipboard): the OSC 52
// sequence that asks the terminal to put text on the clipboard, written to
// the terminal w. It reaches the clipboard of the machine the user sits at,
// over SSH too. Under screen it is wrapped in a DCS passthrough; tmux
// passes it on itself when its set-clipboard option is on (docs/
// dashboard.md).
func osc52(w io.Writer, getenv func(string) string) func(string) error {
	return func(text string) error {
		seq := "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(text)) + "\a"
		if strings.HasPrefix(getenv("TERM"), "screen") && getenv("TMUX") == "" {
			seq = "\x1bP" + seq + "\x1b\\"
		}
		_, err := io.WriteString(w, seq)
		return err
	}
}
