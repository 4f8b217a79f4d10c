package main

import (
	"strings"
	"testing"
)

func TestASCIITerminal(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"LANG": "en_US.UTF-8"}, false},
		{map[string]string{"LANG": "de_DE.utf8"}, false},
		{map[string]string{"LANG": "C"}, true},
		{map[string]string{"LANG": "en_US.UTF-8", "LC_ALL": "POSIX"}, true},
		{map[string]string{"LANG": "C", "LC_CTYPE": "C.UTF-8"}, false},
		{map[string]string{"TERM": "dumb", "LANG": "en_US.UTF-8"}, true},
	} {
		if got := asciiTerminal(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.env, got, tc.want)
		}
	}
}

// --ascii: the --once report is plain ASCII (ascii: true in the settings
// sets it: TestSettingsPrecedence).
func TestOnceASCII(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings string
		args     []string
	}{
		{"flag", "", []string{"--demo", "--once", "--ascii"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CTPOOL_TUI_CONFIG", writeSettings(t, tc.settings))
			code, out, errOut := runCmd(t, tc.args...)
			if code != exitOK && code != exitAttention || !strings.Contains(out, "MEMBER") {
				t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
			}
			if i := strings.IndexFunc(out, func(r rune) bool { return r >= 0x80 }); i >= 0 {
				t.Errorf("not ASCII at %d: %q", i, out[max(0, i-20):min(len(out), i+20)])
			}
		})
	}
}
