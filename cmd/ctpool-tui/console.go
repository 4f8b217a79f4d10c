package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

func newConsoleCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "console POOL MEMBER [-- COMMAND...]",
		Short: "Open a terminal in a member's desktop container",
		Long: `Open an interactive terminal in MEMBER's desktop container through the
exec API (pods/exec), as kubectl exec -it does: raw mode, and the remote
terminal follows the size of yours.

Without COMMAND it starts a login bash when the image has one, else a login
/bin/sh. With COMMAND (after --) it runs that instead. The exit code of the
remote command is passed through; errors of ctpool-tui itself exit 1 (2 for
usage).

The console needs "create pods/exec" (the operator and admin roles). Members
of a sandboxd pool have no console: the sandboxd provider serves no
exec/logs/attach/port-forward.`,
		Example: `  ctpool-tui console desk desk-2
  ctpool-tui console desk desk-2 -- ls -l /data`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash >= 0 && dash != 2, dash < 0 && len(args) < 2:
				return usageErr("console takes POOL MEMBER [-- COMMAND...]; see --help")
			case dash < 0 && len(args) > 2:
				return usageErr("console takes POOL MEMBER; put the command after --: console %s %s -- %s", args[0], args[1], args[2])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			pool, member, command := args[0], args[1], args[2:]
			if err := validatePoolArg(pool); err != nil {
				return err
			}
			cs, cfg, ns, err := e.clientFor()
			if err != nil {
				return opErr(err)
			}
			if err := checkMemberOf(cmd.Context(), cs, ns, pool, member); err != nil {
				return opErr(err)
			}
			ex := &kube.Exec{Config: cfg, Client: cs}
			err = ex.Interactive(cmd.Context(), ns, member, command, cmd.InOrStdin(), e.stdout, e.stderr)
			auditConsole(cmd.Context(), auditor(cs, ns).Record, member, err)
			if code, ok := kube.ExitCode(err); ok {
				return &codeError{code: code}
			}
			return opErr(err)
		},
	}
}

// checkMemberOf refuses a member that is not in the pool (its Pod is
// labelled with another pool, or none).
func checkMemberOf(ctx context.Context, cs kubernetes.Interface, ns, pool, member string) error {
	p, err := cs.CoreV1().Pods(ns).Get(ctx, member, metav1.GetOptions{})
	if err != nil {
		err = kube.MapError(err)
		if errors.Is(err, engine.ErrNotFound) {
			return fmt.Errorf("%w: %s has no Pod in namespace %s (is the member stopped or missing?)", engine.ErrMemberNotFound, member, ns)
		}
		return err
	}
	if got := p.Labels[engine.LabelPool]; got != pool {
		return fmt.Errorf("%w: %s is not a member of pool %s (pool label %q)", engine.ErrMemberNotFound, member, pool, got)
	}
	return nil
}

// auditedConsole records every dashboard console session in the pool's
// audit trail: exec is a write.
type auditedConsole struct {
	*kube.Exec
	// auditIn records in the member's namespace.
	auditIn func(namespace string) func(context.Context, engine.AuditEntry)
}

func (c auditedConsole) Console(ctx context.Context, namespace, pod string, in io.Reader, out, errOut io.Writer) error {
	err := c.Exec.Console(ctx, namespace, pod, in, out, errOut)
	var audit func(context.Context, engine.AuditEntry)
	if c.auditIn != nil {
		audit = c.auditIn(namespace)
	}
	auditConsole(ctx, audit, pod, err)
	return err
}

// auditConsole records a console session that ended with err (the dashboard's
// and the console command's). Exec is a write; a nil audit records nothing.
func auditConsole(ctx context.Context, audit func(context.Context, engine.AuditEntry), member string, err error) {
	if audit == nil {
		return
	}
	e := engine.AuditEntry{Pool: poolOfMember(member), Action: engine.ActionConsole, Member: member, Detail: "session ended"}
	if code, ok := kube.ExitCode(err); ok {
		e.Detail = fmt.Sprintf("session ended (exit %d)", code)
	} else {
		e.Err = err
	}
	audit(ctx, e)
}

// poolOfMember is the pool of a member name (<pool>-<n>).
func poolOfMember(member string) string {
	if i := strings.LastIndexByte(member, '-'); i > 0 {
		return member[:i]
	}
	return member
}
