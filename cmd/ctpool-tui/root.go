package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctpool-tui/ctpool-tui/kube"
)

// dashFlags are the dashboard's own flags.
type dashFlags struct {
	once     bool
	readonly bool
	demo     bool
	output   string
	pool     string
	theme    string
	version  bool
	scope    scopeFlags
	// allContexts: every context of the kubeconfig (--context a,b,c names
	// some of them).
	allContexts bool
	// ascii: plain glyphs (--ascii, or the settings' ascii).
	ascii bool

	// From the settings (settings.go): readonlySet, --readonly was given;
	// readOnlyWhy, where read-only mode comes from when the settings set
	// it; readOnlyIn, the contexts of several that are read-only while the
	// others are not.
	readonlySet bool
	readOnlyWhy string
	readOnlyIn  map[string]bool
}

// scopeFlags are -A/--all-namespaces and --namespaces: the fleet view.
type scopeFlags struct {
	all        bool
	namespaces string
}

func (s *scopeFlags) register(f *pflag.FlagSet, what string) {
	f.BoolVarP(&s.all, "all-namespaces", "A", false, what+" of every namespace the identity may list (a NAMESPACE column)")
	f.StringVar(&s.namespaces, "namespaces", "", what+" of these namespaces (a,b,c: for an identity that may not list every namespace)")
}

// scope is where pools are read: one namespace (-n), or a fleet.
type scope struct {
	fleet bool
	// namespaces of the fleet; nil: every namespace.
	namespaces []string
}

// label names the fleet in the header ("all" or "a,b,c").
func (s scope) label() string {
	if len(s.namespaces) == 0 {
		return "all"
	}
	return strings.Join(s.namespaces, ",")
}

// resolve checks the flags: -A, --namespaces and -n exclude one another.
func (s *scopeFlags) resolve(e *env) (scope, error) {
	nsSet := e.opts.Flags.Namespace != nil && *e.opts.Flags.Namespace != ""
	switch {
	case s.all && s.namespaces != "":
		return scope{}, usageErr("-A reads every namespace; leave out --namespaces")
	case s.all && nsSet:
		return scope{}, usageErr("-A reads every namespace; leave out -n")
	case s.namespaces != "" && nsSet:
		return scope{}, usageErr("--namespaces names the namespaces; leave out -n")
	case s.all:
		return scope{fleet: true}, nil
	case s.namespaces != "":
		list, err := kube.ParseNamespaces(s.namespaces)
		if err != nil {
			return scope{}, usageErr("%v", err)
		}
		return scope{fleet: true, namespaces: list}, nil
	}
	return scope{}, nil
}

// newRootCmd builds the command tree. argv0 is the name the program was
// started as: installed as kubectl-ctpool it is the kubectl plugin, and its
// help and errors say "kubectl ctpool".
func newRootCmd(argv0 string, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	e := &env{opts: kube.NewOptions(), stdout: stdout, stderr: stderr}
	e.opts.UserAgent = currentVersion().userAgent()
	var df dashFlags
	var configFlag string
	root := &cobra.Command{
		Use:   "ctpool-tui",
		Short: "Dashboard and engine for ephemeral desktop pools on Kubernetes",
		Long: `ctpool-tui shows every desktop pool of a namespace and its members live, and
reconciles, resizes and releases them from the keyboard.

  ctpool-tui -n vdi            the dashboard
  ctpool-tui -A                the pools of every namespace (--namespaces a,b,c: of these)
  ctpool-tui --context a,b     the pools of several clusters (--all-contexts: of every context)
  ctpool-tui --readonly        a wall display that never writes to the cluster
  ctpool-tui --once [-o json]  print the state once and exit (0 ok, 3 attention, 1 unreadable, 2 usage)
  ctpool-tui --demo            the dashboard on an embedded simulated cluster (no kubeconfig needed)
  ctpool-tui config view       the settings in effect (theme, read-only contexts, keys, wall; config path: the file)

The namespace is -n, else the kubeconfig context's namespace, else "corral".`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if df.version {
				return printVersion(e.stdout, "text")
			}
			e.applySettings(&df, cmd.Flags().Changed)
			return runDashboard(cmd.Context(), e, df, stdin)
		},
	}
	if cmdName, display := programName(argv0); display != "" {
		root.Use = cmdName
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: display}
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%v; see %s --help", err, c.CommandPath())
	})
	pf := root.PersistentFlags()
	e.opts.AddFlags(pf)
	pf.StringVar(&configFlag, "config", "", settingsHelp)
	e.logFlags.register(pf)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		// The dashboard owns the terminal: its logs go to --log-file or nowhere.
		screen := cmd == root && !df.once
		logger, closeLog, err := e.logFlags.setup(stderr, screen)
		if err != nil {
			return err
		}
		e.log, e.closeLog = logger, closeLog
		if readsSettings(cmd) && !(cmd == root && df.version) {
			return e.loadSettings(configFlag)
		}
		return nil
	}
	f := root.Flags()
	f.BoolVar(&df.once, "once", false, "print the pools and members once and exit")
	f.BoolVar(&df.readonly, "readonly", false, "wall display: no actions, and no write request of any kind")
	f.BoolVar(&df.demo, "demo", false, "run on an embedded simulated cluster (clearly labelled DEMO)")
	f.StringVarP(&df.output, "output", "o", "table", "with --once: table, wide (whole messages) or json")
	f.StringVar(&df.pool, "pool", "", "with --once: only this pool")
	f.StringVar(&df.theme, "theme", "", "colour theme: auto (the default: follows the terminal's background), dark, light, high-contrast or colorblind (NO_COLOR disables colour)")
	f.BoolVar(&df.version, "version", false, "print the version (as the version command does) and exit")
	f.BoolVar(&df.ascii, "ascii", false, "plain ASCII glyphs, for terminals and screen readers that need them")
	df.scope.register(f, "the pools")
	f.BoolVar(&df.allContexts, "all-contexts", false, "the pools of every context of the kubeconfig (a CONTEXT column and each cluster's state; --context a,b,c: of these)")

	root.AddCommand(newApplyCmd(e), newReconcileCmd(e), newStatusCmd(e), newClaimCmd(e), newReleaseCmd(e), newDeleteCmd(e), newRBACCmd(e), newManifestsCmd(e), newAlertsCmd(e))
	root.AddCommand(newConsoleCmd(e), newVersionCmd(e), newRolloutCmd(e), newConfigCmd(e, &configFlag))
	setupCompletion(root, e)
	for _, c := range root.Commands() {
		c.SilenceUsage, c.SilenceErrors = true, true
		usageArgs(c)
	}
	if _, display := programName(argv0); display != "" {
		renameInHelp(root, display)
	}
	return root
}

// unknownCommand is the usage error for a word that names no command, with
// cobra's suggestions of the commands it is close to.
func unknownCommand(cmd *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, set where it suggests itself
	}
	if s := cmd.SuggestionsFor(word); len(s) > 0 && !cmd.DisableSuggestions {
		quoted := make([]string, len(s))
		for i, name := range s {
			quoted[i] = strconv.Quote(name)
		}
		msg += " (did you mean " + strings.Join(quoted, " or ") + "?)"
	}
	return usageErr("%s; see %s --help", msg, cmd.CommandPath())
}

// usageArgs makes every argument check of c and its subcommands a usage
// error (exit 2), cobra's own (cobra.NoArgs and the like) included.
func usageArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			if err == nil {
				return nil
			}
			var ce *codeError
			if errors.As(err, &ce) {
				return err
			}
			return &codeError{code: exitUsage, err: fmt.Errorf("%w; see %s --help", err, cmd.CommandPath())}
		}
	}
	for _, s := range c.Commands() {
		s.SilenceUsage, s.SilenceErrors = true, true
		usageArgs(s)
	}
}

// programName maps the name the binary was started as to the command name
// and the name help shows: a kubectl plugin (kubectl-ctpool, or any
// kubectl-NAME it was installed as) is "kubectl ctpool" to its users, as
// kubectl maps plugin file names (a dash separates words, an underscore is
// a dash). Any other name is ctpool-tui, and display is empty.
func programName(argv0 string) (cmdName, display string) {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	rest, ok := strings.CutPrefix(base, "kubectl-")
	if !ok || rest == "" {
		return "ctpool-tui", ""
	}
	words := strings.Split(rest, "-")
	for i, w := range words {
		words[i] = strings.ReplaceAll(w, "_", "-")
	}
	return base, "kubectl " + strings.Join(words, " ")
}

// invocation matches "ctpool-tui" where help text shows it as a command
// line: at the start of a line (after indentation) or after a quote, and
// followed by a space, a quote or the line's end. Object names such as the
// ServiceAccount ctpool-tui or an image registry.example/ctpool-tui:1 are
// left alone.
var invocation = regexp.MustCompile(`(?m)(^[ \t]*|")ctpool-tui( |"|$)`)

// renameInHelp writes display for ctpool-tui in the long help and examples
// of every command.
func renameInHelp(c *cobra.Command, display string) {
	repl := "${1}" + display + "${2}"
	c.Long = invocation.ReplaceAllString(c.Long, repl)
	c.Example = invocation.ReplaceAllString(c.Example, repl)
	for _, s := range c.Commands() {
		renameInHelp(s, display)
	}
}
