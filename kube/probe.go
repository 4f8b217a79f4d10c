package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DefaultProbeInterval is how often a Watcher asks the API server /livez.
// Informers retry a refused watch silently, so without this probe an outage
// would not show until the next list fails.
const DefaultProbeInterval = 5 * time.Second

// withProbeInterval sets how often /livez is probed (0 turns the probe off);
// only this package's tests set it (export_test.go).
func withProbeInterval(d time.Duration) WatcherOption { return func(w *Watcher) { w.probeEvery = d } }

// Probe asks the API server's /livez every interval until ctx ends and
// reports each outcome (nil: it answered). Informers retry a refused watch
// silently, so this is how a reader of a cache learns of an outage. It
// returns at once when the client has no REST client (a fake clientset) or
// every is not positive.
func Probe(ctx context.Context, client kubernetes.Interface, every time.Duration, report func(error)) {
	rc, ok := client.Discovery().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil || every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := probeOnce(ctx, rc, every)
		if apierrors.IsUnauthorized(err) && ctx.Err() == nil {
			// A token file or an exec plugin reads its credential again
			// after a 401: ask once more with what it reads now, so that a
			// rotation is not shown as a refusal until the next probe.
			err = probeOnce(ctx, rc, every)
		}
		if ctx.Err() != nil {
			return
		}
		if apierrors.IsForbidden(err) {
			err = nil // it answered; /livez is just not open to this identity
		}
		report(credentialsError(err))
	}
}

// probeOnce asks /livez once, bounded by the interval (at most 3s).
func probeOnce(ctx context.Context, rc *rest.RESTClient, every time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, min(every, 3*time.Second))
	defer cancel()
	return rc.Get().AbsPath("/livez").Do(pctx).Error()
}

// probed records a /livez outcome: a success counts as contact with the API
// server (LastSync) and clears a refusal of the credentials, a refusal of
// the credentials (*CredentialsError) stands until the next success, any
// other failure is a connection error (LastWatchError). A change between
// them signals the reader.
func (w *Watcher) probed(err error) {
	w.mu.Lock()
	wasDown, wasRefused := w.downLocked(), w.refused != nil
	var ce *CredentialsError
	switch {
	case errors.As(err, &ce):
		w.refused, w.lastErr, w.lastErrAt = err, err, w.now()
	case err != nil:
		w.lastErr, w.lastErrAt = fmt.Errorf("API server unreachable: %w", err), w.now()
	default:
		w.lastEvent, w.refused = w.now(), nil
	}
	isDown, isRefused := w.downLocked(), w.refused != nil
	w.mu.Unlock()
	if wasDown != isDown || wasRefused != isRefused {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
}
