package main

import "testing"

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
