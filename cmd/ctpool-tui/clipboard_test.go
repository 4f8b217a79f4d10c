package main

import (
	"strings"
	"testing"
)

func TestOSC52(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"xterm", map[string]string{"TERM": "xterm-256color"}, "\x1b]52;c;ZGVzay0y\a"},
		{"tmux", map[string]string{"TERM": "tmux-256color", "TMUX": "/tmp/tmux-1000/default,1,0"}, "\x1b]52;c;ZGVzay0y\a"},
		{"screen", map[string]string{"TERM": "screen-256color"}, "\x1bP\x1b]52;c;ZGVzay0y\a\x1b\\"},
	} {
		var b strings.Builder
		if err := osc52(&b, func(k string) string { return tc.env[k] })("desk-2"); err != nil || b.String() != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, b.String(), err, tc.want)
		}
	}
}
