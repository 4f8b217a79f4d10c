package kube

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// ErrReadOnly is returned for any write attempted through a read-only config.
var ErrReadOnly = errors.New("read-only mode: write refused by the client")

// ReadOnlyGuard counts the requests a read-only config refused.
type ReadOnlyGuard struct {
	refused atomic.Int64
}

// Refused is how many write requests were refused.
func (g *ReadOnlyGuard) Refused() int64 { return g.refused.Load() }

// ReadOnly returns a copy of cfg whose transport refuses every request that
// is not a read (GET, HEAD, OPTIONS) before it leaves the process. Watches
// and lists are GETs; creates, updates, patches and deletes never reach the
// API server.
func ReadOnly(cfg *rest.Config) (*rest.Config, *ReadOnlyGuard) {
	c := rest.CopyConfig(cfg)
	g := &ReadOnlyGuard{}
	prev := c.WrapTransport
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
				return rt.RoundTrip(r)
			}
			g.refused.Add(1)
			return nil, fmt.Errorf("%w: %s %s", ErrReadOnly, r.Method, r.URL.Path)
		})
	}
	return c, g
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
