package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctpool-tui/ctpool-tui/internal/config"
	"github.com/ctpool-tui/ctpool-tui/themes"
	"github.com/ctpool-tui/ctpool-tui/tui"
)

// The settings file (docs/dashboard.md#settings): read before a command
// runs, a broken one is a usage error (exit 2) naming the file and the
// line. Flags override it: a flag given on the command line, whatever its
// value, wins over the file.

// settingsSchema is what the settings may name: the themes and the
// dashboard's rebindable keys.
func settingsSchema() config.Schema {
	var keys []config.KeyName
	for _, k := range tui.KeyNames() {
		keys = append(keys, config.KeyName{Name: k.Name, Keys: k.Keys, Groups: k.Groups, Fixed: k.Fixed})
	}
	var names []string
	for _, n := range themes.Names() {
		if n != "auto" {
			names = append(names, n)
		}
	}
	return config.Schema{Themes: names, Keys: keys, ValidKey: tui.ValidKey}
}

// locateSettings finds the settings file (--config, $CTPOOL_TUI_CONFIG,
// $XDG_CONFIG_HOME, ~/.config).
func locateSettings(flag string) (config.Location, error) {
	loc, err := config.Locate(flag, os.Getenv, os.UserHomeDir)
	if err != nil {
		return loc, usageErr("%v", err)
	}
	return loc, nil
}

// loadSettings reads the settings file and applies what every command
// shares: the contexts' default namespaces.
func (e *env) loadSettings(flag string) error {
	loc, err := locateSettings(flag)
	if err != nil {
		return err
	}
	cfg, err := config.Load(loc, settingsSchema())
	if err != nil {
		return usageErr("%v", err)
	}
	e.settings = cfg
	namespaces := map[string]string{}
	for name, c := range cfg.Contexts {
		if c.Namespace != "" {
			namespaces[name] = c.Namespace
		}
	}
	e.opts.ContextNamespaces = namespaces
	return nil
}

// config is the settings read (none: the defaults).
func (e *env) config() *config.Config {
	if e.settings == nil {
		return &config.Config{}
	}
	return e.settings
}

// readsSettings: the commands that run without reading the settings file
// first: config (it reads the file itself, and `config path` must work
// with a broken one), version and the shell completion.
func readsSettings(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		switch c.Name() {
		case "config", "version", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
			return c.Parent() == nil // the root itself may be named anything
		}
	}
	return true
}

// applySettings puts the settings under the dashboard's flags: the theme,
// ASCII glyphs and, for the live dashboard, the read-only contexts. set
// reports whether a flag was given on the command line.
func (e *env) applySettings(df *dashFlags, set func(string) bool) {
	c := e.config()
	if !set("theme") && c.Theme != "" {
		df.theme = c.Theme
	}
	if !set("ascii") && c.ASCII != nil {
		df.ascii = *c.ASCII
	}
	df.readonlySet = set("readonly")
}

// readOnlyContexts applies the settings' read-only contexts to the live
// dashboard of names (nil: kubectl's one context). --readonly given, true
// or false, decides alone. Otherwise a context listed read-only is read-only
// exactly as with --readonly (the same read-only client, and no action
// wired): the whole dashboard when it is its one context or all of its
// contexts are, with the reason in the header; else the clients and pools
// of those contexts only (df.readOnlyIn).
func (e *env) readOnlyContexts(df *dashFlags, names []string) {
	if df.readonlySet || df.demo {
		return
	}
	c := e.config()
	listed := func(name string) bool { return c.Contexts[name].ReadOnly }
	if names == nil {
		if name := e.opts.ContextName(); name != "" && listed(name) {
			df.readonly, df.readOnlyWhy = true, "config: context "+name
		}
		return
	}
	var ro []string
	for _, name := range names {
		if listed(name) {
			ro = append(ro, name)
		}
	}
	switch {
	case len(ro) == 0:
	case len(ro) == len(names) && len(ro) == 1:
		df.readonly, df.readOnlyWhy = true, "config: context "+ro[0]
	case len(ro) == len(names):
		df.readonly, df.readOnlyWhy = true, "config: every context"
	default:
		df.readOnlyIn = map[string]bool{}
		for _, name := range ro {
			df.readOnlyIn[name] = true
		}
	}
}

// wallLayout is the settings' wall layout for the dashboard.
func (e *env) wallLayout() tui.WallLayout {
	w := e.config().Wall
	l := tui.WallLayout{Columns: w.Columns, HideAttention: w.Attention != nil && !*w.Attention}
	if w.Tiles != "auto" {
		l.Tiles = w.Tiles
	}
	if w.Group != "auto" {
		l.Group = w.Group
	}
	return l
}

// setSettings wires the settings the dashboard draws with: the keys and
// the wall's layout.
func (e *env) setSettings(opts *tui.Options, df dashFlags) {
	opts.Keys, opts.Wall = e.config().Keys, e.wallLayout()
	if opts.ReadOnly {
		opts.ReadOnlyWhy = df.readOnlyWhy
	}
}

// newConfigCmd is `config path` and `config view`.
func newConfigCmd(e *env, flag *string) *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "The settings file: where it is (path) and the settings in effect (view)",
		Long: `The settings file keeps the theme, read-only and default namespaces per
kubeconfig context, key bindings and the wall display's layout. It is
--config, else $CTPOOL_TUI_CONFIG, else $XDG_CONFIG_HOME/ctpool-tui/config.yaml,
else ~/.config/ctpool-tui/config.yaml. Flags override it.`,
		Example: `  ctpool-tui config path              # where the settings file is read from
  ctpool-tui config view              # the settings in effect, as a settings file
  ctpool-tui config view > "$(ctpool-tui config path)"   # start a settings file`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErr("config needs a subcommand: path or view; see %s --help", cmd.CommandPath())
		},
	}
	path := &cobra.Command{
		Use:   "path",
		Short: "Print the path of the settings file (it need not exist)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			loc, err := locateSettings(*flag)
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, loc.Path)
			return nil
		},
	}
	view := &cobra.Command{
		Use:   "view",
		Short: "Print the settings in effect: the file's over the defaults (a broken file is an error)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			loc, err := locateSettings(*flag)
			if err != nil {
				return err
			}
			cfg, err := config.Load(loc, settingsSchema())
			if err != nil {
				return usageErr("%v", err)
			}
			return cfg.Write(e.stdout, settingsSchema(), loc)
		},
	}
	c.AddCommand(path, view)
	return c
}

// settingsHelp is the --config flag's help.
var settingsHelp = "the settings file (default: $" + config.EnvVar + ", else " + strings.Join([]string{"$XDG_CONFIG_HOME/ctpool-tui/config.yaml", "~/.config/ctpool-tui/config.yaml"}, ", else ") + ")"
