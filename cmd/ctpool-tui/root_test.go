package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// runPlugin runs the command line as kubectl runs the plugin: the program
// started by its path, named kubectl-ctpool.
func runPlugin(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runAs(context.Background(), "/usr/local/bin/kubectl-ctpool", args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestProgramName(t *testing.T) {
	cases := []struct{ argv0, cmd, display string }{
		{"ctpool-tui", "ctpool-tui", ""},
		{"/usr/local/bin/ctpool-tui", "ctpool-tui", ""},
		{"./bin/ctpool-tui.exe", "ctpool-tui", ""},
		{"/tmp/go-build1/ctpool-tui.test", "ctpool-tui", ""},
		{"/usr/local/bin/kubectl-ctpool", "kubectl-ctpool", "kubectl ctpool"},
		{"kubectl-ctpool.exe", "kubectl-ctpool", "kubectl ctpool"},
		{"kubectl-vdi-pools", "kubectl-vdi-pools", "kubectl vdi pools"},
		{"kubectl-vdi_pools", "kubectl-vdi_pools", "kubectl vdi-pools"},
		{"kubectl-", "ctpool-tui", ""},
		{"kubectl", "ctpool-tui", ""},
	}
	for _, tc := range cases {
		cmd, display := programName(tc.argv0)
		if cmd != tc.cmd || display != tc.display {
			t.Errorf("programName(%q) = %q, %q; want %q, %q", tc.argv0, cmd, display, tc.cmd, tc.display)
		}
	}
}

// As a kubectl plugin, help, examples and errors say "kubectl ctpool",
// while the names of objects (the ServiceAccount ctpool-tui, an image
// registry.example/ctpool-tui:1.0) stay as they are.
func TestPluginNamesItself(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		code    int
		has     []string
		hasNot  []*regexp.Regexp
		stderrs string
	}{
		{"root help", []string{"--help"}, exitOK,
			[]string{"kubectl ctpool shows every desktop pool", "  kubectl ctpool -n vdi ", "Usage:\n  kubectl ctpool [flags]\n  kubectl ctpool [command]", `Use "kubectl ctpool [command] --help"`},
			[]*regexp.Regexp{regexp.MustCompile(`(?m)^\s*ctpool-tui\b`)}, ""},
		{"status help", []string{"status", "--help"}, exitOK,
			[]string{"Usage:\n  kubectl ctpool status POOL", "  kubectl ctpool status desk -o wide"},
			[]*regexp.Regexp{regexp.MustCompile(`(?m)^\s*ctpool-tui `)}, ""},
		{"reconcile help names the manifests command", []string{"reconcile", "--help"}, exitOK,
			[]string{`"kubectl ctpool manifests"`, "Lease ctpool-tui-reconciler"}, nil, ""},
		{"manifests help keeps object names", []string{"manifests", "--help"}, exitOK,
			[]string{"ServiceAccount  ctpool-tui\n", "kubectl ctpool manifests -n vdi --image registry.example/ctpool-tui:1.0"}, nil, ""},
		{"unknown command", []string{"statsu"}, exitUsage, nil, nil,
			`unknown command "statsu" for "kubectl ctpool" (did you mean "status"?); see kubectl ctpool --help`},
		{"unknown flag", []string{"status", "desk", "--nope"}, exitUsage, nil, nil, "see kubectl ctpool status --help"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runPlugin(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderrs) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tc.code, errOut, tc.stderrs)
			}
			for _, want := range tc.has {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, re := range tc.hasNot {
				if m := re.FindString(out); m != "" {
					t.Errorf("output still says %q:\n%s", m, out)
				}
			}
		})
	}
	// Run as ctpool-tui, the same help is unchanged.
	if code, out, _ := runCmd(t, "status", "--help"); code != exitOK || !strings.Contains(out, "  ctpool-tui status desk -o wide") || strings.Contains(out, "kubectl ctpool") {
		t.Errorf("ctpool-tui status --help:\n%s", out)
	}
}
