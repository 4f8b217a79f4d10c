package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/tui"
)

// No test of this package reads the settings file of the machine it runs
// on: the conventional place is an empty directory, and nothing names one.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ctpool-tui-settings")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	os.Unsetenv("CTPOOL_TUI_CONFIG")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// writeSettings writes a settings file and returns its path.
func writeSettings(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigPath(t *testing.T) {
	xdg := t.TempDir()
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"XDG_CONFIG_HOME", map[string]string{"XDG_CONFIG_HOME": xdg}, nil, filepath.Join(xdg, "ctpool-tui", "config.yaml")},
		{"HOME", map[string]string{"XDG_CONFIG_HOME": "", "HOME": "/home/u"}, nil, "/home/u/.config/ctpool-tui/config.yaml"},
		{"the environment variable", map[string]string{"XDG_CONFIG_HOME": xdg, "CTPOOL_TUI_CONFIG": "/etc/ct.yaml"}, nil, "/etc/ct.yaml"},
		{"the flag", map[string]string{"CTPOOL_TUI_CONFIG": "/etc/ct.yaml"}, []string{"--config", "/srv/mine.yaml"}, "/srv/mine.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, out, errOut := runCmd(t, append([]string{"config", "path"}, tc.args...)...)
			if code != 0 || out != tc.want+"\n" || errOut != "" {
				t.Errorf("config path: %d, %q, %q; want %q", code, out, errOut, tc.want)
			}
		})
	}
	// A broken file does not keep its path from being printed.
	t.Setenv("CTPOOL_TUI_CONFIG", writeSettings(t, "theme: [\n"))
	if code, out, _ := runCmd(t, "config", "path"); code != 0 || !strings.HasSuffix(out, "config.yaml\n") {
		t.Errorf("config path with a broken file: %d %q", code, out)
	}
}

func TestConfigView(t *testing.T) {
	path := writeSettings(t, `theme: light
contexts:
  prod: {readOnly: true, namespace: vdi}
keys:
  force-release: f   # tmux takes x
wall: {tiles: large, attention: false}
`)
	t.Setenv("CTPOOL_TUI_CONFIG", path)
	code, out, errOut := runCmd(t, "config", "view")
	if code != 0 || errOut != "" {
		t.Fatalf("config view: %d, %q", code, errOut)
	}
	for _, want := range []string{
		"# ctpool-tui settings: " + path + " (from $CTPOOL_TUI_CONFIG), over the defaults; flags override them\n",
		"\ntheme: light\n", "\nascii: false\n",
		"\ncontexts:\n  prod:\n    readOnly: true\n    namespace: vdi\n",
		"\n  force-release: [f]\n", "\n  reconcile: [r]\n", "\n  resume-rollout: [R]\n", "\n  up: [up, k]\n", "\n  follow: [f]\n",
		"\nwall:\n  tiles: large\n  columns: 0\n  group: auto\n  attention: false\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("config view lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "interrupt") {
		t.Error("config view lists ctrl+c, which cannot be rebound")
	}
	// What it prints reads back as the same settings.
	t.Setenv("CTPOOL_TUI_CONFIG", writeSettings(t, out))
	if code, again, errOut := runCmd(t, "config", "view"); code != 0 || strings.SplitN(again, "\n", 2)[1] != strings.SplitN(out, "\n", 2)[1] {
		t.Errorf("config view of its own output: %d %q\n%s", code, errOut, again)
	}

	// No file: the defaults.
	t.Setenv("CTPOOL_TUI_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	if code, out, _ := runCmd(t, "config", "view"); code != 0 || !strings.Contains(out, ": the defaults;") || !strings.Contains(out, "\ntheme: auto\n") || !strings.Contains(out, "\n  force-release: [f, x]\n") {
		t.Errorf("config view without a file: %d\n%s", code, out)
	}
}

// A broken settings file is a usage error naming the file and the line,
// for config view, the dashboard, --once and the other commands alike; it
// is never taken as the defaults.
func TestBrokenSettings(t *testing.T) {
	t.Setenv("KUBECONFIG", deadKubeconfig(t))
	for _, tc := range []struct {
		name, content, want string
	}{
		{"unknown key", "theme: dark\nthemes: light\n", `:2: the settings: unknown key "themes"`},
		{"bad value", "theme: neon\n", `:1: theme: "neon" is not one of auto, dark, light, high-contrast, colorblind`},
		{"key clash", "keys:\n  force-release: f\n  reconcile: f\n", `:3: keys: reconcile: "f" is already force-release's key (force-release is set on line 2)`},
		{"clash with a default", "\nkeys:\n  reconcile: s\n", `:3: keys: reconcile: "s" is already resize's key (rebind resize too, or choose another key)`},
		{"unknown action", "keys:\n  release: f\n", `:2: keys: unknown action "release" (actions: logs, console, claim, force-release, renew, reconcile, resume-rollout, resize, delete, up,`},
		{"syntax", "contexts:\n  prod:\n\treadOnly: true\n", ":3: not YAML: found character that cannot start any token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeSettings(t, tc.content)
			for _, args := range [][]string{{"config", "view"}, {"--once"}, {"status", "desk"}, {"--config", path, "--once"}} {
				t.Setenv("CTPOOL_TUI_CONFIG", path)
				if args[0] == "--config" {
					t.Setenv("CTPOOL_TUI_CONFIG", "")
				}
				code, out, errOut := runCmd(t, args...)
				if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "error: settings "+path+tc.want) || strings.Count(errOut, "\n") != 1 {
					t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errOut, "error: settings "+path+tc.want)
				}
			}
		})
	}
	// A settings file named but missing is an error too; at the
	// conventional place it is the defaults.
	t.Setenv("CTPOOL_TUI_CONFIG", filepath.Join(t.TempDir(), "typo.yaml"))
	if code, _, errOut := runCmd(t, "config", "view"); code != exitUsage || !strings.Contains(errOut, "typo.yaml: no such file (named by $CTPOOL_TUI_CONFIG)") {
		t.Errorf("a missing named file: %d %q", code, errOut)
	}
	// version works whatever the settings.
	t.Setenv("CTPOOL_TUI_CONFIG", writeSettings(t, "theme: neon\n"))
	if code, _, errOut := runCmd(t, "version"); code != 0 {
		t.Errorf("version with a broken settings file: %d %q", code, errOut)
	}
}

// Flags override the file, the file the defaults: the theme, ASCII and
// read-only (applySettings, readOnlyContexts) and the namespace (through
// --once, whose error names the namespace it read).
func TestSettingsPrecedence(t *testing.T) {
	withFile := "theme: light\nascii: true\ncontexts: {dead: {namespace: from-settings, readOnly: true}}\n"
	for _, tc := range []struct {
		name     string
		settings string
		flags    map[string]string // given on the command line
		theme    string
		ascii    bool
		readOnly bool
		why      string
	}{
		{name: "defaults", theme: ""},
		{name: "the file", settings: withFile, theme: "light", ascii: true, readOnly: true, why: "config: context dead"},
		{name: "the flags over the file", settings: withFile,
			flags: map[string]string{"theme": "high-contrast", "ascii": "false", "readonly": "false"}, theme: "high-contrast"},
		{name: "a flag with the default's value still wins", settings: withFile, flags: map[string]string{"theme": "", "readonly": "true"}, theme: "", ascii: true, readOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", deadKubeconfig(t))
			e := &env{opts: kube.NewOptions(), stdout: io.Discard, stderr: io.Discard}
			if err := e.loadSettings(writeSettings(t, tc.settings)); err != nil {
				t.Fatal(err)
			}
			df := dashFlags{theme: tc.flags["theme"], ascii: tc.flags["ascii"] == "true", readonly: tc.flags["readonly"] == "true"}
			e.applySettings(&df, func(name string) bool { _, ok := tc.flags[name]; return ok })
			e.readOnlyContexts(&df, nil)
			if df.theme != tc.theme || df.ascii != tc.ascii || df.readonly != tc.readOnly || df.readOnlyWhy != tc.why {
				t.Errorf("theme %q, ascii %v, read-only %v (%q); want %q, %v, %v (%q)", df.theme, df.ascii, df.readonly, df.readOnlyWhy, tc.theme, tc.ascii, tc.readOnly, tc.why)
			}
		})
	}

	// The namespace: -n, else the file's for the context, else the
	// kubeconfig's (vdi).
	t.Setenv("KUBECONFIG", deadKubeconfig(t))
	t.Setenv("CTPOOL_TUI_CONFIG", writeSettings(t, withFile))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--once"}, "namespace from-settings"},
		{[]string{"--once", "-n", "from-flag"}, "namespace from-flag"},
		{[]string{"--once", "--config", writeSettings(t, "")}, "namespace vdi"},
	} {
		if code, _, errOut := runCmd(t, tc.args...); code != exitError || !strings.Contains(errOut, "cannot read "+tc.want+" at ") {
			t.Errorf("%v: exit %d, %q; want it to read %s", tc.args, code, errOut, tc.want)
		}
	}
}

// The keys and the wall's layout of the file reach the dashboard's
// options; read-only from the file is named in them.
func TestSettingsOptions(t *testing.T) {
	e := &env{opts: kube.NewOptions()}
	if err := e.loadSettings(writeSettings(t, "keys:\n  force-release: f\n  up: [up, i]\nwall: {tiles: small, columns: 2, group: auto, attention: false}\n")); err != nil {
		t.Fatal(err)
	}
	opts := tui.Options{ReadOnly: true}
	e.setSettings(&opts, dashFlags{readonly: true, readOnlyWhy: "config: context prod"})
	if !slices.Equal(opts.Keys["force-release"], []string{"f"}) || !slices.Equal(opts.Keys["up"], []string{"up", "i"}) || len(opts.Keys) != 2 {
		t.Errorf("keys %v", opts.Keys)
	}
	if want := (tui.WallLayout{Tiles: tui.WallTilesSmall, Columns: 2, HideAttention: true}); opts.Wall != want {
		t.Errorf("wall %+v, want %+v", opts.Wall, want)
	}
	if opts.ReadOnlyWhy != "config: context prod" {
		t.Errorf("ReadOnlyWhy %q", opts.ReadOnlyWhy)
	}
	// Every rebindable name of the dashboard is accepted, each with a key
	// of its own.
	var b strings.Builder
	letters := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
	for i, k := range tui.KeyNames() {
		if !k.Fixed {
			b.WriteString("  " + k.Name + ": alt+" + string(letters[i]) + "\n")
		}
	}
	if err := e.loadSettings(writeSettings(t, "keys:\n"+b.String())); err != nil {
		t.Errorf("every binding rebound: %v", err)
	}
}

// A context the settings list read-only is as read-only as --readonly:
// the dashboard of that one context gets the read-only client (a write
// through it is refused before it leaves the process and never reaches the
// API server) and no action wired; among several contexts, only that
// context's client and pools are.
func TestReadOnlyContextFromSettings(t *testing.T) {
	names := []string{"east", "west"}
	apis := fakeClusters(t, names, "west")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "vdi"}}

	// One context: west, listed read-only.
	e := &env{opts: kube.NewOptions(), stdout: io.Discard, stderr: io.Discard}
	if err := e.loadSettings(writeSettings(t, "contexts:\n  west: {readOnly: true}\n")); err != nil {
		t.Fatal(err)
	}
	var df dashFlags
	e.applySettings(&df, func(string) bool { return false })
	e.readOnlyContexts(&df, nil)
	if !df.readonly || df.readOnlyWhy != "config: context west" {
		t.Fatalf("west is not read-only: %+v", df)
	}
	conn, err := e.connect(ctx, df, df.readonly)
	if err != nil {
		t.Fatal(err)
	}
	if conn.readOnly == nil {
		t.Fatal("the connection has no read-only guard")
	}
	if _, err := conn.client.CoreV1().ConfigMaps("vdi").Create(ctx, cm, metav1.CreateOptions{}); !errors.Is(err, kube.ErrReadOnly) {
		t.Fatalf("create: %v, want %v", err, kube.ErrReadOnly)
	}
	opts := dashboardOptions(conn, nil, df.readonly)
	opts.Resolver = newClusterReach(conn, df.readonly, nil, nil)
	e.setSettings(&opts, df)
	if !opts.ReadOnly || opts.ReadOnlyWhy != "config: context west" || opts.Resolver.Actions("", "vdi") != nil || opts.Resolver.Console("") != nil || opts.Resolver.Access("", "vdi") != nil {
		t.Errorf("read-only options wire writes: %+v", opts)
	}

	// Several contexts: west read-only, east writable.
	df = dashFlags{}
	e.applySettings(&df, func(string) bool { return false })
	e.readOnlyContexts(&df, names)
	if df.readonly || !df.readOnlyIn["west"] || df.readOnlyIn["east"] {
		t.Fatalf("mixed contexts: %+v", df)
	}
	src, err := startContexts(ctx, e, df, names, df.readonly)
	if err != nil {
		t.Fatal(err)
	}
	east, west := src.contexts[0], src.contexts[1]
	if east.conn.readOnly != nil || west.conn.readOnly == nil {
		t.Fatalf("guards: east %v, west %v; want west's only", east.conn.readOnly, west.conn.readOnly)
	}
	if err := west.conn.client.CoreV1().Pods("vdi").Delete(ctx, "p", metav1.DeleteOptions{}); !errors.Is(err, kube.ErrReadOnly) {
		t.Fatalf("delete through west: %v, want %v", err, kube.ErrReadOnly)
	}
	copts := contextsOptions(src, names, scope{}, df.readonly)
	if copts.ReadOnly || !slices.Equal(copts.ReadOnlyContexts, []string{"west"}) {
		t.Errorf("ReadOnly %v, ReadOnlyContexts %q; want false and [west]", copts.ReadOnly, copts.ReadOnlyContexts)
	}
	r := copts.Resolver
	if r.Actions("west", "vdi") != nil || r.Access("west", "vdi") != nil || r.Console("west") != nil {
		t.Error("the read-only context has writes wired")
	}
	if r.Actions("east", "vdi") == nil || r.Access("east", "vdi") == nil || r.Console("east") == nil {
		t.Error("the writable context has no writes wired")
	}
	for _, name := range names {
		if got := apis[name].writes(); len(got) != 0 {
			t.Errorf("the %s API server received writes: %v", name, got)
		}
	}
	if west.conn.readOnly.Refused() != 1 {
		t.Errorf("west refused %d, want 1", west.conn.readOnly.Refused())
	}

	// Both listed: the whole dashboard is read-only, as --readonly.
	if err := e.loadSettings(writeSettings(t, "contexts:\n  west: {readOnly: true}\n  east: {readOnly: true}\n")); err != nil {
		t.Fatal(err)
	}
	df = dashFlags{}
	e.readOnlyContexts(&df, names)
	if !df.readonly || df.readOnlyWhy != "config: every context" || df.readOnlyIn != nil {
		t.Errorf("every context listed: %+v", df)
	}
	// --readonly=false given: the flag decides.
	df = dashFlags{readonlySet: true}
	e.readOnlyContexts(&df, names)
	if df.readonly || df.readOnlyIn != nil {
		t.Errorf("--readonly=false: %+v", df)
	}
}

// The example of docs/dashboard.md is a good settings file.
func TestSettingsDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "dashboard.md"))
	if err != nil {
		t.Fatal(err)
	}
	const start = "```yaml\n# ~/.config/ctpool-tui/config.yaml\n"
	i := strings.Index(string(doc), start)
	if i < 0 {
		t.Fatal("docs/dashboard.md has no settings example")
	}
	example := string(doc[i+len("```yaml\n"):])
	example = example[:strings.Index(example, "```")]
	e := &env{opts: kube.NewOptions()}
	if err := e.loadSettings(writeSettings(t, example)); err != nil {
		t.Fatalf("the documented example: %v", err)
	}
	if c := e.config(); !c.Contexts["prod-eu"].ReadOnly || c.Theme != "light" || len(c.Keys) != 3 || c.Wall.Columns != 3 {
		t.Errorf("the documented example reads as %+v", c)
	}
}
