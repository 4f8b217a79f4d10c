package kube

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// apiError keeps the API server's message and lets errors.Is match both the
// engine sentinel and the original error.
type apiError struct {
	sentinel error
	err      error
}

func (e *apiError) Error() string   { return e.err.Error() }
func (e *apiError) Unwrap() []error { return []error{e.sentinel, e.err} }

// MapError converts an API error into one that matches the engine's sentinel
// errors (ErrConflict, ErrAlreadyExists, ErrNotFound, ErrForbidden).
func MapError(err error) error {
	if err == nil {
		return nil
	}
	var s error
	switch {
	case apierrors.IsConflict(err):
		s = engine.ErrConflict
	case apierrors.IsAlreadyExists(err):
		s = engine.ErrAlreadyExists
	case apierrors.IsNotFound(err):
		s = engine.ErrNotFound
	case apierrors.IsForbidden(err):
		s = engine.ErrForbidden
	default:
		return err
	}
	if errors.Is(err, s) {
		return err
	}
	return &apiError{sentinel: s, err: err}
}
