//go:build integration

package tui

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
	"github.com/ctpool-tui/ctpool-tui/kube/kubetest"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// The soak: the dashboard (the real Model in a real bubbletea Program, fed
// by a kube.Watcher, without a terminal) and the reconciler as
// `reconcile --all --watch --leader-elect` runs it, both in this process on
// clients of their own, over soakPools pools while random claims, releases,
// resizes and Pod deletions run for CTPOOL_SOAK (default 3m; `make soak`
// runs it longer). Goroutines, heap and connections to the API server are
// measured once everything has synced and again after the traffic, and
// must not grow beyond the bounds below; the WATCH requests of each
// informer are counted over the window; and once the cluster is quiet the
// dashboard must show what a fresh read of the cluster shows.

const (
	soakEnv     = "CTPOOL_SOAK"
	soakDefault = 3 * time.Minute
	soakPools   = 5
	// soakRate is the traffic's operations per second (at most; an
	// operation that takes longer delays the next of its worker).
	soakRate    = 3
	soakWorkers = 3
	soakMinSize = 2
	soakMaxSize = 6

	// The bounds of growth from the start of the window to its end.
	soakGoroutineGrowth = 50
	soakHeapFactor      = 2
	soakHeapSlack       = 32 << 20
	soakConnGrowth      = 4
	// soakWatchesPerMinute bounds the WATCH requests of one informer: the
	// API server ends a watch after 5 to 10 minutes, and nothing on the
	// client side should end one sooner.
	soakWatchesPerMinute = 2
	// soakSettle bounds how long the cluster may take to settle and the
	// dashboard to show it once the traffic stops.
	soakSettle = 3 * time.Minute
	// soakMargin is what the run needs beyond the soak, at the least: the
	// warm-up, the operations still running when the traffic stops, the
	// settling and the measurements (usually well under a minute; the
	// waits' own deadlines are soakSettle each).
	soakMargin = 2 * time.Minute
)

var soakIdentities = []string{"ann@example.com", "ben@example.com", "cat@example.com", "dan@example.com"}

func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	s := os.Getenv(soakEnv)
	if s == "" {
		return soakDefault
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration (e.g. 30m)", soakEnv, s)
	}
	return d
}

// oneObject marks the WATCH requests of one object (a field selector): the
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
				return fmt.Sprintf("%s is %s", m.Name, m.State), lost
			case m.Maintenance:
				return m.Name + " is in maintenance", lost
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

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
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

// soakTraffic runs the random operations and counts their outcomes.
type soakTraffic struct {
	env   *kubetest.Env
	eng   *engine.Engine
	pools []string
	mu    sync.Mutex
	ok    map[string]int
	fails map[string]int
	errs  []string
}

func (s *soakTraffic) count(op string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.ok[op]++
		return
	}
	s.fails[op]++
	if len(s.errs) < 10 {
		s.errs = append(s.errs, op+": "+err.Error())
	}
}

// pick reads pool fresh and returns a random member that keep accepts.
func (s *soakTraffic) pick(ctx context.Context, rng *rand.Rand, pool string, keep func(*engine.Member) bool) (*engine.Member, error) {
	snap, err := s.eng.Cluster.Snapshot(ctx, pool)
	if err != nil {
		return nil, err
	}
	v := engine.Observe(snap, time.Now())
	var cands []*engine.Member
	for i := range v.Members {
		if keep(&v.Members[i]) {
			cands = append(cands, &v.Members[i])
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	return cands[rng.IntN(len(cands))], nil
}

// op runs one random operation. It is not cut when the soak ends: the
// traffic stops taking operations then, and those running finish.
func (s *soakTraffic) op(ctx context.Context, rng *rand.Rand) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	pool := s.pools[rng.IntN(len(s.pools))]
	switch n := rng.IntN(9); {
	case n < 3:
		_, err := s.eng.Claim(ctx, pool, soakIdentities[rng.IntN(len(soakIdentities))])
		if errors.Is(err, engine.ErrNoFreeMembers) {
			s.count("claim: no free member", nil)
			return
		}
		s.count("claim", err)
	case n < 6:
		m, err := s.pick(ctx, rng, pool, func(m *engine.Member) bool { return m.Holder() != "" })
		if err != nil || m == nil {
			s.count("release: nothing claimed", err)
			return
		}
		_, err = s.eng.Release(ctx, pool, m.Name, m.Holder())
		s.count("release", err)
	case n < 7:
		_, err := s.eng.Resize(ctx, pool, soakMinSize+rng.IntN(soakMaxSize-soakMinSize+1))
		s.count("resize", err)
	default:
		m, err := s.pick(ctx, rng, pool, func(m *engine.Member) bool { return m.Pod != nil && m.Pod.DeletionTimestamp == nil })
		if err != nil || m == nil {
			s.count("delete pod: no Pod", err)
			return
		}
		err = s.env.Client.CoreV1().Pods(s.env.Namespace).Delete(ctx, m.Pod.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &m.Pod.UID}})
		s.count("delete pod", err)
	}
}

// run issues operations from soakWorkers goroutines at most soakRate a
// second overall until ctx ends, and waits for those running.
func (s *soakTraffic) run(ctx context.Context, seed uint64) {
	tick := time.NewTicker(time.Second / soakRate)
	defer tick.Stop()
	var wg sync.WaitGroup
	for w := range soakWorkers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					s.op(ctx, rng)
				}
			}
		})
	}
	wg.Wait()
}

func (s *soakTraffic) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, op := range []string{"claim", "claim: no free member", "release", "release: nothing claimed", "resize", "delete pod", "delete pod: no Pod"} {
		parts = append(parts, fmt.Sprintf("%s %d", op, s.ok[op]))
		if f := s.fails[op]; f > 0 {
			parts[len(parts)-1] += fmt.Sprintf(" (+%d failed)", f)
		}
	}
	return strings.Join(parts, ", ")
}

func TestIntegrationSoak(t *testing.T) {
	env := kubetest.Require(t)
	soak := soakDuration(t)
	if dl, ok := t.Deadline(); ok && time.Until(dl) < soak+soakMargin {
		t.Fatalf("%s=%s does not fit in the test's -timeout: it needs at least %s more for the setup and the settling", soakEnv, soak, soakMargin)
	}
	port := apiPort(t, env.Config)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	setupStart := time.Now()

	eng := &engine.Engine{Cluster: kube.NewCluster(env.Client, env.Namespace), Namespace: env.Namespace, Now: time.Now}
	var pools []string
	for i := range soakPools {
		pool := fmt.Sprintf("soak%d", i+1)
		spec := engine.Spec{Image: "registry.example/desktop:1", Size: 3, CPU: "10m", Memory: "16Mi", Disk: "1Gi"}
		spec.Default()
		if _, err := eng.Apply(ctx, pool, spec); err != nil {
			t.Fatalf("apply %s: %v", pool, err)
		}
		pools = append(pools, pool)
	}

	// The reconciler, as `reconcile --all --watch --leader-elect` builds it.
	recClient, recWatches := soakClient(t, env)
	var recLog syncBuffer
	ctrl, err := controller.New(controller.Options{
		Client: recClient, Namespace: env.Namespace, Workers: controller.DefaultWorkers, Resync: 30 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&recLog, &slog.HandlerOptions{Level: slog.LevelWarn})),
		LeaderElection: &controller.LeaderElection{
			Namespace: env.Namespace, LeaseDuration: controller.DefaultLeaseDuration,
			RenewDeadline: controller.DefaultRenewDeadline, RetryPeriod: controller.DefaultRetryPeriod,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	recCtx, stopRec := context.WithCancel(ctx)
	recDone := make(chan error, 1)
	go func() { recDone <- ctrl.Run(recCtx) }()
	defer func() { stopRec(); <-recDone }()

	// The dashboard, as the program wires it, in a Program without a terminal.
	dashClient, dashWatches := soakClient(t, env)
	watcher := kube.NewWatcher(dashClient, env.Namespace)
	if err := watcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	m := newModel(ctx, Options{
		Context: "soak", Namespace: env.Namespace, Theme: themes.Dark(), Renderer: themes.NoColorRenderer(io.Discard),
		Now: time.Now, Data: watcher, Events: &kube.Events{Client: dashClient}, Nodes: &kube.Nodes{Client: dashClient},
		Access: accessFor(dashClient, env.Namespace),
	})
	prog := tea.NewProgram(headless{m}, tea.WithContext(ctx), tea.WithInput(nil), tea.WithOutput(io.Discard),
		tea.WithoutSignalHandler(), tea.WithoutRenderer())
	progDone := make(chan error, 1)
	go func() {
		_, err := prog.Run()
		progDone <- err
	}()
	defer func() { cancel(); <-progDone }()
	prog.Send(tea.WindowSizeMsg{Width: 200, Height: 60})

	// compare polls until the cluster is settled and the dashboard shows
	// exactly what a fresh read of the cluster shows.
	var lost []string // members on a Lost PVC when compare last read the cluster
	compare := func(what string) (time.Duration, map[string][]memberRow) {
		t.Helper()
		start := time.Now()
		var last string
		var cluster map[string][]memberRow
		err := pollFor(ctx, soakSettle, func() (bool, error) {
			select {
			case err := <-recDone:
				return false, fmt.Errorf("the reconciler stopped: %v", err)
			case err := <-progDone:
				return false, fmt.Errorf("the dashboard stopped: %v", err)
			default:
			}
			snaps, err := kube.ListPools(ctx, env.Client, env.Namespace)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			views := engine.ObserveAll(snaps, time.Now())
			why, lostNow := settled(views)
			lost = lostNow
			if why != "" || len(views) != soakPools {
				last = fmt.Sprintf("cluster not settled (%d pools): %s", len(views), why)
				return false, nil
			}
			cluster = rowsOf(views)
			var screen map[string][]memberRow
			if err := query(ctx, prog, func(m *Model) { screen = rowsOf(m.views) }); err != nil {
				return false, err
			}
			if d := rowsDiff(screen, cluster); d != "" {
				last = "the dashboard differs: " + d
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
		}
		return time.Since(start), cluster
	}

	warm, _ := compare("the pools settled and on the dashboard")
	// apply reconciles each pool itself, so the pools may settle before the
	// election is won: wait for the reconciler to lead before the soak.
	if err := pollFor(ctx, soakSettle, func() (bool, error) { return ctrl.Leading(), nil }); err != nil {
		t.Fatalf("the reconciler did not lead: %v", err)
	}
	if !watcher.Synced() || !ctrl.Synced() {
		t.Fatal("not synced after the warm-up")
	}
	begin, err := measure(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	windowStart := time.Now()
	dash0, rec0 := dashWatches.counts(), recWatches.counts()
	dashLogged, recLogged := dashWatches.logged(), recWatches.logged()
	t.Logf("warm-up %s; soaking %s at up to %d operations/s over %d pools", time.Since(setupStart).Round(time.Second), soak, soakRate, soakPools)

	traffic := &soakTraffic{env: env, eng: eng, pools: pools, ok: map[string]int{}, fails: map[string]int{}}
	tctx, stopTraffic := context.WithTimeout(ctx, soak)
	traffic.run(tctx, uint64(time.Now().UnixNano()))
	stopTraffic()
	select {
	case err := <-recDone:
		t.Fatalf("the reconciler stopped during the soak: %v", err)
	default:
	}
	trafficEnd := time.Now()

	quiet, cluster := compare("the pools settled after the traffic and the dashboard showing them")
	// The screen itself: each pool's members screen lists each member with
	// its state and holder, as the cluster has them.
	for _, pool := range pools {
		var view string
		if err := query(ctx, prog, func(m *Model) {
			m.Update(tea.WindowSizeMsg{Width: 200, Height: len(cluster[pool]) + 20})
			m.openMembers(pool)
			view = m.View()
		}); err != nil {
			t.Fatal(err)
		}
		for _, r := range cluster[pool] {
			if !screenHas(view, r) {
				t.Errorf("pool %s: the members screen has no line for %v:\n%s", pool, r, view)
			}
		}
	}

	end, err := measure(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	window := time.Since(windowStart)
	dash1, rec1 := dashWatches.counts(), recWatches.counts()

	// Figures, in one block to quote.
	var b strings.Builder
	fmt.Fprintf(&b, "soak %s (window %s incl. %s to settle after the traffic; warm-up settle %s)\n",
		soak, window.Round(time.Second), quiet.Round(time.Millisecond), warm.Round(time.Millisecond))
	fmt.Fprintf(&b, "  operations: %s\n", traffic.summary())
	fmt.Fprintf(&b, "  members left out of the settling on a Lost PVC (the plane's provisioner): %d %v\n", len(lost), lost)
	fmt.Fprintf(&b, "  goroutines: start %d, end %d (bound: end <= start + %d)\n", begin.goroutines, end.goroutines, soakGoroutineGrowth)
	fmt.Fprintf(&b, "  heap (HeapAlloc after GC): start %.1f MiB, end %.1f MiB (bound: end <= %d x start + %d MiB)\n",
		mib(begin.heap), mib(end.heap), soakHeapFactor, soakHeapSlack>>20)
	fmt.Fprintf(&b, "  connections to the API server: start %d, end %d (bound: end <= start + %d)\n", begin.conns, end.conns, soakConnGrowth)
	minutes := window.Minutes()
	limit := int(float64(soakWatchesPerMinute)*minutes) + 1
	var over []string
	for _, c := range []struct {
		name       string
		start, end map[string]int
	}{{"dashboard", dash0, dash1}, {"reconciler", rec0, rec1}} {
		for _, r := range []string{"configmaps", "pods", "persistentvolumeclaims", "leases"} {
			n := c.end[r] - c.start[r]
			fmt.Fprintf(&b, "  WATCH %s %s informer: %d in the window (%.2f/min; %d before it)\n", c.name, r, n, float64(n)/minutes, c.start[r])
			if c.end[r] == 0 {
				over = append(over, fmt.Sprintf("%s never watched %s: the counter does not see the informers", c.name, r))
			}
			if n > limit {
				over = append(over, fmt.Sprintf("%s %s: %d WATCH requests in %s, want at most %d (%d/min)", c.name, r, n, window.Round(time.Second), limit, soakWatchesPerMinute))
			}
		}
	}
	for _, c := range []struct {
		name       string
		start, end map[string]int
	}{{"dashboard", dash0, dash1}, {"reconciler", rec0, rec1}} {
		for _, r := range []string{"pods", "persistentvolumeclaims"} {
			if n := c.end[r+oneObject] - c.start[r+oneObject]; n > 0 {
				fmt.Fprintf(&b, "  WATCH %s %s%s (waits for a deletion, not an informer): %d in the window\n", c.name, r, oneObject, n)
			}
		}
	}
	for _, c := range []struct {
		name string
		reqs []string
	}{{"dashboard", dashWatches.since(dashLogged)}, {"reconciler", recWatches.since(recLogged)}} {
		for _, r := range c.reqs {
			fmt.Fprintf(&b, "  WATCH in the window by the %s: %s\n", c.name, r)
		}
	}
	fmt.Fprintf(&b, "  reconciler warnings and errors: %d lines", recLog.lines())
	if s := traffic.errSample(); s != "" {
		fmt.Fprintf(&b, "\n  first operation errors: %s", s)
	}
	t.Logf("soak figures:\n%s", b.String())

	for _, o := range over {
		t.Error(o)
	}
	if end.goroutines > begin.goroutines+soakGoroutineGrowth {
		t.Errorf("goroutines grew from %d to %d (bound +%d)", begin.goroutines, end.goroutines, soakGoroutineGrowth)
	}
	if end.heap > soakHeapFactor*begin.heap+soakHeapSlack {
		t.Errorf("heap grew from %.1f MiB to %.1f MiB (bound %d x start + %d MiB)", mib(begin.heap), mib(end.heap), soakHeapFactor, soakHeapSlack>>20)
	}
	if begin.conns == 0 {
		t.Error("no connection to the API server was counted: the count does not see this process's sockets")
	}
	if end.conns > begin.conns+soakConnGrowth {
		t.Errorf("connections to the API server grew from %d to %d (bound +%d)", begin.conns, end.conns, soakConnGrowth)
	}
	traffic.mu.Lock()
	for _, op := range []string{"claim", "release", "resize", "delete pod"} {
		if traffic.ok[op] == 0 {
			t.Errorf("no %s succeeded in %s: the traffic did not exercise it", op, trafficEnd.Sub(windowStart).Round(time.Second))
		}
	}
	traffic.mu.Unlock()
}

// screenHas reports whether one line of view shows the member's name,
// state and holder.
func screenHas(view string, r memberRow) bool {
	for _, line := range strings.Split(view, "\n") {
		f := strings.Fields(line)
		if slices.Contains(f, r.Name) && slices.Contains(f, r.State) && (r.Holder == "" || slices.Contains(f, r.Holder)) {
			return true
		}
	}
	return false
}

func (s *soakTraffic) errSample() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.errs, "; ")
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// syncBuffer is a log sink safe for the controller's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Count(b.buf.Bytes(), []byte("\n"))
}
