package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// schema is a small dashboard: three actions and two views' keys on the
// screens, a log view sharing up with them, and ctrl+c fixed.
func schema() Schema {
	screens, logs, both := []string{"screens"}, []string{"logs"}, []string{"screens", "logs"}
	return Schema{
		Themes: []string{"dark", "light", "high-contrast"},
		Keys: []KeyName{
			{Name: "force-release", Keys: []string{"f", "x"}, Groups: screens},
			{Name: "reconcile", Keys: []string{"r"}, Groups: screens},
			{Name: "resize", Keys: []string{"s"}, Groups: screens},
			{Name: "up", Keys: []string{"up", "k"}, Groups: both},
			{Name: "filter", Keys: []string{"/"}, Groups: screens},
			{Name: "follow", Keys: []string{"f"}, Groups: logs},
			{Name: "interrupt", Keys: []string{"ctrl+c"}, Groups: both, Fixed: true},
		},
		ValidKey: func(k string) bool {
			k = strings.TrimPrefix(k, "alt+")
			return len([]rune(k)) == 1 && k != " " || strings.HasPrefix(k, "ctrl+") && len(k) == 6 ||
				k == "up" || k == "down" || k == "enter" || k == "space" || k == "f5"
		},
	}
}

func TestParse(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		yaml string
		want *Config
		// err: the error's line and a part of its text.
		errLine int
		err     string
	}{
		{name: "empty", yaml: "", want: &Config{}},
		{name: "comments only", yaml: "# nothing yet\n", want: &Config{}},
		{name: "everything", yaml: `theme: light
ascii: true
contexts:
  prod:
    readOnly: true
    namespace: vdi
  staging: {namespace: vdi-stage}
  "arn:aws:eks:eu-west-1:1:cluster/lab": {readOnly: false}
keys:
  force-release: f      # tmux takes x
  reconcile: [ctrl+r, R]
  up: [up, i]
wall:
  tiles: large
  columns: 3
  group: clusters
  attention: false
`, want: &Config{
			Theme: "light", ASCII: &yes,
			Contexts: map[string]Context{
				"prod": {ReadOnly: true, Namespace: "vdi"}, "staging": {Namespace: "vdi-stage"},
				"arn:aws:eks:eu-west-1:1:cluster/lab": {},
			},
			Keys: map[string][]string{"force-release": {"f"}, "reconcile": {"ctrl+r", "R"}, "up": {"up", "i"}},
			Wall: Wall{Tiles: "large", Columns: 3, Group: "clusters", Attention: &no},
		}},
		{name: "swapped keys are no clash", yaml: "keys:\n  reconcile: s\n  resize: r\n",
			want: &Config{Keys: map[string][]string{"reconcile": {"s"}, "resize": {"r"}}}},
		{name: "a key of another group is no clash", yaml: "keys:\n  follow: r\n",
			want: &Config{Keys: map[string][]string{"follow": {"r"}}}},
		{name: "unknown key with an anchor", yaml: "x: &k [ctrl+r]\n", errLine: 1, err: `unknown key "x"`},

		{name: "not YAML", yaml: "theme: [dark\n", errLine: 1, err: "not YAML"},
		{name: "tab indent", yaml: "wall:\n\ttiles: large\n", errLine: 2, err: "not YAML"},
		{name: "not a mapping", yaml: "- theme\n", errLine: 1, err: "the settings must be a mapping"},
		{name: "unknown key", yaml: "theme: dark\nthemes: light\n", errLine: 2, err: `unknown key "themes" (known: theme, ascii, keys, contexts, wall)`},
		{name: "key twice", yaml: "theme: dark\nwall: {}\ntheme: light\n", errLine: 3, err: `"theme" is set twice (first on line 1)`},
		{name: "unknown theme", yaml: "\ntheme: neon\n", errLine: 2, err: `theme: "neon" is not one of auto, dark, light, high-contrast`},
		{name: "theme not a word", yaml: "theme: [dark]\n", errLine: 1, err: "theme must be a word"},
		{name: "ascii not a bool", yaml: "ascii: yes\n", errLine: 1, err: `ascii must be true or false (got "yes")`},
		{name: "context key unknown", yaml: "contexts:\n  prod:\n    readonly: true\n", errLine: 3, err: `context "prod": unknown key "readonly" (known: readOnly, namespace)`},
		{name: "context twice", yaml: "contexts:\n  prod: {}\n  prod: {readOnly: true}\n", errLine: 3, err: `contexts: "prod" is set twice`},
		{name: "readOnly a string", yaml: "contexts:\n  prod:\n    readOnly: \"true\"\n", errLine: 3, err: `readOnly must be true or false`},
		{name: "bad namespace", yaml: "contexts:\n  prod:\n    namespace: VDI_1\n", errLine: 3, err: `namespace "VDI_1" is not a namespace name`},
		{name: "context not a mapping", yaml: "contexts:\n  prod: true\n", errLine: 2, err: `context "prod" must be a mapping`},
		{name: "wall tiles", yaml: "wall:\n  tiles: huge\n", errLine: 2, err: `wall: tiles: "huge" is not one of auto, small, large`},
		{name: "wall columns", yaml: "wall:\n  columns: -1\n", errLine: 2, err: "columns must be from 0"},
		{name: "wall columns a word", yaml: "wall:\n  columns: three\n", errLine: 2, err: "columns must be a whole number"},
		{name: "wall unknown", yaml: "wall:\n  rows: 2\n", errLine: 2, err: `wall: unknown key "rows"`},
		{name: "unknown action", yaml: "keys:\n  force_release: f\n", errLine: 2, err: `unknown action "force_release" (actions: force-release, reconcile, resize, up, filter, follow)`},
		{name: "fixed binding", yaml: "keys:\n  interrupt: q\n", errLine: 2, err: "interrupt (ctrl+c) cannot be rebound"},
		{name: "not a key", yaml: "keys:\n  reconcile: Ctrl-R\n", errLine: 2, err: `reconcile: "Ctrl-R" is not a key`},
		{name: "no key", yaml: "keys:\n  reconcile: []\n", errLine: 2, err: "reconcile has no key"},
		{name: "a key twice in a list", yaml: "keys:\n  reconcile: [r,\n    r]\n", errLine: 3, err: `reconcile: "r" is listed twice`},
		{name: "clash with a default", yaml: "keys:\n  reconcile: f\n", errLine: 2, err: `keys: reconcile: "f" is already force-release's key (rebind force-release too, or choose another key)`},
		{name: "clash of two set", yaml: "keys:\n  reconcile: ctrl+r\n  resize: [ctrl+r]\n", errLine: 3, err: `keys: resize: "ctrl+r" is already reconcile's key (reconcile is set on line 2)`},
		{name: "clash in the log view", yaml: "keys:\n  up: [up, f]\n", errLine: 2, err: `up: "f" is already`},
		{name: "clash with ctrl+c", yaml: "keys:\n  filter: ctrl+c\n", errLine: 2, err: `"ctrl+c" is already interrupt's key (interrupt cannot be rebound)`},
		{name: "space", yaml: "keys:\n  resize: space\n  reconcile: space\n", errLine: 3, err: `"space" is already resize's`},
		{name: "two documents", yaml: "theme: dark\n---\ntheme: light\n", errLine: 3, err: "more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("/home/u/.config/ctpool-tui/config.yaml", []byte(tt.yaml), schema())
			if tt.err != "" {
				var ce *Error
				if !errors.As(err, &ce) {
					t.Fatalf("error %v (%T), want an *Error", err, err)
				}
				if ce.Line != tt.errLine || !strings.Contains(err.Error(), tt.err) || ce.Path != "/home/u/.config/ctpool-tui/config.yaml" {
					t.Fatalf("error %q (line %d), want line %d and %q", err, ce.Line, tt.errLine, tt.err)
				}
				if want := "settings /home/u/.config/ctpool-tui/config.yaml:" + strconv.Itoa(tt.errLine) + ": "; tt.errLine > 0 && !strings.HasPrefix(err.Error(), want) {
					t.Errorf("error %q does not start with %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Path = "/home/u/.config/ctpool-tui/config.yaml"
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestLocate(t *testing.T) {
	home := func() (string, error) { return "/home/u", nil }
	noHome := func() (string, error) { return "", errors.New("$HOME is not defined") }
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		name  string
		flag  string
		env   func(string) string
		home  func() (string, error)
		want  Location
		isErr bool
	}{
		{"default", "", env(), home, Location{Path: "/home/u/.config/ctpool-tui/config.yaml", From: "the default"}, false},
		{"XDG", "", env("XDG_CONFIG_HOME", "/xdg"), home, Location{Path: "/xdg/ctpool-tui/config.yaml", From: "$XDG_CONFIG_HOME"}, false},
		{"relative XDG is ignored", "", env("XDG_CONFIG_HOME", "xdg"), home, Location{Path: "/home/u/.config/ctpool-tui/config.yaml", From: "the default"}, false},
		{"env over XDG", "", env("XDG_CONFIG_HOME", "/xdg", EnvVar, "/etc/ct.yaml"), home, Location{Path: "/etc/ct.yaml", Named: true, From: "$CTPOOL_TUI_CONFIG"}, false},
		{"flag over env", "./mine.yaml", env(EnvVar, "/etc/ct.yaml"), home, Location{Path: "./mine.yaml", Named: true, From: "--config"}, false},
		{"no home", "", env(), noHome, Location{}, true},
		{"no home, but XDG", "", env("XDG_CONFIG_HOME", "/xdg"), noHome, Location{Path: "/xdg/ctpool-tui/config.yaml", From: "$XDG_CONFIG_HOME"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Locate(tt.flag, tt.env, tt.home)
			if (err != nil) != tt.isErr || got != tt.want {
				t.Errorf("Locate = %+v, %v; want %+v (error %v)", got, err, tt.want, tt.isErr)
			}
		})
	}
}

// A missing file at the conventional place is the defaults; a missing
// named one, or a broken one, is an error naming it.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.yaml")
	c, err := Load(Location{Path: missing, From: "the default"}, schema())
	if err != nil || c.Path != "" || c.Theme != "" {
		t.Errorf("missing default file: %+v, %v; want the defaults", c, err)
	}
	if _, err := Load(Location{Path: missing, Named: true, From: "--config"}, schema()); err == nil || !strings.Contains(err.Error(), missing+": no such file (named by --config)") {
		t.Errorf("missing named file: %v", err)
	}
	broken := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(broken, []byte("theme: dark\nkeys:\n  reconcile: s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(Location{Path: broken, From: "the default"}, schema()); err == nil || !strings.HasPrefix(err.Error(), "settings "+broken+":3: ") {
		t.Errorf("broken file: %v", err)
	}
	if err := os.WriteFile(broken, []byte("theme: light\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(Location{Path: broken, From: "the default"}, schema()); err != nil || c.Theme != "light" || c.Path != broken {
		t.Errorf("good file: %+v, %v", c, err)
	}
}

// config view: every setting with its value, the file's over the
// defaults, as a settings file that reads back to the same.
func TestWrite(t *testing.T) {
	c, err := Parse("/etc/ct.yaml", []byte("theme: light\ncontexts:\n  prod: {readOnly: true, namespace: vdi}\nkeys:\n  force-release: f\n  filter: \"?\"\nwall: {columns: 2}\n"), schema())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := c.Write(&b, schema(), Location{Path: "/etc/ct.yaml", Named: true, From: "$CTPOOL_TUI_CONFIG"}); err != nil {
		t.Fatal(err)
	}
	want := `# ctpool-tui settings: /etc/ct.yaml (from $CTPOOL_TUI_CONFIG), over the defaults; flags override them
theme: light
ascii: false
contexts:
  prod:
    readOnly: true
    namespace: vdi
keys:
  force-release: [f]
  reconcile: [r]
  resize: [s]
  up: [up, k]
  filter: ['?']
  follow: [f]
wall:
  tiles: auto
  columns: 2
  group: auto
  attention: true
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	back, err := Parse("view.yaml", []byte(b.String()), schema())
	if err != nil {
		t.Fatalf("the view does not read back: %v", err)
	}
	if !reflect.DeepEqual(back.Effective(schema()), c.Effective(schema())) {
		t.Errorf("read back: %+v\nwant %+v", back.Effective(schema()), c.Effective(schema()))
	}

	b.Reset()
	if err := (&Config{}).Write(&b, schema(), Location{Path: "/home/u/.config/ctpool-tui/config.yaml", From: "the default"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "# ctpool-tui settings: no file at /home/u/.config/ctpool-tui/config.yaml (from the default): the defaults") ||
		!strings.Contains(b.String(), "\ntheme: auto\n") || !strings.Contains(b.String(), "\ncontexts: {}\n") {
		t.Errorf("defaults:\n%s", b.String())
	}
}
