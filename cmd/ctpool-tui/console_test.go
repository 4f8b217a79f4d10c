package main

import (
	"strings"
	"testing"
)

func TestConsoleUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"console", "desk"}, "console takes POOL MEMBER"},
		{[]string{"console", "desk", "desk-1", "ls"}, "put the command after --: console desk desk-1 -- ls"},
		{[]string{"console", "desk", "--", "ls"}, "console takes POOL MEMBER"},
		{[]string{"console", "Bad_Pool", "x-1"}, "pool"},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

func TestConsoleUnreachableClusterExits1(t *testing.T) {
	code, _, stderr := runCmd(t, "--kubeconfig", deadKubeconfig(t), "--request-timeout", "2s", "console", "desk", "desk-1")
	if code != exitError || !strings.HasPrefix(stderr, "error: ") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestPoolOfMember(t *testing.T) {
	for member, want := range map[string]string{"desk-1": "desk", "gpu-lab-12": "gpu-lab", "odd": "odd"} {
		if got := poolOfMember(member); got != want {
			t.Errorf("poolOfMember(%q) = %q, want %q", member, got, want)
		}
	}
}
