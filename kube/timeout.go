package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultRequestBound bounds an ordinary request when --request-timeout is
// 0 (its default, as in kubectl), so that an API server that accepts a
// connection and then hangs is still detected.
const DefaultRequestBound = time.Minute

// RequestTimeout is the bound of one ordinary request: --request-timeout
// when given (a duration, or plain seconds as kubectl takes it), else
// DefaultRequestBound.
func (o *Options) RequestTimeout() (time.Duration, error) {
	if o.Flags.Timeout == nil {
		return DefaultRequestBound, nil
	}
	v := strings.TrimSpace(*o.Flags.Timeout)
	if v == "" || v == "0" {
		return DefaultRequestBound, nil
	}
	if !strings.ContainsAny(v, "nsuµmh") {
		v += "s" // kubectl takes plain seconds
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid --request-timeout %q: want a duration such as 10s or 1m (0: the built-in bound of %s)", *o.Flags.Timeout, DefaultRequestBound)
	}
	if d == 0 {
		return DefaultRequestBound, nil
	}
	return d, nil
}

// BoundOrdinaryRequests returns a transport wrapper that gives each ordinary
// request (body included) at most d. Long-running requests pass untouched: a
// watch (informers and reflectors too), a followed log, and exec, attach,
// port-forward and proxy streams. Their only bound is the caller's context
// and the API server's own watch timeout.
func BoundOrdinaryRequests(d time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		if d <= 0 {
			return rt
		}
		return &boundedTransport{next: rt, bound: d}
	}
}

type boundedTransport struct {
	next  http.RoundTripper
	bound time.Duration
}

func (b *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if LongRunning(req) {
		return b.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), b.bound)
	resp, err := b.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// WrappedRoundTripper lets client-go's debugging and cancellation helpers
// see through the wrapper.
func (b *boundedTransport) WrappedRoundTripper() http.RoundTripper { return b.next }

// cancelOnClose releases the request's deadline when the body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// LongRunning reports whether a request to the API server streams for as
// long as the caller wants: a watch, a followed log, or an upgraded
// connection (exec, attach, port-forward) or proxy.
func LongRunning(req *http.Request) bool {
	q := req.URL.Query()
	if w := q.Get("watch"); w == "true" || w == "1" {
		return true
	}
	if req.Header.Get("Upgrade") != "" || strings.Contains(strings.ToLower(req.Header.Get("Connection")), "upgrade") {
		return true
	}
	path := req.URL.Path
	if strings.HasSuffix(path, "/log") {
		f := q.Get("follow")
		return f == "true" || f == "1"
	}
	for _, sub := range []string{"/exec", "/attach", "/portforward"} {
		if strings.HasSuffix(path, sub) {
			return true
		}
	}
	return strings.Contains(path, "/proxy")
}
