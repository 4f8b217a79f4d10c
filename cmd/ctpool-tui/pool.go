package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
	"github.com/ctpool-tui/ctpool-tui/internal/sanitize"
)

// opErr wraps an operation error for exit code 1 (bad input is a usage error).
func opErr(err error) error {
	if err == nil {
		return nil
	}
	var inv *engine.InvalidError
	if unreadableStatus(err) {
		// The cluster's state, not the command line's: the InvalidError
		// it wraps is the status's.
		return &codeError{code: exitError, err: err}
	}
	if errors.As(err, &inv) || errors.Is(err, engine.ErrReservedIdentity) {
		return &codeError{code: exitUsage, err: err}
	}
	return &codeError{code: exitError, err: err}
}

// unreadableStatus reports whether a reconcile stopped on a status it cannot
// read: it read nothing of the pool, so it has no summary to print.
func unreadableStatus(err error) bool {
	var u *engine.UnreadableStatusError
	return errors.As(err, &u)
}

func validatePoolArg(pool string) error {
	if err := engine.ValidatePoolName(pool); err != nil {
		return &codeError{code: exitUsage, err: err}
	}
	return nil
}

func newApplyCmd(e *env) *cobra.Command {
	var f applyFlags
	var replace bool
	c := &cobra.Command{
		Use:   "apply POOL",
		Short: "Create or update a pool definition, then reconcile once",
		Long: `Create or update a pool definition, then reconcile once.

For a new pool --image is required. For an existing pool, only the flags you
give change; the others keep their current values. A stored definition that
does not parse, or says mode: persistent, is refused with the field and line
at fault and nothing is written, unless --replace is given: then the whole
definition is written from the flags and the defaults. Changing a source field
(image, cpu, memory, disk, storage class, privileged, pod security, init,
runtime) makes the members drift: unclaimed ones are replaced, claimed ones
stay until released.

--pod-security picks the level of the Kubernetes Pod Security Standards the
members satisfy: baseline (the default: no privilege escalation, the runtime's
seccomp profile), restricted (also no capabilities and a non-root user,
--run-as-user, default 1000, that owns /data) or privileged (--privileged).
apply refuses, writing nothing, a level the namespace's
pod-security.kubernetes.io/enforce label would refuse.

--image-pull-secret NAME (repeatable) names a Secret of type
kubernetes.io/dockerconfigjson that the members pull a private image with;
apply refuses, writing nothing, one that is missing or of another type. Never
put credentials in --image (user:password@registry is refused): the pool
definition is a ConfigMap that anyone who may read ConfigMaps can read.

--isolate makes the engine own a NetworkPolicy named after the pool's
ConfigMap: members accept traffic only from the --ingress peers (none by
default: name the broker or gateway there) and never from another member;
egress stays open unless --egress peers restrict it (DNS always allowed).
A peer is JSON: {"podSelector":{"app":"broker"}} (pods of the namespace),
with "namespaceSelector" for other namespaces, or {"cidr":"10.0.0.0/8",
"except":["10.1.0.0/16"]}; "ports":[5900] narrows it to those TCP ports.
Reconcile puts the policy back when it is changed or deleted; --isolate=false
and delete remove it. A policy of that name without the pool's label is not
the pool's: it is left alone and reported.

A member runs sleep infinity, or with --init the image's own entrypoint as
PID 1. An unprivileged member keeps only /data across a stop and start. A
--privileged member keeps its whole root on the PVC: every top-level
directory of the image is copied there once and mounted over its own path.
Not kept: /proc, /sys, /dev, /run and /tmp (the runtime's own) and files
directly in /.`,
		Example: `  ctpool-tui apply desk --image ghcr.io/example/desktop:1 --size 3 --mem 2Gi
  ctpool-tui apply desk --image ghcr.io/example/desktop:2 --size 5
  ctpool-tui apply team --image registry.example/team/desk:1 --image-pull-secret regcred --pod-security restricted
  ctpool-tui apply gpu --image rt:24.04 --runtime sandboxd --template rt:24.04 --net none --size-class small`,
		Args: exactArgs(1, "POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pool := args[0]
			if err := validatePoolArg(pool); err != nil {
				return err
			}
			if replace && !cmd.Flags().Changed("image") {
				return usageErr("--replace writes the whole definition: --image is required with it")
			}
			eng, ns, err := e.engineFor()
			if err != nil {
				return opErr(err)
			}
			var spec engine.Spec
			stop := e.showProgress(eng)
			res, err := eng.ApplyWith(cmd.Context(), pool, func(stored *engine.Spec) (engine.Spec, error) {
				s, err := f.spec(cmd, stored)
				spec = s
				return s, err
			}, engine.ApplyOptions{Replace: replace, SizeGiven: cmd.Flags().Changed("size")})
			if res.Spec.Image != "" {
				spec = res.Spec // as written: a pool made fixed keeps its effective size
			}
			stop()
			var ce *codeError
			if errors.As(err, &ce) {
				return err // bad flags: nothing was written
			}
			for _, w := range res.Warnings {
				fmt.Fprintln(e.stderr, "warning: "+oneLine(w))
			}
			if res.Changed || err == nil {
				verb := "unchanged"
				switch {
				case res.Created:
					verb = "created"
				case res.Changed:
					verb = "configured"
				}
				size := fmt.Sprintf("size %d", spec.Size)
				if spec.Elastic() {
					size = fmt.Sprintf("elastic %d..%d, spare %d, power %s, starting from %d", spec.MinSize, spec.MaxSize, spec.SpareTarget(), spec.PowerPolicy(), spec.Size)
				}
				fmt.Fprintf(e.stdout, "pool %s %s in namespace %s (%s, source %s)\n", pool, verb, ns, size, spec.SourceHash())
			}
			if res.PolicyRemoved {
				fmt.Fprintf(e.stdout, "NetworkPolicy %s removed: the members are no longer isolated\n", engine.NetworkPolicyName(pool))
			}
			if res.Reconciled && !unreadableStatus(err) {
				printReconcile(e.stdout, res.Reconcile)
			}
			return opErr(err)
		},
	}
	f.register(c)
	c.Flags().BoolVar(&replace, "replace", false, "replace the whole stored definition with the flags given and the defaults (for a definition that does not parse)")
	return c
}

func printReconcile(w io.Writer, r engine.ReconcileResult) {
	counts, skipped := r.Counts()
	var parts []string
	for _, s := range engine.MemberSteps {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], pastTense(s)))
		}
	}
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped (claimed, under maintenance, backing off or waiting for the rollout)", skipped))
	}
	if len(r.Errors) > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", len(r.Errors)))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing to do")
	}
	st := r.Status
	fmt.Fprintf(w, "reconcile: %s; desired %d, ready %d, claimed %d, free %d, unschedulable %d\n",
		strings.Join(parts, ", "), st.Desired, st.Ready, st.Claimed, st.Free, st.Unschedulable)
	if el := st.Elastic; el != nil {
		fmt.Fprintf(w, "elastic: size %d (%s)\n", el.Size, el.Reason)
	}
	if iv := r.Isolation; iv != nil {
		fmt.Fprintf(w, "isolation: NetworkPolicy %s %s\n", iv.Policy, render.IsolationText(*iv))
	}
	if ro := r.Rollout; ro != nil {
		fmt.Fprintf(w, "rollout: %s\n", sanitize.Sanitize(reconcileRolloutText(ro)))
	}
	if p := r.Protection; p != nil && p.Protected() && p.Detail != "" {
		fmt.Fprintf(w, "protection: PodDisruptionBudget %s %s\n", p.Budget, p.Detail)
	}
}

// reconcileRolloutText is the rollout a reconcile recorded, in one line.
func reconcileRolloutText(ro *engine.RolloutStatus) string {
	switch {
	case ro.Halted != "":
		return ro.Halted
	case ro.Done != nil:
		return fmt.Sprintf("%s rolled out in %s (%d waves)", ro.Image, ro.Took(*ro.Done), ro.Waves)
	}
	return fmt.Sprintf("rolling to %s: %d replaced in %d waves so far", ro.Image, ro.Replaced, ro.Waves)
}

func pastTense(s engine.Step) string {
	switch s {
	case engine.StepCreate:
		return "created"
	case engine.StepStart:
		return "started"
	case engine.StepReplace:
		return "replaced"
	case engine.StepDelete:
		return "deleted"
	case engine.StepUnlock:
		return "unlocked (stale lease removed)"
	case engine.StepStop:
		return "stopped (free beyond the spare)"
	case engine.StepMark:
		return "re-marked (claim marks of a Pod set or removed)"
	case engine.StepRecord:
		return "recorded (the source a claimed desktop runs, on its data PVC)"
	}
	return s.String()
}

func newClaimCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "claim POOL IDENTITY",
		Short: "Give a free member to IDENTITY and print its name",
		Long: `Give a free member of POOL to IDENTITY and print the member's name.

A second claim by the same identity gets the same member (and renews an
expired claim). If no member is free the claim fails with the desired, claimed
and unschedulable counts. An elastic pool (apply --max-size) with no free
member below its ceiling grows for the claim at once: the claim takes the
first member above the size and builds it, and the reconciler takes the size
up to it; at its ceiling the claim fails, saying so.`,
		Example: "  ctpool-tui claim desk alice@example.com",
		Args:    exactArgs(2, "POOL IDENTITY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validatePoolArg(args[0]); err != nil {
				return err
			}
			if err := engine.ValidateIdentity(args[1]); err != nil {
				return opErr(err)
			}
			eng, _, err := e.engineFor()
			if err != nil {
				return opErr(err)
			}
			res, err := eng.Claim(cmd.Context(), args[0], args[1])
			for _, w := range res.Warnings {
				fmt.Fprintln(e.stderr, "warning: "+oneLine(w))
			}
			if err != nil {
				return opErr(err)
			}
			fmt.Fprintln(e.stdout, res.Member)
			return nil
		},
	}
}

func newReleaseCmd(e *env) *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "release POOL MEMBER IDENTITY",
		Short: "End a claim: destroy the member and build a fresh one",
		Long: `End IDENTITY's claim on MEMBER: destroy its Pod, console Service and data
PVC, wait until they are gone, build the member again from the current source
(when it is within the pool size) and remove the claim.

Releasing a member that has no claim does nothing. With --force an
administrator releases a claim held by another identity (IDENTITY may then be
left out).`,
		Example: `  ctpool-tui release desk desk-1 alice@example.com
  ctpool-tui release desk desk-2 --force`,
		Args: func(cmd *cobra.Command, args []string) error {
			if force && (len(args) == 2 || len(args) == 3) {
				return nil
			}
			return exactArgs(3, "POOL MEMBER IDENTITY")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validatePoolArg(args[0]); err != nil {
				return err
			}
			identity := ""
			if len(args) == 3 {
				identity = args[2]
				if err := engine.ValidateIdentity(identity); err != nil {
					return opErr(err)
				}
			}
			eng, _, err := e.engineFor()
			if err != nil {
				return opErr(err)
			}
			var res engine.ReleaseResult
			stop := e.showProgress(eng)
			if force {
				// IDENTITY, when given, is checked but not needed: a forced
				// release ends the claim whoever holds it.
				res, err = eng.ForceRelease(cmd.Context(), args[0], args[1])
			} else {
				res, err = eng.Release(cmd.Context(), args[0], args[1], identity)
			}
			stop()
			if err != nil {
				return opErr(err)
			}
			switch {
			case res.NoOp:
				fmt.Fprintf(e.stdout, "%s has no claim: nothing to do\n", res.Member)
			case res.RemovedUnheld:
				fmt.Fprintf(e.stdout, "%s had a Lease with no holder (no claim): the Lease was removed\n", res.Member)
			case res.Recreated:
				fmt.Fprintf(e.stdout, "%s released (was %q) and rebuilt from the current source\n", res.Member, res.PreviousHolder)
			default:
				fmt.Fprintf(e.stdout, "%s released (was %q); above the pool size, not rebuilt\n", res.Member, res.PreviousHolder)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&force, "force", false, "release a claim held by another identity (administrators)")
	return c
}

func newDeleteCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "delete POOL",
		Short: "Remove a pool and all of its members",
		Long: `Remove a pool: set its size to 0, delete every member, then the definition.
Claimed members are never destroyed, nor their claims removed (also when their
Pod and PVC are gone): delete stops, names them and exits 1; release them
(release --force) and run delete again. Objects that carry the pool's label but
are not its members are left alone and listed. Safe to run again after a failure.`,
		Example: "  ctpool-tui delete desk",
		Args:    exactArgs(1, "POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validatePoolArg(args[0]); err != nil {
				return err
			}
			eng, _, err := e.engineFor()
			if err != nil {
				return opErr(err)
			}
			stop := e.showProgress(eng)
			res, err := eng.Delete(cmd.Context(), args[0])
			stop()
			for _, o := range res.LeftAlone {
				fmt.Fprintf(e.stdout, "left alone: %s\n", oneLine(o))
			}
			if err != nil {
				return opErr(err)
			}
			fmt.Fprintf(e.stdout, "pool %s deleted\n", args[0])
			return nil
		},
	}
}

// exactArgs is cobra.ExactArgs with a usage error that names the arguments.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr("%s takes %s (got %d arguments); see --help", cmd.Name(), names, len(args))
		}
		return nil
	}
}
