package kube

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// CredentialsError: the API server refused the credentials the kubeconfig
// names (401 Unauthorized): an expired or revoked token, a rotated
// certificate. A reader that cannot import this package recognises it by
// its CredentialsRefused method.
type CredentialsError struct{ Err error }

func (e *CredentialsError) Error() string { return fmt.Sprintf("credentials refused: %v", e.Err) }

// Unwrap returns the API server's error.
func (e *CredentialsError) Unwrap() error { return e.Err }

// CredentialsRefused marks the error as a refusal of the credentials.
func (e *CredentialsError) CredentialsRefused() bool { return true }

// credentialsError wraps a 401 answer in a CredentialsError (once); other
// errors are returned as they are.
func credentialsError(err error) error {
	var ce *CredentialsError
	if err == nil || errors.As(err, &ce) || !apierrors.IsUnauthorized(err) {
		return err
	}
	return &CredentialsError{Err: err}
}
