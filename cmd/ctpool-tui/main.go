// Command ctpool-tui is the dashboard and the engine commands for ephemeral
// desktop pools on Kubernetes. This package only wires flags, signals, the
// kube client, the TUI and the headless paths together.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/ctpool-tui/ctpool-tui/kube"
)

// Exit codes, documented in docs/commands.md and docs/dashboard.md.
const (
	exitOK        = 0
	exitError     = 1
	exitUsage     = 2
	exitAttention = 3
)

func main() {
	// klog must never write into the terminal the TUI owns.
	silenceKlog()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfiles := startProfiles(os.Getenv, os.Stderr)
	code := runAs(ctx, os.Args[0], os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stopProfiles()
	stop()
	os.Exit(code)
}

// run executes the command line as ctpool-tui and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runAs(ctx, "ctpool-tui", args, stdin, stdout, stderr)
}

// runAs executes the command line with the program started as argv0
// (kubectl-ctpool is the kubectl plugin) and returns the exit code.
func runAs(ctx context.Context, argv0 string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(argv0, stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		if ce.err != nil {
			fmt.Fprintln(stderr, "error: "+oneLine(withHint(ce.err).Error()))
		}
		return ce.code
	}
	fmt.Fprintln(stderr, "error: "+oneLine(withHint(err).Error()))
	return exitError
}

// withHint adds what this build offers when no cluster is configured.
func withHint(err error) error {
	if errors.Is(err, kube.ErrNoKubeconfig) {
		return fmt.Errorf("%w (%s)", err, noClusterHint)
	}
	return err
}

// codeError carries an exit code; a nil err prints nothing.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *codeError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &codeError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// oneLine keeps an error on one line and free of control characters.
func oneLine(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// silenceKlog sends all of client-go's klog output nowhere: not to stderr
// (not even errors, whose default threshold would still print them), not to
// files.
func silenceKlog() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL", "one_output": "true"} {
		_ = fs.Set(name, value)
	}
	klog.SetOutput(io.Discard)
}
