package kube

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

func TestCredentialsError(t *testing.T) {
	unauthorized := apierrors.NewUnauthorized("token expired")
	err := credentialsError(unauthorized)
	var ce *CredentialsError
	if !errors.As(err, &ce) || !apierrors.IsUnauthorized(err) {
		t.Fatalf("401: got %v (%T)", err, err)
	}
	if again := credentialsError(err); again != err {
		t.Fatalf("wrapped twice: %v", again)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no"))
	if got := credentialsError(forbidden); got != forbidden {
		t.Fatalf("403 wrapped: %v", got)
	}
	if !errors.Is(MapError(credentialsError(forbidden)), engine.ErrForbidden) {
		t.Fatal("403 does not match engine.ErrForbidden")
	}
}

// A refusal of the credentials stands over events from a watch opened
// before it, until a probe with the credentials succeeds.
func TestWatcherCredentialsRefusedUntilProbeSucceeds(t *testing.T) {
	w := NewWatcher(fake.NewClientset(), "ns")
	w.probed(nil)
	refused := credentialsError(apierrors.NewUnauthorized("revoked"))
	w.probed(refused)
	select {
	case <-w.Changed():
	default:
		t.Fatal("the refusal did not signal the reader")
	}
	down := func() (bool, error) {
		at, err := w.LastWatchError()
		return !at.IsZero() && !at.Before(w.LastSync()), err
	}
	if d, err := down(); !d || err != refused {
		t.Fatalf("after the refusal: down %v, err %v", d, err)
	}
	w.signal() // an event of an older watch
	if d, err := down(); !d || err != refused {
		t.Fatalf("after an event: down %v, err %v", d, err)
	}
	w.probed(refused)
	w.probed(nil)
	if d, err := down(); d {
		t.Fatalf("after a good probe: still down with %v", err)
	}
	select {
	case <-w.Changed():
	default:
		t.Fatal("the recovery did not signal the reader")
	}
}
