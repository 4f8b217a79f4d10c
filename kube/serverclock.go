package kube

import (
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// ServerClock estimates how far an API server's clock is ahead of this
// machine's, from the Date header of its responses (one-second resolution,
// plenty for the minute of skew the engine tolerates). The engine stamps
// its pools' history on the server's clock when this machine's is off
// (engine.Engine.ServerOffset).
type ServerClock struct {
	mu     sync.Mutex
	offset time.Duration
	at     time.Time // local time of the last reading; zero: none
	now    func() time.Time
}

// serverClockStale: a reading older than this is not used (a laptop that
// slept, a clock that was set since).
const serverClockStale = 10 * time.Minute

var serverClocks sync.Map // API server host -> *ServerClock

// ServerClockOf returns the clock of the API server at host (a rest.Config's
// Host), shared by every client of this process that talks to it.
func ServerClockOf(host string) *ServerClock {
	c, _ := serverClocks.LoadOrStore(host, &ServerClock{now: time.Now})
	return c.(*ServerClock)
}

// Offset is the server's clock minus this machine's, from the last response
// of the last serverClockStale; ok is false without one.
func (c *ServerClock) Offset() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() || c.now().Sub(c.at) > serverClockStale {
		return 0, false
	}
	return c.offset, true
}

// observe records a response's Date header read at local time at.
func (c *ServerClock) observe(date string, at time.Time) {
	t, err := http.ParseTime(date)
	if err != nil {
		return
	}
	// The header is the server's time, cut to the second, when it wrote the
	// response: half a second is the expected cut.
	off := t.Add(500 * time.Millisecond).Sub(at)
	c.mu.Lock()
	c.offset, c.at = off.Round(time.Second), at
	c.mu.Unlock()
}

// watchServerClock wraps cfg's transport so that every response updates
// the clock of cfg.Host.
func watchServerClock(cfg *rest.Config) {
	clock := ServerClockOf(cfg.Host)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &dateTransport{next: rt, clock: clock} })
}

// dateTransport reads the Date header of every response into clock.
type dateTransport struct {
	next  http.RoundTripper
	clock *ServerClock
}

func (d *dateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(req)
	if err == nil && resp != nil {
		if date := resp.Header.Get("Date"); date != "" {
			d.clock.observe(date, d.clock.now())
		}
	}
	return resp, err
}

// WrappedRoundTripper lets client-go's helpers reach the transport below.
func (d *dateTransport) WrappedRoundTripper() http.RoundTripper { return d.next }

// StampClocks gives eng this machine's clock name and the clock of the API
// server cfg talks to (cfg nil: none, as for the demo's simulated cluster).
func StampClocks(eng *engine.Engine, cfg *rest.Config) *engine.Engine {
	eng.ClockID = ClockID()
	if cfg != nil {
		eng.ServerOffset = ServerClockOf(cfg.Host).Offset
	}
	return eng
}

// ClockID names this machine's clock for the engine (engine.Engine.ClockID):
// its host name (in a Pod, the Pod's name), or "" when it has none.
func ClockID() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}
