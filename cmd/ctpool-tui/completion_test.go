package main

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// complete asks for the completions of args (the last one is the word being
// typed) as the shell scripts do, through cobra's hidden __complete
// command, and returns the candidates and the directive line.
func complete(t *testing.T, args ...string) (candidates []string, directive string) {
	t.Helper()
	code, out, errOut := runCmd(t, append([]string{cobra.ShellCompRequestCmd}, args...)...)
	if code != exitOK {
		t.Fatalf("__complete %q: exit %d, stderr %q", args, code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := len(lines) - 1
	if last < 0 || !strings.HasPrefix(lines[last], ":") {
		t.Fatalf("__complete %q: no directive line:\n%s", args, out)
	}
	return lines[:last], lines[last]
}

var noFileComp = ":" + strconv.Itoa(int(cobra.ShellCompDirectiveNoFileComp))

// writeKubeconfig writes a kubeconfig with these contexts (each on its own
// cluster and user) pointing at server.
func writeKubeconfig(t *testing.T, server string, contexts ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n")
	for _, c := range contexts {
		b.WriteString("- name: " + quoteYAML(c+"-cluster") + "\n  cluster: {server: \"" + server + "\"}\n")
	}
	b.WriteString("users:\n")
	for _, c := range contexts {
		b.WriteString("- name: " + quoteYAML(c+"-user") + "\n  user: {token: x}\n")
	}
	b.WriteString("contexts:\n")
	for _, c := range contexts {
		b.WriteString("- name: " + quoteYAML(c) + "\n  context: {cluster: " + quoteYAML(c+"-cluster") + ", user: " + quoteYAML(c+"-user") + ", namespace: vdi}\n")
	}
	b.WriteString("current-context: " + quoteYAML(contexts[0]) + "\n")
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// quoteYAML is a double-quoted YAML scalar (JSON's escapes are YAML's).
func quoteYAML(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\t", `\t`, "\n", `\n`, "\x1b", `\e`)
	return `"` + r.Replace(s) + `"`
}

// Contexts, clusters and users come from the kubeconfig alone, never from
// the cluster (its server here is a dead port), filtered by what is typed;
// names a shell cannot take whole are left out.
func TestCompleteFromKubeconfig(t *testing.T) {
	kc := writeKubeconfig(t, "http://127.0.0.1:1", "prod", "staging", "stage-2", "with space", "tab\there", "esc\x1bape")
	t.Setenv("KUBECONFIG", kc)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--context", ""}, []string{"prod", "stage-2", "staging"}},
		{[]string{"--context", "st"}, []string{"stage-2", "staging"}},
		{[]string{"status", "--context", "p"}, []string{"prod"}},
		{[]string{"--context", "x"}, nil},
		{[]string{"--cluster", "stag"}, []string{"stage-2-cluster", "staging-cluster"}},
		{[]string{"claim", "--user", "prod"}, []string{"prod-user"}},
		{[]string{"--kubeconfig", kc, "--context", "pr"}, []string{"prod"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, dir := complete(t, tc.args...)
			if !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if dir != noFileComp {
				t.Errorf("directive %s, want %s", dir, noFileComp)
			}
		})
	}
}

func TestCompleteFixedChoices(t *testing.T) {
	t.Setenv("KUBECONFIG", deadKubeconfig(t))
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--once", "-o", ""}, []string{"table", "wide", "json"}},
		{[]string{"status", "desk", "-o", ""}, []string{"table", "wide", "json", "yaml"}},
		{[]string{"status", "desk", "-o", "y"}, []string{"yaml"}},
		{[]string{"version", "-o", ""}, []string{"text", "json"}},
		{[]string{"--theme", "h"}, []string{"high-contrast"}},
		{[]string{"rbac", "--role", ""}, []string{"viewer", "operator", "admin"}},
		{[]string{"apply", "desk", "--runtime", "s"}, []string{"standard", "sandboxd"}},
		{[]string{"ver"}, []string{"version\tPrint the version, commit, build date and Kubernetes client version"}},
		{[]string{"completion", "z"}, []string{"zsh\tGenerate the autocompletion script for zsh"}},
		// Nothing to complete, and no file names either.
		{[]string{"manifests", ""}, nil},
		{[]string{"claim", "desk", ""}, nil},
		{[]string{"release", "desk", "desk-1", ""}, nil},
		{[]string{"console", "desk", "desk-1", "--", ""}, nil},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, dir := complete(t, tc.args...)
			if !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if dir != noFileComp {
				t.Errorf("directive %s, want %s", dir, noFileComp)
			}
		})
	}
}

// A completion never freezes the shell: against an API server that accepts
// connections and never answers, every cluster read gives up after
// completionTimeout, whatever --request-timeout says, and completes nothing.
func TestCompletionNeverHangs(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-accepted
		for _, c := range held {
			c.Close()
		}
	})
	kc := writeKubeconfig(t, "http://"+l.Addr().String(), "silent")
	for _, args := range [][]string{
		{"status", ""},
		{"--request-timeout", "1m", "release", "desk", ""},
		{"--request-timeout", "0", "-n", ""},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			args = append([]string{"--kubeconfig", kc}, args...)
			start := time.Now()
			got, dir := complete(t, args...)
			took := time.Since(start)
			if len(got) != 0 || dir != noFileComp {
				t.Errorf("got %q %s, want nothing and %s", got, dir, noFileComp)
			}
			if took > completionTimeout+2*time.Second {
				t.Errorf("took %s, more than the %s bound", took, completionTimeout)
			}
		})
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		code, out, errOut := runCmd(t, "completion", shell)
		if code != exitOK || !strings.Contains(out, "ctpool-tui") || errOut != "" {
			t.Errorf("completion %s: exit %d, stderr %q", shell, code, errOut)
		}
		// The plugin's script completes the plugin's own executable.
		code, out, _ = runPlugin(t, "completion", shell)
		if code != exitOK || !strings.Contains(out, "kubectl-ctpool") {
			t.Errorf("kubectl-ctpool completion %s: exit %d", shell, code)
		}
	}
}
