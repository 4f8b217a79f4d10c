//go:build integration

package tui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
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
	var recLog kubetest.SyncBuffer
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
		Now: time.Now, Data: watcher, Nodes: &kube.Nodes{Client: dashClient}, Resolver: &resolver{events: &kube.Events{Client: dashClient}, access: accessFor(dashClient, env.Namespace)},
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
	var traffic *soakTraffic
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
			if err := query(ctx, prog, func(m *Model) { screen = rowsOf(m.pools) }); err != nil {
				return false, err
			}
			if d := rowsDiff(screen, cluster); d != "" {
				last = "the dashboard differs: " + d
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			if traffic != nil {
				t.Logf("operations: %s; failures: %s", traffic.summary(), traffic.errSample())
			}
			t.Logf("the reconciler's warnings and errors:\n%s", recLog.String())
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

	traffic = &soakTraffic{env: env, eng: eng, pools: pools, ok: map[string]int{}, fails: map[string]int{}}
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
			m.openMembers(poolRefIn(m, pool))
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
	fmt.Fprintf(&b, "  reconciler warnings and errors: %d lines", recLog.Lines())
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

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
