package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// ---------------------------------------------------------------------------
// The tools.

type tool struct {
	name string
	argv []string
	env  []string
	// firstScreen: the screen is complete.
	firstScreen func(screen string) bool
	// toClaims switches to the view of the claims (keys sent), or nil.
	toClaims []string
	// claimsShown: the screen shows n claims.
	claimsShown func(screen string, n int) bool
}

// poolRow matches the pool's row of the pools view: POOL BACKEND IMAGE
// SIZE READY CLAIMED FREE.
func poolRow(pool string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^[^\n]*\s` + regexp.QuoteMeta(pool) + `\s+\S+\s+\S+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)`)
}

func ctpoolTool(c config) tool {
	row := poolRow(c.pool)
	counts := func(screen string) (size, ready, claimed int, ok bool) {
		m := row.FindStringSubmatch(screen)
		if m == nil {
			return 0, 0, 0, false
		}
		size, _ = strconv.Atoi(m[1])
		ready, _ = strconv.Atoi(m[2])
		claimed, _ = strconv.Atoi(m[3])
		return size, ready, claimed, true
	}
	live := func(screen string) bool {
		first, _, _ := strings.Cut(screen, "\n")
		return strings.Contains(first, "live")
	}
	return tool{
		name: "ctpool-tui",
		argv: []string{c.ctpool, "-n", c.namespace},
		firstScreen: func(screen string) bool {
			size, ready, cl, ok := counts(screen)
			return ok && live(screen) && size == c.members && ready == c.members && cl == claims(c)
		},
		claimsShown: func(screen string, n int) bool {
			_, _, cl, ok := counts(screen)
			return ok && cl == n
		},
	}
}

// thousands writes n as k9s does in a title (10,000).
func thousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func k9sTool(c config) tool {
	title := func(screen, kind string, n int) bool {
		for _, line := range strings.Split(strings.ToLower(screen), "\n") {
			if strings.Contains(line, kind+"("+c.namespace+")["+thousands(n)+"]") {
				return true
			}
		}
		return false
	}
	return tool{
		name: "k9s",
		argv: []string{c.k9s, "-n", c.namespace, "-c", "pods"},
		firstScreen: func(screen string) bool {
			return title(screen, "pods", c.members)
		},
		toClaims: []string{":leases", "Enter"},
		claimsShown: func(screen string, n int) bool {
			return title(screen, "leases", n)
		},
	}
}

// k9sHome is a fresh configuration for k9s: its defaults, without the
// check for a newer release (the plane has no network to ask).
func k9sHome(dir string) ([]string, error) {
	conf := filepath.Join(dir, "config", "k9s")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(conf, "config.yaml"), []byte("k9s:\n  skipLatestRevCheck: true\n"), 0o644); err != nil {
		return nil, err
	}
	return []string{"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"XDG_DATA_HOME=" + filepath.Join(dir, "data"), "XDG_CACHE_HOME=" + filepath.Join(dir, "cache")}, nil
}

// ---------------------------------------------------------------------------
// One run.

type run struct {
	first              time.Duration
	rssMiB             float64
	idleCPU            time.Duration
	claimWall          time.Duration
	claimCPU           time.Duration
	kubectl            time.Duration
	claimsBeforeScreen time.Duration // k9s: from the switch to the leases view until it is shown
	churn              churnResult   // the churn window (zero: skipped)
	churnCPU           time.Duration // the tool's CPU time from the churn's start until it settled
	churnSettled       time.Duration // from the churn's end until the screen showed the claims as before it
}

// pane is a tmux session of its own server (socket), one per run.
type pane struct {
	socket, name string
	pid          int
}

func (p *pane) tmux(args ...string) ([]byte, error) {
	out, err := exec.Command("tmux", append([]string{"-L", p.socket}, args...)...).Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		err = fmt.Errorf("tmux %s: %v: %s", args[0], err, bytes.TrimSpace(ee.Stderr))
	}
	return out, err
}

func (p *pane) screen() string {
	out, err := p.tmux("capture-pane", "-p", "-t", p.name)
	if err != nil {
		return ""
	}
	return string(out)
}

// waitScreen polls the screen every 20ms until cond holds or the timeout.
func (p *pane) waitScreen(timeout time.Duration, cond func(string) bool) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		s := p.screen()
		if cond(s) {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("not on screen within %v; the screen:\n%s", timeout, s)
		}
		time.Sleep(20 * time.Millisecond) // the poll interval of a wait on a deadline
	}
}

// stop ends the tool and the tmux server, and waits for the tool's exit.
func (p *pane) stop() {
	_, _ = p.tmux("kill-server")
	deadline := time.Now().Add(10 * time.Second)
	for alive(p.pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the poll interval of a wait on a deadline
	}
	if alive(p.pid) {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

var clockTick = func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if n, perr := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && perr == nil && n > 0 {
		return float64(n)
	}
	return 100
}()

// cpu is the process's user and system CPU time so far.
func cpu(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+2:])) // from field 3, state
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return time.Duration((utime + stime) / clockTick * float64(time.Second))
}

// rss is the process's resident set in MiB.
func rss(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func measure(ctx context.Context, client kubernetes.Interface, c config, t tool, round int) (run, error) {
	var res run
	dir, err := os.MkdirTemp("", "ctpool-peers-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	env := []string{"KUBECONFIG=" + c.kubeconfig}
	if t.name == "k9s" {
		home, err := k9sHome(dir)
		if err != nil {
			return res, err
		}
		env = append(env, home...)
	}
	p := &pane{socket: fmt.Sprintf("ctpool-peers-%d-%d", os.Getpid(), round), name: "peers"}
	args := []string{"-f", "/dev/null", "new-session", "-d", "-s", p.name, "-x", strconv.Itoa(c.cols), "-y", strconv.Itoa(c.rows),
		"env"}
	args = append(append(args, env...), t.argv...)
	logf("%s round %d: starting %s", t.name, round+1, strings.Join(t.argv, " "))
	start := time.Now()
	if _, err := p.tmux(args...); err != nil {
		return res, err
	}
	defer p.stop()
	out, err := p.tmux("display-message", "-p", "-t", p.name, "#{pane_pid}")
	if err != nil {
		return res, err
	}
	if p.pid, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		return res, fmt.Errorf("pane pid %q: %v", out, err)
	}

	shown, err := p.waitScreen(c.startTimeout, t.firstScreen)
	if err != nil {
		return res, fmt.Errorf("first screen: %w", err)
	}
	res.first = shown.Sub(start)

	// The idle window: nothing changes in the pool.
	cpu0 := cpu(p.pid)
	time.Sleep(c.idle) // the window measured, not a wait for a condition
	res.idleCPU = cpu(p.pid) - cpu0
	res.rssMiB = rss(p.pid)
	if !alive(p.pid) {
		return res, fmt.Errorf("the tool exited; the screen:\n%s", p.screen())
	}

	// The claim.
	if t.toClaims != nil {
		switched := time.Now()
		if _, err := p.tmux(append([]string{"send-keys", "-t", p.name}, t.toClaims...)...); err != nil {
			return res, err
		}
		at, err := p.waitScreen(c.startTimeout, func(s string) bool { return t.claimsShown(s, claims(c)) })
		if err != nil {
			return res, fmt.Errorf("the claims view: %w", err)
		}
		res.claimsBeforeScreen = at.Sub(switched)
	}
	member := engine.MemberName(c.pool, 2*round+1) // not claimed at rest
	lease := engine.ClaimLease(c.namespace, c.pool, member, "peers@example.com", time.Now())
	lease.TypeMeta = metav1.TypeMeta{APIVersion: coordinationv1.SchemeGroupVersion.String(), Kind: "Lease"}
	manifest, err := json.Marshal(lease)
	if err != nil {
		return res, err
	}
	defer func() {
		zero := int64(0)
		if err := client.CoordinationV1().Leases(c.namespace).Delete(ctx, lease.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); ignoreNotFound(err) != nil {
			logf("removing the claim %s: %v", lease.Name, err)
		}
	}()
	cpu1 := cpu(p.pid)
	claimStart := time.Now()
	kubectl := exec.Command(c.kubectl, "--kubeconfig", c.kubeconfig, "create", "-f", "-")
	kubectl.Stdin = bytes.NewReader(manifest)
	if out, err := kubectl.CombinedOutput(); err != nil {
		return res, fmt.Errorf("kubectl create the claim: %v: %s", err, out)
	}
	res.kubectl = time.Since(claimStart)
	at, err := p.waitScreen(c.claimTimeout, func(s string) bool { return t.claimsShown(s, claims(c)+1) })
	if err != nil {
		return res, fmt.Errorf("the claim: %w", err)
	}
	res.claimWall = at.Sub(claimStart)
	res.claimCPU = cpu(p.pid) - cpu1

	// The churn: the claim stays, claims come and go on other members; it
	// counts until the screen shows the claims as before it (the tool kept up).
	if c.churn > 0 {
		cpu2 := cpu(p.pid)
		res.churn = churn(ctx, client, c)
		ended := time.Now()
		at, err := p.waitScreen(c.claimTimeout, func(s string) bool { return t.claimsShown(s, claims(c)+1) })
		if err != nil {
			return res, fmt.Errorf("after the churn (%v): %w", res.churn, err)
		}
		res.churnCPU = cpu(p.pid) - cpu2
		res.churnSettled = at.Sub(ended)
		if !alive(p.pid) {
			return res, fmt.Errorf("the tool exited in the churn; the screen:\n%s", p.screen())
		}
	}
	return res, nil
}
