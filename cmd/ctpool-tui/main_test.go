package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// runCmd runs the binary's command line in-process.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// deadKubeconfig points at a loopback port where nothing listens.
func deadKubeconfig(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	path := filepath.Join(t.TempDir(), "config")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: dead
  cluster: {server: "http://` + addr + `"}
users:
- name: u
  user: {token: x}
contexts:
- name: dead
  context: {cluster: dead, user: u, namespace: vdi}
current-context: dead
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExitCodes(t *testing.T) {
	kc := deadKubeconfig(t)
	t.Setenv("KUBECONFIG", kc)
	cases := []struct {
		name       string
		args       []string
		code       int
		stderrHas  string
		stdoutHas  string
		oneLineErr bool
	}{
		{"unknown flag", []string{"--bogus"}, exitUsage, "unknown flag: --bogus", "", true},
		{"unknown subcommand flag", []string{"claim", "desk", "a@b", "--nope"}, exitUsage, "unknown flag", "", true},
		{"claim without identity", []string{"claim", "desk"}, exitUsage, "claim takes POOL IDENTITY", "", true},
		{"invalid pool name", []string{"claim", "Desk_1", "alice"}, exitUsage, `invalid pool "Desk_1"`, "", true},
		{"reserved identity", []string{"claim", "desk", "corral-vdi/reconciler"}, exitUsage, "reserved", "", true},
		{"control character identity", []string{"claim", "desk", "al\x1bice"}, exitUsage, "control", "", true},
		{"apply without image", []string{"apply", "desk"}, exitError, "read pool desk", "", true},
		{"bad -o", []string{"--once", "-o", "xml"}, exitUsage, "-o must be table, wide or json", "", true},
		{"-o without --once", []string{"-o", "json"}, exitUsage, "go with --once", "", true},
		{"bad theme", []string{"--theme", "neon"}, exitUsage, "neon", "", true},
		{"release without identity", []string{"release", "desk", "desk-1"}, exitUsage, "release takes POOL MEMBER IDENTITY", "", true},
		{"rbac unknown role", []string{"rbac", "--role", "root"}, exitUsage, "viewer, operator, admin", "", true},
		{"rbac bad subject", []string{"rbac", "--role", "viewer", "--subject", "alice"}, exitUsage, "KIND:NAME", "", true},
		{"rbac viewer", []string{"rbac", "--role", "viewer", "--subject", "User:wall"}, exitOK, "", "kind: Role", false},
		{"once unreachable", []string{"--once", "--request-timeout", "2s"}, exitError, "cannot read namespace vdi", "", true},
		{"status unreachable", []string{"status", "desk", "--request-timeout", "2s"}, exitError, "read pool desk", "", true},
		{"status bad -o", []string{"status", "desk", "-o", "xml"}, exitUsage, "-o must be table, wide, json or yaml", "", true},
		{"status -o wide unreachable", []string{"status", "desk", "-o", "wide", "--request-timeout", "2s"}, exitError, "read pool desk", "", true},
		{"once -o wide unreachable", []string{"--once", "-o", "wide", "--request-timeout", "2s"}, exitError, "cannot read namespace vdi", "", true},
		{"negative size", []string{"reconcile", "desk", "--watch", "--interval", "-1s"}, exitUsage, "--interval must be positive", "", true},
		{"unknown command", []string{"bogus"}, exitUsage, `unknown command "bogus" for "ctpool-tui"; see ctpool-tui --help`, "", true},
		{"misspelt command", []string{"statsu", "desk"}, exitUsage, `(did you mean "status"?)`, "", true},
		{"command prefix", []string{"re"}, exitUsage, `(did you mean "reconcile" or "release"?)`, "", true},
		{"misspelt version", []string{"verison"}, exitUsage, `(did you mean "version"?)`, "", true},
		{"escape in unknown command", []string{"\x1b[31mred"}, exitUsage, `unknown command "\x1b[31mred"`, "", true},
		{"argument to a command without any", []string{"rbac", "--role", "viewer", "extra"}, exitUsage, `unknown command "extra" for "ctpool-tui rbac"`, "", true},
		{"argument to version", []string{"version", "now"}, exitUsage, `unknown command "now" for "ctpool-tui version"`, "", true},
		{"version bad -o", []string{"version", "-o", "xml"}, exitUsage, "-o must be text or json", "", true},
		{"unknown shell", []string{"completion", "bsh"}, exitUsage, `(did you mean "bash" or "fish" or "zsh"?)`, "", true},
		{"completion without a shell", []string{"completion"}, exitOK, "", "bash", false},
		{"unknown flag of version", []string{"--versoin"}, exitUsage, "unknown flag: --versoin", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, out, errOut := runCmd(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, errOut)
			}
			if !strings.Contains(errOut, tc.stderrHas) {
				t.Errorf("stderr %q lacks %q", errOut, tc.stderrHas)
			}
			if !strings.Contains(out, tc.stdoutHas) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdoutHas, out)
			}
			if tc.oneLineErr && strings.Count(strings.TrimRight(errOut, "\n"), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", errOut)
			}
			if strings.ContainsRune(errOut, 0x1b) {
				t.Errorf("stderr carries an escape character: %q", errOut)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestRBACViewerIsReadOnly(t *testing.T) {
	code, out, _ := runCmd(t, "rbac", "--role", "viewer", "-n", "vdi", "--subject", "Group:wall")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, verb := range []string{"create", "update", "patch", "delete", "force-release"} {
		if strings.Contains(out, "- "+verb+"\n") {
			t.Errorf("viewer role grants %s:\n%s", verb, out)
		}
	}
	for _, want := range []string{"namespace: vdi", "kind: RoleBinding", "name: wall", "- watch"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestHelpListsCommands(t *testing.T) {
	code, out, _ := runCmd(t, "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, c := range []string{"apply", "reconcile", "status", "claim", "release", "delete", "rbac", "--once", "--readonly", "--demo"} {
		if !strings.Contains(out, c) {
			t.Errorf("help lacks %q", c)
		}
	}
}

func TestNoClusterConfigured(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	code, _, errOut := runCmd(t, "--once")
	if code != exitError || !strings.Contains(errOut, "no cluster configured") || !strings.Contains(errOut, "try --demo for a simulated cluster") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestDashboardNeedsATerminal(t *testing.T) {
	t.Setenv("KUBECONFIG", deadKubeconfig(t))
	code, _, errOut := runCmd(t, "--readonly")
	if code != exitUsage || !strings.Contains(errOut, "needs a terminal") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// An operation's error is exit 1, bad input exit 2; a status the release
// cannot read is the cluster's state, exit 1, though it wraps the status's
// InvalidError.
func TestOpErrCodes(t *testing.T) {
	unreadable := &engine.UnreadableStatusError{Pool: "desk", ConfigMap: "corral-vdi-ctpool-desk",
		Err: &engine.InvalidError{Field: "status", Reason: "format 2 is a newer release's"}}
	for _, tt := range []struct {
		err  error
		want int
	}{
		{errors.New("connection refused"), exitError},
		{&engine.InvalidError{Field: "size", Value: "-1", Reason: "must not be negative"}, exitUsage},
		{unreadable, exitError},
		{fmt.Errorf("pool desk: %w", unreadable), exitError},
	} {
		var ce *codeError
		if !errors.As(opErr(tt.err), &ce) || ce.code != tt.want {
			t.Errorf("opErr(%v): %v, want exit %d", tt.err, opErr(tt.err), tt.want)
		}
	}
	if opErr(nil) != nil {
		t.Error("opErr(nil) is not nil")
	}
}
