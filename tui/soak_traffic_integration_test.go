//go:build integration

package tui

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

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

func (s *soakTraffic) errSample() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.errs, "; ")
}
