// Command peers measures the dashboard against k9s on one pool of many
// members on a running plane (make bench-peers): each tool runs in its own
// tmux pseudo-terminal at a fixed size, the two alternating, and for each
// run it reports
//
//   - first screen: from the start of the process until the screen is
//     complete (ctpool-tui: the pool's row shows every member, Ready, with
//     its claims, and the header says live; k9s: the pods view's title shows
//     the namespace's pod count);
//   - RSS after the idle window (VmRSS of /proc/PID/status), and the CPU
//     time (utime+stime of /proc/PID/stat) spent over that window with
//     nothing changing, the window starting at the first screen;
//   - a claim: a member's claim Lease (what the engine's claim creates,
//     engine.ClaimLease) made with kubectl create, and the wall time until
//     the screen shows it (ctpool-tui: the pool's CLAIMED count; k9s: the
//     count in the title of its leases view, which it is switched to, and
//     shows in full, before the claim), from kubectl's return (the Lease
//     exists; the 1 s target) and from its start, and the tool's CPU time
//     from kubectl's start until then;
//   - a churn (PEERS_CHURN long, 0 skips it): with the claim kept, claim
//     Leases of other members created and deleted, alternating, at
//     PEERS_CHURN_RATE changes a second (each deleted about a second after
//     its create), and the tool's CPU time from the churn's start until the
//     screen shows the claims as before it. k9s stays on its leases view:
//     the view that shows the claims, as the pool's CLAIMED count does, so
//     that both tools show every change (on its pods view k9s would not
//     render the Lease changes at all).
//
// The pool is made first when it is not there yet: the objects the engine
// creates (engine.BuildConfigMap, BuildPod, BuildPVC; a claim Lease,
// engine.ClaimLease, on every second member), on kwok nodes added for the
// purpose (PEERS_PODS_PER_NODE each), and the run waits until every Pod is
// Running and Ready and every PVC Bound. The pool stays for the next run
// (-cleanup removes it and the nodes).
//
// Every setting has an environment variable (PEERS_MEMBERS, PEERS_IDLE,
// PEERS_ROUNDS, ...; see -h). It prints a table of the medians with each
// ratio and its target, and exits 1 when a target is missed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

type config struct {
	members, rounds, podsPerNode, cols, rows int
	churnRate                                int
	idle, churn, startTimeout, claimTimeout  time.Duration
	setupTimeout                             time.Duration
	namespace, pool                          string
	ctpool, k9s, kubectl, kubeconfig         string
	cleanup, setupOnly                       bool
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
		fatalf("%s=%q is not a number", name, v)
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fatalf("%s=%q is not a duration: %v", name, v, err)
		}
		return d
	}
	return def
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "peers: "+format+"\n", args...)
	os.Exit(2)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s peers: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func main() {
	home, _ := os.UserHomeDir()
	var c config
	flag.IntVar(&c.members, "members", envInt("PEERS_MEMBERS", 10000), "members of the pool (PEERS_MEMBERS)")
	flag.IntVar(&c.rounds, "rounds", envInt("PEERS_ROUNDS", 2), "runs of each tool, alternating (PEERS_ROUNDS)")
	flag.IntVar(&c.podsPerNode, "pods-per-node", envInt("PEERS_PODS_PER_NODE", 1000), "pod capacity of each kwok node added (PEERS_PODS_PER_NODE)")
	flag.IntVar(&c.cols, "cols", envInt("PEERS_COLS", 120), "terminal columns (PEERS_COLS)")
	flag.IntVar(&c.rows, "rows", envInt("PEERS_ROWS", 40), "terminal rows (PEERS_ROWS)")
	flag.DurationVar(&c.idle, "idle", envDuration("PEERS_IDLE", 60*time.Second), "idle window after the first screen (PEERS_IDLE)")
	flag.DurationVar(&c.churn, "churn", envDuration("PEERS_CHURN", 30*time.Second), "churn window after the claim: claims made and given back at -churn-rate (PEERS_CHURN; 0 skips it)")
	flag.IntVar(&c.churnRate, "churn-rate", envInt("PEERS_CHURN_RATE", 20), "member changes a second in the churn window (PEERS_CHURN_RATE)")
	flag.DurationVar(&c.startTimeout, "start-timeout", envDuration("PEERS_START_TIMEOUT", 5*time.Minute), "longest wait for a first screen (PEERS_START_TIMEOUT)")
	flag.DurationVar(&c.claimTimeout, "claim-timeout", envDuration("PEERS_CLAIM_TIMEOUT", time.Minute), "longest wait for a claim on screen (PEERS_CLAIM_TIMEOUT)")
	flag.DurationVar(&c.setupTimeout, "setup-timeout", envDuration("PEERS_SETUP_TIMEOUT", 90*time.Minute), "longest wait for the pool to be Ready (PEERS_SETUP_TIMEOUT)")
	flag.StringVar(&c.namespace, "namespace", envString("PEERS_NAMESPACE", "ctpool-peers"), "namespace of the pool (PEERS_NAMESPACE)")
	flag.StringVar(&c.pool, "pool", envString("PEERS_POOL", "desk"), "the pool's name (PEERS_POOL)")
	flag.StringVar(&c.ctpool, "ctpool-tui", envString("PEERS_CTPOOL_TUI", "bin/ctpool-tui"), "the ctpool-tui binary (PEERS_CTPOOL_TUI)")
	flag.StringVar(&c.k9s, "k9s", envString("PEERS_K9S", filepath.Join(home, ".cache/ctpool-tui/peers/v0.50.16/k9s")), "the k9s binary (PEERS_K9S)")
	flag.StringVar(&c.kubectl, "kubectl", envString("PEERS_KUBECTL", "kubectl"), "the kubectl binary (PEERS_KUBECTL)")
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "the plane's kubeconfig (KUBECONFIG)")
	flag.BoolVar(&c.cleanup, "cleanup", false, "delete the pool, its namespace and the nodes added, then exit")
	flag.BoolVar(&c.setupOnly, "setup-only", false, "make the pool and wait until it is Ready, then exit")
	flag.Parse()
	if c.churn > 0 && c.churnRate <= 0 {
		fatalf("PEERS_CHURN_RATE must be positive (or PEERS_CHURN=0 to skip the churn)")
	}
	if c.kubeconfig == "" {
		fatalf("set KUBECONFIG to the plane's kubeconfig (make cluster-up prints it)")
	}
	for _, bin := range []*string{&c.ctpool, &c.k9s, &c.kubectl} {
		if c.setupOnly || c.cleanup {
			break
		}
		if bin == &c.k9s && os.Getenv("PEERS_TOOLS") == "ctpool-tui" {
			continue
		}
		p, err := exec.LookPath(*bin)
		if err != nil {
			fatalf("%v", err)
		}
		*bin, _ = filepath.Abs(p)
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		fatalf("tmux is needed for the pseudo-terminals: %v", err)
	}
	ctx := context.Background()
	client := newClient(c.kubeconfig)
	if c.cleanup {
		cleanup(ctx, client, c)
		return
	}
	ensurePool(ctx, client, c)
	if c.setupOnly {
		return
	}

	tools := []tool{ctpoolTool(c), k9sTool(c)}
	if only := os.Getenv("PEERS_TOOLS"); only != "" { // a run of one of them (ctpool-tui or k9s), to try the setup
		var some []tool
		for _, t := range tools {
			if strings.Contains(","+only+",", ","+t.name+",") {
				some = append(some, t)
			}
		}
		tools = some
	}
	results := map[string][]run{}
	for r := range c.rounds {
		for i := range tools {
			t := tools[(i+r)%len(tools)] // alternate which goes first
			res, err := measure(ctx, client, c, t, r)
			if err != nil {
				fatalf("%s, round %d: %v", t.name, r+1, err)
			}
			logf("%s round %d: first screen %v, RSS %.1f MiB, idle CPU %v, claim %v wall %v CPU, churn %v CPU (%v), settled %v after",
				t.name, r+1, res.first.Round(time.Millisecond), res.rssMiB, res.idleCPU, res.claimWall.Round(time.Millisecond), res.claimCPU,
				res.churnCPU, res.churn, res.churnSettled.Round(time.Millisecond))
			results[t.name] = append(results[t.name], res)
		}
	}
	if !report(os.Stdout, c, results) {
		os.Exit(1)
	}
}

func newClient(kubeconfig string) *kubernetes.Clientset {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 2000, 4000 // the setup's writes, not a tool's
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fatalf("client: %v", err)
	}
	return client
}
