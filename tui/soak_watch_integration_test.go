//go:build integration

package tui

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// engine's waits for a deleted object to go, not an informer's.
const oneObject = " (one object)"

// watchCount counts the WATCH requests leaving one client, by resource.
type watchCount struct {
	mu sync.Mutex
	n  map[string]int
	// log is each WATCH request's time, resource and query, to show those
	// of the window.
	log []string
}

func (c *watchCount) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(r *http.Request) (*http.Response, error) {
		if kube.LongRunning(r) && r.URL.Query().Get("watch") != "" {
			parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
			key := parts[len(parts)-1]
			if r.URL.Query().Get("fieldSelector") != "" {
				// Not an informer: the engine waiting for one object to go.
				key += oneObject
			}
			c.mu.Lock()
			c.n[key]++
			c.log = append(c.log, time.Now().Format("15:04:05")+" "+parts[len(parts)-1]+"?"+r.URL.RawQuery)
			c.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (c *watchCount) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return copyCounts(c.n)
}

// since returns the requests logged after the first n.
func (c *watchCount) since(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log[min(n, len(c.log)):]...)
}

func (c *watchCount) logged() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.log)
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// soakClient is a client as the program builds it (kube.Options with the
// default request bound, protobuf), with its WATCH requests counted.
func soakClient(t *testing.T, env *kubetest.Env) (kubernetes.Interface, *watchCount) {
	t.Helper()
	o := kube.NewOptions()
	*o.Flags.KubeConfig = filepath.Join(env.Dir, "admin.kubeconfig")
	cfg, err := o.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	wc := &watchCount{n: map[string]int{}}
	cfg.Wrap(wc.wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, wc
}

// queryMsg runs fn on the Program's goroutine, with the model, and closes done.
type queryMsg struct {
	fn   func(*Model)
	done chan struct{}
}

// headless is the root model of the soak's Program: the dashboard's Model,
// and queries answered between its messages.
type headless struct{ m *Model }

func (h headless) Init() tea.Cmd { return h.m.Init() }
func (h headless) View() string  { return h.m.View() }

func (h headless) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if q, ok := msg.(queryMsg); ok {
		q.fn(h.m)
		close(q.done)
		return h, nil
	}
	_, cmd := h.m.Update(msg)
	return h, cmd
}

// query runs fn with the model on the Program's goroutine.
func query(ctx context.Context, p *tea.Program, fn func(*Model)) error {
	q := queryMsg{fn: fn, done: make(chan struct{})}
	p.Send(q)
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// memberRow is what the dashboard must agree with the cluster on.
type memberRow struct{ Name, State, Holder string }

func (r memberRow) String() string { return r.Name + " " + r.State + " " + r.Holder }

// rowsOf reduces observed pools to their members' names, states and holders.
func rowsOf(views []engine.PoolView) map[string][]memberRow {
	out := map[string][]memberRow{}
	for _, v := range views {
		rows := []memberRow{}
		for i := range v.Members {
			m := &v.Members[i]
			rows = append(rows, memberRow{m.Name, string(m.State), m.Holder()})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
		out[v.Name] = rows
	}
	return out
}

// rowsDiff describes how two sets of pools differ ("" when equal).
func rowsDiff(screen, cluster map[string][]memberRow) string {
	var b strings.Builder
	names := map[string]bool{}
	for k := range screen {
		names[k] = true
	}
	for k := range cluster {
		names[k] = true
	}
	var sorted []string
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, p := range sorted {
		s, c := screen[p], cluster[p]
		if !slices.Equal(s, c) {
			fmt.Fprintf(&b, "pool %s: screen %v, cluster %v; ", p, s, c)
		}
	}
	return b.String()
}

// settled reports why the cluster is not yet as the reconciler leaves it
// ("" when it is): every member Ready and out of maintenance, at least Size
// members, and no unclaimed one above the size. A member whose PVC is Lost
// is left out and counted: the plane's kwok provisioner can bind a PVC
// recreated under the same name to the volume of its deleted predecessor
// (its stage patches the PVC by name), which leaves the new PVC Lost and
// its Pod unschedulable for good.
func settled(views []engine.PoolView) (why string, lost []string) {
	for _, v := range views {
		if !v.Defined {
			return "pool " + v.Name + " has no definition", lost
		}
		for i := range v.Members {
			m := &v.Members[i]
			switch {
			case m.PVC != nil && m.PVC.Status.Phase == corev1.ClaimLost:
				lost = append(lost, m.Name)
			case m.State != engine.StateReady:
				return fmt.Sprintf("%s is %s%s", m.Name, m.State, memberDetail(m)), lost
			case m.InMaintenance():
				return m.Name + " is in maintenance" + memberDetail(m), lost
			case m.AboveSize && !m.Claimed:
				return m.Name + " is unclaimed above the size", lost
			}
		}
		if len(v.Members) < v.Spec.Size {
			return fmt.Sprintf("pool %s has %d of %d members", v.Name, len(v.Members), v.Spec.Size), lost
		}
	}
	return "", lost
}

// memberDetail is what a failed wait says of an unsettled member: its
// message, its Lease's reading and its problems.
func memberDetail(m *engine.Member) string {
	var parts []string
	if m.Message != "" {
		parts = append(parts, "message "+strconv.Quote(m.Message))
	}
	if c := m.LeaseRead(); c != nil {
		parts = append(parts, fmt.Sprintf("lease holder %q (maintenance %t, stale %t, since %s)",
			c.Holder, m.InMaintenance(), c.Stale, c.Since.UTC().Format(time.RFC3339)))
	}
	if m.PVC != nil && len(m.PVC.Annotations) > 0 {
		parts = append(parts, fmt.Sprintf("PVC annotations %v", m.PVC.Annotations))
	}
	if len(m.Problems) > 0 {
		parts = append(parts, "problems "+strings.Join(m.Problems, "; "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// pollFor calls cond every 100ms until it returns true or an error, or until
// timeout passes.
func pollFor(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok, err := cond(); ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not after %s", timeout)
		case <-tick.C:
		}
	}
}

// figures are the process's measurements at one moment.
type figures struct {
	goroutines int
	heap       uint64
	conns      int
}

// stableGoroutines polls runtime.NumGoroutine and returns the least count of
// a one-second window once two windows in a row agree on it (short-lived
// goroutines of Cmds and requests come and go within a window).
func stableGoroutines(ctx context.Context) (int, error) {
	prev := -1
	for {
		least := runtime.NumGoroutine()
		win := time.NewTimer(time.Second)
		tick := time.NewTicker(20 * time.Millisecond)
	window:
		for {
			select {
			case <-tick.C:
				least = min(least, runtime.NumGoroutine())
			case <-win.C:
				break window
			case <-ctx.Done():
				tick.Stop()
				win.Stop()
				return prev, ctx.Err()
			}
		}
		tick.Stop()
		if least == prev {
			return least, nil
		}
		prev = least
	}
}

// apiConns counts this process's established TCP connections to port: the
// sockets of /proc/self/fd found in state 01 in /proc/self/net/tcp{,6}
// with that remote port.
func apiConns(port int) (int, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	mine := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		data, err := os.ReadFile(table)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Scan() // the header
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[3] != "01" || !mine[f[9]] {
				continue
			}
			_, hexPort, ok := strings.Cut(f[2], ":")
			if !ok {
				continue
			}
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && int(p) == port {
				n++
			}
		}
	}
	return n, nil
}

func apiPort(t *testing.T, cfg *rest.Config) int {
	t.Helper()
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("API server address %q: %v", cfg.Host, err)
	}
	p := u.Port()
	if p == "" {
		p = "443"
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("API server port %q: %v", p, err)
	}
	return port
}

func measure(ctx context.Context, port int) (figures, error) {
	g, err := stableGoroutines(ctx)
	if err != nil {
		return figures{}, fmt.Errorf("goroutines: %w", err)
	}
	c, err := apiConns(port)
	if err != nil {
		return figures{}, fmt.Errorf("connections: %w", err)
	}
	return figures{goroutines: g, heap: heapAlloc(), conns: c}, nil
}
