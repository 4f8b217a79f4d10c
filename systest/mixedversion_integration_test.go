//go:build integration

package systest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// The mixed-version run: an earlier release's reconciler and this one's,
// each a process of its own binary with --leader-elect, hand the election
// Lease back and forth (SIGTERM to the leader, the other takes over, the
// stopped one starts again as a candidate) while users and a broker claim
// and release and an administrator applies new images and sizes. At the end
// the contract's invariants must hold across the versions: no claimed
// member's Pod or PVC replaced, no claim lost or handed to another identity,
// no member built twice for one definition, the pool converged, and the
// recorded status read by both releases. docs/upgrades.md says what was
// measured.

const (
	// oldReleaseEnv names the earlier release's binary (hack/oldrelease/build
	// COMMIT prints one); without it the run is skipped, or failed when
	// requireOldReleaseEnv is set (make test-upgrade sets it).
	oldReleaseEnv        = "CTPOOL_OLD_RELEASE_BINARY"
	requireOldReleaseEnv = "CTPOOL_REQUIRE_OLD_RELEASE"
	// mixedHandOversEnv sets the number of hand-overs (default 6: each
	// version takes the Lease over three times).
	mixedHandOversEnv     = "CTPOOL_MIXED_HANDOVERS"
	mixedDefaultHandOvers = 6
	// oldStatusUnreadableEnv says that the earlier release cannot read the
	// status this release records (f8fce35 reads only the one-object-per-row
	// form, from before the third round's compact rows): its status and
	// --once must then report the status invalid rather than read it.
	oldStatusUnreadableEnv = "CTPOOL_OLD_RELEASE_STATUS_UNREADABLE"
	// mixedLogDirEnv keeps the reconcilers' logs in a directory (default:
	// the test's temporary one, removed at its end).
	mixedLogDirEnv = "CTPOOL_MIXED_LOG_DIR"
	// mixedLease: the election's timings, short so that a hand-over after a
	// crash costs seconds (a SIGTERM releases the Lease at once).
	mixedLease, mixedRenew, mixedRetry = 4 * time.Second, 3 * time.Second, time.Second
	// mixedLeadFor: how long each leader leads before it is stopped, while
	// the actors go on: a window of the run, not a wait for a condition.
	mixedLeadFor = 10 * time.Second
	// mixedTakeover bounds a hand-over: the stopped leader releases the
	// Lease, the standby retries every mixedRetry.
	mixedTakeover = 30 * time.Second
	// reconcilerManager is the field manager of both binaries' writes (the
	// product token of their user agent).
	reconcilerManager = "ctpool-tui"
	mixedSize         = 6
	// burstWindow: the rebuilds a leader makes within it count as one
	// rollout step (the figure "most Pods created at once").
	burstWindow = 2 * time.Second
)

var (
	mixedUsers  = []string{"ann@example.com", "ben@example.com", "cat@example.com"}
	mixedBroker = "desk@broker.example"
)

// electedProcess is one reconciler process: reconcile --all --watch
// --leader-elect in the run's namespace, its identity given as POD_NAME.
type electedProcess struct {
	id, version string
	bin         string
	cmd         *exec.Cmd
	log         string
	exited      chan error
	stopOnce    sync.Once
	exitErr     error
}

func startElected(t *testing.T, env *kubetest.Env, bin, version, id string) *electedProcess {
	t.Helper()
	args := []string{"reconcile", "--all", "--watch", "--leader-elect", "--interval", "5s",
		"--leader-elect-lease-duration", mixedLease.String(), "--leader-elect-renew-deadline", mixedRenew.String(),
		"--leader-elect-retry-period", mixedRetry.String(),
		"--kubeconfig", filepath.Join(env.Dir, "admin.kubeconfig"), "--namespace", env.Namespace}
	dir := os.Getenv(mixedLogDirEnv)
	if dir == "" {
		dir = t.TempDir()
	}
	p := &electedProcess{id: id, version: version, bin: bin, log: filepath.Join(dir, id+".log"), exited: make(chan error, 1)}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.Env = append(os.Environ(), "POD_NAME="+id)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s %s: %v", bin, strings.Join(args, " "), err)
	}
	_ = f.Close()
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.stop() })
	return p
}

// stop sends SIGTERM, as Kubernetes does, and returns the exit error (nil:
// exit 0). A process still there after 30 s is killed.
func (p *electedProcess) stop() error {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case p.exitErr = <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.exitErr = errors.New("still running 30s after SIGTERM; killed")
		}
	})
	return p.exitErr
}

func (p *electedProcess) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// leaderSpan is one holder of the election Lease, from when the run saw it.
type leaderSpan struct {
	id   string
	from time.Time
}

// leaderLog follows the election Lease's holder.
type leaderLog struct {
	mu    sync.Mutex
	spans []leaderSpan
}

func (l *leaderLog) follow(ctx context.Context, env *kubetest.Env) {
	leases := env.Client.CoordinationV1().Leases(env.Namespace)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if ls, err := leases.Get(ctx, controller.LeaseName, metav1.GetOptions{}); err == nil {
			id := ""
			if ls.Spec.HolderIdentity != nil {
				id = *ls.Spec.HolderIdentity
			}
			l.mu.Lock()
			if n := len(l.spans); n == 0 || l.spans[n-1].id != id {
				l.spans = append(l.spans, leaderSpan{id: id, from: time.Now()})
			}
			l.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (l *leaderLog) current() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.spans); n > 0 {
		return l.spans[n-1].id
	}
	return ""
}

// at is the holder at wall time t ("" before the first or between holders).
func (l *leaderLog) at(t time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.spans), func(i int) bool { return l.spans[i].from.After(t) })
	if i == 0 {
		return ""
	}
	return l.spans[i-1].id
}

// podBirth is a member Pod as it was created: by whom (its first field
// manager of the main resource) and from which source.
type podBirth struct {
	member, source, manager string
	uid                     types.UID
	at                      time.Time
}

// watchBirths records every new member Pod of the pool until ctx ends.
func watchBirths(ctx context.Context, t *testing.T, env *kubetest.Env, mu *sync.Mutex, out *[]podBirth) {
	pods := env.Client.CoreV1().Pods(env.Namespace)
	sel := engine.LabelPool + "=" + chaosPool
	l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[types.UID]bool{}
	for _, p := range l.Items {
		seen[p.UID] = true
	}
	rv := l.ResourceVersion
	go func() {
		for ctx.Err() == nil {
			w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				return // the run's checks of the history fail on what is missed
			}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				rv = p.ResourceVersion
				if ev.Type != watch.Added || seen[p.UID] {
					continue
				}
				seen[p.UID] = true
				b := podBirth{member: p.Labels[engine.LabelMember], source: p.Labels[engine.LabelSource], uid: p.UID, at: time.Now()}
				for _, f := range p.ManagedFields {
					if f.Subresource == "" {
						b.manager = f.Manager
						break
					}
				}
				mu.Lock()
				*out = append(*out, b)
				mu.Unlock()
			}
			w.Stop()
		}
	}()
}

// statusWrite is one write of the pool's recorded status: when the watch
// delivered it and the status's top-level keys.
type statusWrite struct {
	at   time.Time
	keys []string
}

// watchStatus records every change of the pool's recorded status until ctx
// ends.
func watchStatus(ctx context.Context, t *testing.T, env *kubetest.Env, mu *sync.Mutex, out *[]statusWrite) {
	cms := env.Client.CoreV1().ConfigMaps(env.Namespace)
	w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + engine.ConfigMapName(chaosPool)})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		last := ""
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || cm.Data[engine.KeyStatus] == last {
				continue
			}
			last = cm.Data[engine.KeyStatus]
			var top map[string]any
			if err := yaml.Unmarshal([]byte(last), &top); err != nil {
				continue // ParseStatus's check at the end judges the last one
			}
			sw := statusWrite{at: time.Now()}
			for k := range top {
				sw.keys = append(sw.keys, k)
			}
			mu.Lock()
			*out = append(*out, sw)
			mu.Unlock()
		}
	}()
}

// mixedClaim is a claim an actor of the run holds, and its member's objects
// when it was made.
type mixedClaim struct {
	identity, member string
	pod, pvc         types.UID
}

// mixedRun is the run's actors and what they found: counts of operations,
// the first error of each kind, the claims held, the violations.
type mixedRun struct {
	env  *kubetest.Env
	user *engine.Engine
	// leases writes the broker's Leases by name.
	leases leaseWriter
	mu     sync.Mutex
	counts map[string]int
	errs   map[string]string
	held   map[string]*mixedClaim // by identity
	asked  map[string]int         // member -> releases asked of a broker's claim
	bad    []string
}

// leaseWriter creates Leases (the broker's, by name).
type leaseWriter interface {
	Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error)
}

func (r *mixedRun) count(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.counts[name]++
		return
	}
	r.counts[name+" failed"]++
	if _, ok := r.errs[name]; !ok {
		r.errs[name] = err.Error()
	}
}

func (r *mixedRun) violate(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bad = append(r.bad, fmt.Sprintf(format, a...))
}

// objects reads a member's Pod and PVC UIDs ("" when missing or deleting).
func (r *mixedRun) objects(ctx context.Context, member string) (pod, pvc types.UID, err error) {
	p, err := r.env.Client.CoreV1().Pods(r.env.Namespace).Get(ctx, member, metav1.GetOptions{})
	switch {
	case err == nil && p.DeletionTimestamp == nil:
		pod = p.UID
	case err != nil && !apierrors.IsNotFound(err):
		return "", "", err
	}
	c, err := r.env.Client.CoreV1().PersistentVolumeClaims(r.env.Namespace).Get(ctx, engine.PVCName(member), metav1.GetOptions{})
	switch {
	case err == nil && c.DeletionTimestamp == nil:
		pvc = c.UID
	case err != nil && !apierrors.IsNotFound(err):
		return "", "", err
	}
	return pod, pvc, nil
}

// checkHeld checks a held claim against the API server: its Lease still
// names its identity, its Pod and PVC are those it was made on.
func (r *mixedRun) checkHeld(ctx context.Context, c *mixedClaim, when string) {
	l, err := r.env.Client.CoordinationV1().Leases(r.env.Namespace).Get(ctx, engine.LeaseName(c.member), metav1.GetOptions{})
	switch {
	case err != nil:
		r.violate("%s: the claim of %q on %s is lost: its Lease: %v", when, c.identity, c.member, err)
		return
	case holderOf(l) != c.identity:
		r.violate("%s: the claim of %q on %s passed to %q", when, c.identity, c.member, holderOf(l))
		return
	}
	pod, pvc, err := r.objects(ctx, c.member)
	if err != nil {
		r.count("check held: read", err)
		return
	}
	if c.pod == "" {
		c.pod = pod // the claim started it: its first Pod counts
	}
	if pod != c.pod || pvc != c.pvc {
		r.violate("%s: %s, claimed by %q, was touched: Pod %s (was %s), PVC %s (was %s)", when, c.member, c.identity, pod, c.pod, pvc, c.pvc)
	}
}

func (r *mixedRun) claim(ctx context.Context, id string) {
	res, err := r.user.Claim(ctx, chaosPool, id)
	if errors.Is(err, engine.ErrNoFreeMembers) {
		r.count("claim: no free member", nil)
		return
	}
	r.count("claim", err)
	if err != nil {
		return
	}
	c := &mixedClaim{identity: id, member: res.Member}
	if c.pod, c.pvc, err = r.objects(ctx, res.Member); err != nil {
		r.count("claim: read", err)
	}
	r.mu.Lock()
	r.held[id] = c
	r.mu.Unlock()
}

// brokerClaim writes the broker's Lease by name, with no label, on a Ready
// member without a Lease, as a broker in front of the pool does.
func (r *mixedRun) brokerClaim(ctx context.Context, rng *rand.Rand) {
	snap, err := r.user.Cluster.Snapshot(ctx, chaosPool)
	if err != nil {
		r.count("broker claim: read", err)
		return
	}
	v := engine.Observe(snap, time.Now())
	var cands []*engine.Member
	for i := range v.Members {
		if m := &v.Members[i]; m.Lease == nil && m.State == engine.StateReady && !m.AboveSize && !m.Drift && m.PVC != nil && m.PVC.DeletionTimestamp == nil {
			cands = append(cands, m)
		}
	}
	if len(cands) == 0 {
		r.count("broker claim: no free member", nil)
		return
	}
	m := cands[rng.IntN(len(cands))]
	now := metav1.NewMicroTime(time.Now())
	_, err = r.leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: engine.LeaseName(m.Name), Namespace: r.env.Namespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(mixedBroker), AcquireTime: &now, RenewTime: &now,
			LeaseDurationSeconds: ptr.To(int32(engine.ClaimDuration / time.Second)),
		},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		r.count("broker claim: lost the race for a member", nil)
		return
	}
	r.count("broker claim", err)
	if err != nil {
		return
	}
	c := &mixedClaim{identity: mixedBroker, member: m.Name, pvc: m.PVC.UID}
	if m.Pod != nil {
		c.pod = m.Pod.UID
	}
	r.mu.Lock()
	r.held[mixedBroker] = c
	r.mu.Unlock()
}

func (r *mixedRun) release(ctx context.Context, c *mixedClaim) {
	r.checkHeld(ctx, c, "before its release")
	r.mu.Lock()
	r.asked[c.member]++
	r.mu.Unlock()
	res, err := r.user.Release(ctx, chaosPool, c.member, c.identity)
	if err == nil && res.NoOp {
		err = fmt.Errorf("release of %s by %q did nothing: the claim was gone", c.member, c.identity)
		r.violate("%v", err)
	}
	r.count("release", err)
	r.mu.Lock()
	delete(r.held, c.identity)
	r.mu.Unlock()
}

// actor claims and releases as identity id until ctx ends, one step per
// pace tick.
func (r *mixedRun) actor(ctx context.Context, id string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	pace := time.NewTicker(time.Duration(500+rng.IntN(500)) * time.Millisecond)
	defer pace.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-pace.C:
		}
		op, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		r.mu.Lock()
		c := r.held[id]
		r.mu.Unlock()
		switch {
		case c != nil && rng.IntN(3) == 0:
			r.release(op, c)
		case c != nil:
			r.checkHeld(op, c, "while held")
		case id == mixedBroker:
			r.brokerClaim(op, rng)
		default:
			r.claim(op, id)
		}
		cancel()
	}
}

// admin applies a new image, and a new size, every period until ctx ends.
func (r *mixedRun) admin(ctx context.Context, period time.Duration) {
	sizes := []int{8, 5, 6}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		spec := pooltest.SmallSpec(fmt.Sprintf("registry.example/desktop:%d", i+2), sizes[i%len(sizes)])
		op, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		_, err := r.user.Apply(op, chaosPool, spec)
		cancel()
		r.count("apply", err)
	}
}

func mixedHandOvers(t *testing.T) int {
	s := os.Getenv(mixedHandOversEnv)
	if s == "" {
		return mixedDefaultHandOvers
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 2 {
		t.Fatalf("%s=%q: want a number of at least 2", mixedHandOversEnv, s)
	}
	return n
}

// buildCurrent builds this checkout's binary.
func buildCurrent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ctpool-tui")
	build := exec.Command("go", "build", "-o", bin, "github.com/ctpool-tui/ctpool-tui/cmd/ctpool-tui")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build ctpool-tui: %v\n%s", err, out)
	}
	return bin
}

func TestIntegrationMixedVersionReconcilers(t *testing.T) {
	oldBin := os.Getenv(oldReleaseEnv)
	if oldBin == "" {
		msg := oldReleaseEnv + " is not set: no earlier release to run beside this one (make test-upgrade builds them with hack/oldrelease/build)"
		if os.Getenv(requireOldReleaseEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(oldBin); err != nil {
		t.Fatalf("%s: %v", oldReleaseEnv, err)
	}
	oldVersion, _ := exec.Command(oldBin, "version").CombinedOutput()
	t.Logf("earlier release: %s: %s", oldBin, bytes.TrimSpace(oldVersion))
	handOvers := mixedHandOvers(t)
	env := kubetest.Require(t)
	newBin := buildCurrent(t)
	ctx := t.Context()

	r := &mixedRun{env: env, user: pooltest.Engine(env), leases: env.Client.CoordinationV1().Leases(env.Namespace),
		counts: map[string]int{}, errs: map[string]string{}, held: map[string]*mixedClaim{}, asked: map[string]int{}}
	if _, err := r.user.Apply(ctx, chaosPool, pooltest.SmallSpec(pooltest.Image, mixedSize)); err != nil {
		t.Fatal(err)
	}
	rp := newReplay()
	rp.writers = map[string]bool{reconcilerManager: true}
	// plane repairs what the plane's fake provisioner breaks (a PVC bound
	// to a volume that is gone), as the randomized run does; the replay
	// knows those deletions as the test's.
	plane := &chaosHarness{t: t, env: env, replay: rp, counts: map[string]int{}, notReady: map[string]int{},
		vanished: map[string]*vanished{}, releases: map[string]int{}}
	rec := &recorder{clk: &chaosClock{}, env: env}
	rec.start(ctx, t)
	var (
		birthsMu sync.Mutex
		births   []podBirth
	)
	watchBirths(ctx, t, env, &birthsMu, &births)
	var (
		statusMu sync.Mutex
		statuses []statusWrite
	)
	watchStatus(ctx, t, env, &statusMu, &statuses)
	leaders := &leaderLog{}
	go leaders.follow(ctx, env)

	// The earlier release leads first; this one stands by.
	procs := map[string]*electedProcess{}
	versionOf := map[string]string{}
	start := func(bin, version string, n int) *electedProcess {
		p := startElected(t, env, bin, version, fmt.Sprintf("%s-%d", version, n))
		procs[p.id], versionOf[p.id] = p, version
		return p
	}
	first := start(oldBin, "old", 1)
	env.WaitFor(t, mixedTakeover, "the earlier release to lead", func() (bool, error) {
		select {
		case err := <-first.exited:
			first.exited <- err
			return false, fmt.Errorf("it exited: %v\n%s", err, first.tail())
		default:
		}
		return leaders.current() == first.id, nil
	})
	start(newBin, "new", 1)
	waitReady(t, env, r.user, chaosPool, mixedSize)

	actx, stopActors := context.WithCancel(ctx)
	var actors sync.WaitGroup
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for i, id := range append(append([]string(nil), mixedUsers...), mixedBroker) {
		actors.Go(func() { r.actor(actx, id, seed+uint64(i)) })
	}
	actors.Go(func() { r.admin(actx, 7*time.Second) })

	// The hand-overs: the leader leads for a while, gets SIGTERM and must
	// exit 0; the standby of the other version takes over; the stopped one
	// starts again as a candidate.
	type handOver struct {
		from, to string
		took     time.Duration
	}
	var hos []handOver
	handOverOnce := func(i int) handOver {
		id := leaders.current()
		p := procs[id]
		if p == nil {
			t.Fatalf("hand-over %d: the election Lease is held by %q, no process of the run", i, id)
		}
		stopped := time.Now()
		if err := p.stop(); err != nil {
			r.violate("hand-over %d: %s (the %s release) exited with %v on SIGTERM, want 0\n%s", i, id, p.version, err, p.tail())
		}
		var to string
		env.WaitFor(t, mixedTakeover, fmt.Sprintf("hand-over %d: a standby to take the Lease from %s", i, id), func() (bool, error) {
			to = leaders.current()
			return to != "" && to != id, nil
		})
		h := handOver{from: id, to: to, took: time.Since(stopped)}
		if versionOf[to] == p.version {
			t.Fatalf("hand-over %d: %s took over from %s, same version", i, to, id)
		}
		start(p.bin, p.version, i+1)
		return h
	}
	for i := range handOvers {
		lead := time.NewTimer(mixedLeadFor)
		<-lead.C // the leader's window (see mixedLeadFor)
		hos = append(hos, handOverOnce(i+1))
	}
	stopActors()
	actors.Wait()

	// The end: the claims checked and released; a last definition the
	// pool converges to under the last leader, then one more under the
	// other version after a last hand-over.
	r.mu.Lock()
	var held []*mixedClaim
	for _, c := range r.held {
		held = append(held, c)
	}
	r.mu.Unlock()
	for _, c := range held {
		r.release(ctx, c)
	}
	// The recorded status, written last by the leader the pool converged
	// under: this release parses it, the earlier one shows it (exit 0, the
	// pool named), unless oldStatusUnreadableEnv says that release cannot
	// read this release's form: then it must say so, as a problem.
	kubeconfig := filepath.Join(env.Dir, "admin.kubeconfig")
	unreadable := os.Getenv(oldStatusUnreadableEnv) != ""
	checkStatus := func(writer string) {
		cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(ctx, engine.ConfigMapName(chaosPool), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := engine.ParseStatus(cm.Data[engine.KeyStatus])
		if err != nil {
			r.violate("this release cannot parse the status %s wrote: %v", writer, err)
		} else if st.Ready != mixedSize {
			r.violate("the status %s wrote says %d ready, want %d", writer, st.Ready, mixedSize)
		}
		for _, args := range [][]string{
			{"status", chaosPool, "-o", "json"},
			{"--once", "-o", "json"},
		} {
			out, err := exec.Command(oldBin, append(args, "--kubeconfig", kubeconfig, "--namespace", env.Namespace)...).CombinedOutput()
			named, invalid := strings.Contains(string(out), `"`+chaosPool+`"`), strings.Contains(string(out), "invalid status")
			switch {
			case versionOf[writer] == "new" && unreadable:
				if !invalid || !named {
					r.violate("%s is set, but the earlier release's %s on the status %s wrote does not report it invalid (exit %v, pool named %v): drop %s if it reads it now:\n%s",
						oldStatusUnreadableEnv, strings.Join(args, " "), writer, err, named, oldStatusUnreadableEnv, out)
				} else {
					t.Logf("the earlier release's %s on the status %s wrote: %v, status reported invalid (%s)", strings.Join(args, " "), writer, err, oldStatusUnreadableEnv)
				}
			case err != nil || !named || invalid:
				r.violate("the earlier release's %s on the status %s wrote: %v, pool named %v, status reported invalid %v:\n%s", strings.Join(args, " "), writer, err, named, invalid, out)
			}
		}
	}
	for round, image := range []string{"registry.example/desktop:final", "registry.example/desktop:final-2"} {
		if round > 0 {
			hos = append(hos, handOverOnce(len(hos)+1))
		}
		if _, err := r.user.Apply(ctx, chaosPool, pooltest.SmallSpec(image, mixedSize)); err != nil {
			t.Fatal(err)
		}
		r.count("apply", nil)
		leader := leaders.current()
		applied := time.Now()
		var unconverged string
		if err := waitUntil(ctx, time.Now().Add(2*time.Minute), func() bool {
			snap, err := r.user.Cluster.Snapshot(ctx, chaosPool)
			if err != nil {
				unconverged = err.Error()
				return false
			}
			v := engine.Observe(snap, time.Now())
			plane.repairPlaneArtifacts(ctx, v)
			unconverged = fmt.Sprintf("%d members, %d Ready recorded (want %d):", len(v.Members), v.Recorded.Ready, mixedSize)
			done := len(v.Members) == mixedSize && v.Recorded.Ready == mixedSize
			for _, m := range v.Members {
				unconverged += fmt.Sprintf("\n\t%s %s drift %v above %v holder %q source %s: %s", m.Name, m.State, m.Drift, m.AboveSize, m.Holder(), podSource(m.Pod), m.Message)
				if m.State != engine.StateReady || m.Drift || m.AboveSize || m.Lease != nil {
					done = false
				}
			}
			return done
		}); err != nil {
			t.Fatalf("the pool did not converge on %s under %s within 2m of its apply: %s\nits log:\n%s", image, leader, unconverged, procs[leader].tail())
		}
		t.Logf("converged on %s under %s (the %s release) %s after its apply", image, leader, versionOf[leader], time.Since(applied).Round(time.Millisecond))
		checkStatus(leader)
	}

	// The history: no claimed member's Pod or PVC deleted, no claim passed
	// from one identity to another, no Lease written by a program not of
	// the run (replay.apply); no member built twice for one definition.
	env.WaitFor(t, time.Minute, "the watches to deliver every change", func() (bool, error) { return rec.caughtUp(ctx) })
	rp.byKwok = (&chaosHarness{env: env}).deletedByKwok
	r.mu.Lock()
	for m, n := range r.asked {
		rp.releaseAsked[m] = n
	}
	r.mu.Unlock()
	for _, e := range rec.take() {
		rp.apply(e, r.violate)
	}

	birthsMu.Lock()
	all := append([]podBirth(nil), births...)
	birthsMu.Unlock()
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	rebuilds := map[string]int{}
	type key struct{ member, source string }
	built := map[key][]podBirth{}
	for _, b := range all {
		who := "by " + b.manager
		if strings.HasPrefix(b.manager, kubetest.UserAgent) {
			who = "by a release or claim (this run's engine)"
		}
		if b.manager == reconcilerManager {
			who = versionOf[leaders.at(b.at)] + " leader"
			if leaders.at(b.at) == "" {
				who = "no holder (the Lease released, its taker not yet seen by the 100 ms poll)"
			}
		}
		rebuilds[who]++
		if b.manager == reconcilerManager {
			k := key{b.member, b.source}
			built[k] = append(built[k], b)
		}
	}
	burst := map[string]int{} // version -> most Pods its leader created within burstWindow
	byVersion := map[string][]time.Time{}
	for _, b := range all {
		if b.manager == reconcilerManager {
			v := versionOf[leaders.at(b.at)]
			byVersion[v] = append(byVersion[v], b.at)
		}
	}
	for v, ts := range byVersion {
		for i := range ts {
			n := 0
			for j := i; j < len(ts) && ts[j].Sub(ts[i]) < burstWindow; j++ {
				n++
			}
			burst[v] = max(burst[v], n)
		}
	}
	for k, bs := range built {
		// A member whose Pod of this source the test deleted to repair the
		// plane's lost volume is built again, and again when the start on
		// its PVC being deleted loses the race with that delete.
		repaired := false
		for _, b := range bs {
			repaired = repaired || rp.byTest[b.uid]
		}
		if len(bs) > 1 && !repaired {
			var at []string
			for _, b := range bs {
				at = append(at, fmt.Sprintf("%s by %s", b.at.UTC().Format("15:04:05.000"), versionOf[leaders.at(b.at)]))
			}
			r.violate("%s was built %d times by reconcilers from source %s: %s", k.member, len(bs), k.source, strings.Join(at, ", "))
		}
	}

	// The status keys each version's leader wrote: those of this release
	// that an earlier leader's write leaves out are lost while it leads.
	statusMu.Lock()
	writes := map[string]int{}
	keys := map[string]map[string]bool{"old": {}, "new": {}}
	for _, sw := range statuses {
		v := versionOf[leaders.at(sw.at)]
		if v == "" {
			continue
		}
		writes[v]++
		for _, k := range sw.keys {
			keys[v][k] = true
		}
	}
	statusMu.Unlock()
	var dropped []string
	for k := range keys["new"] {
		if !keys["old"][k] {
			dropped = append(dropped, k)
		}
	}
	sort.Strings(dropped)
	t.Logf("status writes while each version led: %v; keys this release wrote that no write of the earlier one kept: %v", writes, dropped)

	// The figures.
	var took []string
	var sum time.Duration
	for _, h := range hos {
		took = append(took, fmt.Sprintf("%s->%s %s", h.from, h.to, h.took.Round(time.Millisecond)))
		sum += h.took
	}
	t.Logf("%d hand-overs (mean %s): %s", len(hos), (sum / time.Duration(len(hos))).Round(time.Millisecond), strings.Join(took, ", "))
	r.mu.Lock()
	var names []string
	for k := range r.counts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t.Logf("  %-40s %d", k, r.counts[k])
	}
	for k, e := range r.errs {
		t.Logf("  first error of %s: %s", k, e)
	}
	bad := r.bad
	r.mu.Unlock()
	t.Logf("plane artifacts repaired: %d", plane.counts["plane artifacts repaired (a PVC whose volume the plane lost)"])
	t.Logf("most member Pods a leader created within %s: %v", burstWindow, burst)
	t.Logf("Pods created: %v; Lease changes %d, deletions %d (by kwok %d), broker claims ended by a release %d",
		rebuilds, rp.leaseChanges, rp.deletions, rp.kwokDeletes, rp.brokerEnds)
	for _, b := range bad {
		t.Error(b)
	}
	if len(bad) > 0 {
		for _, p := range procs {
			t.Logf("log of %s (%s):\n%s", p.id, p.version, p.tail())
		}
	}
}

func podSource(p *corev1.Pod) string {
	if p == nil {
		return "(no Pod)"
	}
	return p.Labels[engine.LabelSource]
}
