package engine

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. The kube package maps API errors onto the first four, so
// that the engine can decide on them without knowing client-go.
var (
	// ErrConflict: an optimistic-concurrency write lost (resourceVersion or
	// UID precondition did not hold).
	ErrConflict = errors.New("the object was changed by someone else")
	// ErrAlreadyExists: a create found the object already there.
	ErrAlreadyExists = errors.New("already exists")
	// ErrNotFound: the object does not exist.
	ErrNotFound = errors.New("not found")
	// ErrForbidden: the API server refused the request for lack of permission.
	ErrForbidden = errors.New("forbidden")

	ErrPoolNotFound     = errors.New("pool not found")
	ErrMemberNotFound   = errors.New("member not found")
	ErrPersistentMode   = errors.New("mode persistent is not supported: only the ephemeral mode is; use a VM pool for persistent desktops")
	ErrReservedIdentity = errors.New("reserved identity")
	ErrNoFreeMembers    = errors.New("pool has no free members")
	ErrNotHolder        = errors.New("identity does not hold the claim")
	ErrMaintenance      = errors.New("member is under maintenance by the reconciler")
	ErrClaimed          = errors.New("pool still has claimed members")
)

// InvalidError is bad input: a field and why it is wrong.
type InvalidError struct {
	Field  string
	Value  string
	Reason string
	// Secret says the field's text may hold a secret: Value is redacted,
	// and nothing that shows the error may quote the field's text.
	Secret bool
}

func (e *InvalidError) Error() string {
	if e.Value != "" {
		return fmt.Sprintf("invalid %s %q: %s", e.Field, e.Value, e.Reason)
	}
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
}

// NoFreeMembersError is returned by Claim when no member is free. It wraps
// ErrNoFreeMembers and carries the counts the spec asks for.
type NoFreeMembersError struct {
	Desired, Claimed, Unschedulable int
	// MaxSize is an elastic pool's ceiling (0 for a fixed pool): below
	// it, the reconciler grows the pool and a claim may wait (Growing).
	MaxSize int
	// Blocked names the members the claim found held by objects the pool
	// did not make ("<member>: <why>"), which it left alone.
	Blocked []string
}

func (e *NoFreeMembersError) Error() string {
	msg := fmt.Sprintf("pool has no free members (desired %d, claimed %d, unschedulable %d", e.Desired, e.Claimed, e.Unschedulable)
	switch {
	case e.MaxSize == 0:
	case e.Growing():
		msg += fmt.Sprintf("; elastic up to %d: the reconciler adds members", e.MaxSize)
	default:
		msg += fmt.Sprintf("; exhausted at its ceiling, maxSize %d", e.MaxSize)
	}
	if len(e.Blocked) > 0 {
		msg += "; blocked, left alone: " + strings.Join(e.Blocked, "; ")
	}
	return msg + ")"
}

// Growing reports whether the pool is elastic and below its ceiling: the
// reconciler adds members for the claims that found none free.
func (e *NoFreeMembersError) Growing() bool { return e.MaxSize > 0 && e.Desired < e.MaxSize }

func (e *NoFreeMembersError) Unwrap() error { return ErrNoFreeMembers }

// StepError collects the failures of one reconcile (or delete) run.
type StepError struct {
	Errors []string
}

func (e *StepError) Error() string {
	if len(e.Errors) == 1 {
		return "reconcile: " + e.Errors[0]
	}
	return fmt.Sprintf("reconcile: %s steps failed: %s", formatCount(len(e.Errors)), ErrorSummary(e.Errors, 10))
}

// UnreadableStatusError is a pool whose recorded status this release cannot
// read: a newer release's format (StatusFormat), or text that does not
// parse. What the status records (an elastic pool's size, a rollout and its
// halt, the members' backoffs) decides what a reconcile does, so a
// reconcile changes nothing on such a pool and never writes over the
// status; it says so with this error until the status can be read.
type UnreadableStatusError struct {
	Pool      string
	ConfigMap string
	Err       error
}

func (e *UnreadableStatusError) Error() string {
	return fmt.Sprintf("pool %s: its recorded status cannot be read by this release (%v), and is left as it is: "+
		"if a newer release wrote it, reconcile with that release; to start the status afresh, remove it: "+
		`kubectl patch configmap %s --type json -p '[{"op":"remove","path":"/data/status"}]'`, e.Pool, e.Err, e.ConfigMap)
}

func (e *UnreadableStatusError) Unwrap() error { return e.Err }
