package main

import (
	"io"

	"github.com/spf13/cobra"

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
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	e := &env{opts: kube.NewOptions(), stdout: stdout, stderr: stderr}
	var df dashFlags
	root := &cobra.Command{
		Use:   "ctpool-tui",
		Short: "Dashboard and engine for ephemeral desktop pools on Kubernetes",
		Long: `ctpool-tui shows every desktop pool of a namespace and its members live, and
reconciles, resizes and releases them from the keyboard.

  ctpool-tui -n vdi            the dashboard
  ctpool-tui --readonly        a wall display that never writes to the cluster
  ctpool-tui --once [-o json]  print the state once and exit (0 ok, 3 attention, 1 unreadable, 2 usage)
  ctpool-tui --demo            the dashboard on an embedded simulated cluster (no kubeconfig needed)

The namespace is -n, else the kubeconfig context's namespace, else "corral".`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDashboard(cmd.Context(), e, df, stdin)
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%v; see %s --help", err, c.CommandPath())
	})
	pf := root.PersistentFlags()
	e.opts.AddFlags(pf)
	e.logFlags.register(pf)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		// The dashboard owns the terminal: its logs go to --log-file or nowhere.
		screen := cmd == root && !df.once
		logger, closeLog, err := e.logFlags.setup(stderr, screen)
		if err != nil {
			return err
		}
		e.log, e.closeLog = logger, closeLog
		return nil
	}
	f := root.Flags()
	f.BoolVar(&df.once, "once", false, "print the pools and members once and exit")
	f.BoolVar(&df.readonly, "readonly", false, "wall display: no actions, and no write request of any kind")
	f.BoolVar(&df.demo, "demo", false, "run on an embedded simulated cluster (clearly labelled DEMO)")
	f.StringVarP(&df.output, "output", "o", "table", "with --once: table, wide (whole messages) or json")
	f.StringVar(&df.pool, "pool", "", "with --once: only this pool")
	f.StringVar(&df.theme, "theme", "dark", "colour theme: dark, light or high-contrast (NO_COLOR disables colour)")

	root.AddCommand(newApplyCmd(e), newReconcileCmd(e), newStatusCmd(e), newClaimCmd(e), newReleaseCmd(e), newDeleteCmd(e), newRBACCmd(e), newManifestsCmd(e))
	root.AddCommand(newConsoleCmd(e))
	for _, c := range root.Commands() {
		c.SilenceUsage, c.SilenceErrors = true, true
	}
	return root
}
