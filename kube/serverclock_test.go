package kube

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestServerClockReadsTheDateHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		skew time.Duration // of the server's clock
	}{{"in step", 0}, {"a day ahead", 24 * time.Hour}, {"an hour behind", -time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Date", time.Now().Add(tc.skew).UTC().Format(http.TimeFormat))
				_, _ = w.Write([]byte("{}"))
			}))
			defer srv.Close()
			cfg := &rest.Config{Host: srv.URL}
			clock := ServerClockOf(cfg.Host)
			if _, ok := clock.Offset(); ok {
				t.Fatal("an offset before any response")
			}
			watchServerClock(cfg)
			rt, err := rest.TransportFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&http.Client{Transport: rt}).Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			off, ok := clock.Offset()
			if !ok || off < tc.skew-2*time.Second || off > tc.skew+2*time.Second {
				t.Fatalf("offset %s (%v), want about %s", off, ok, tc.skew)
			}
			// A reading goes stale.
			clock.mu.Lock()
			clock.now = func() time.Time { return time.Now().Add(serverClockStale + time.Minute) }
			clock.mu.Unlock()
			if _, ok := clock.Offset(); ok {
				t.Fatal("a stale reading was used")
			}
		})
	}
}
