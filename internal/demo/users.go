package demo

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// identities of the simulated users. (A hostile identity is refused by
// engine.ValidateIdentity, so hostile text reaches the dashboard through a
// registry's error message and a container's termination message instead.)
var identities = []string{
	"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
	"ivan", "judy", "mallory", "niaj", "olivia", "peggy", "rupert", "sybil",
}

// User timing at Speed 1.
const (
	userEveryMin = time.Second // one user acts this often
	userEveryMax = 3 * time.Second
	holdMin      = 20 * time.Second // how long a desktop is used
	holdMax      = 75 * time.Second
	idleMin      = 5 * time.Second // pause between two sessions
	idleMax      = 25 * time.Second
	awayMin      = 40 * time.Second // how long an expired claim is left alone
	awayMax      = 80 * time.Second
)

// user is a person who claims desktops.
type user struct {
	id     string
	pool   string
	member string
	next   time.Time // when the user acts next
	// away: the user walked off and the claim was left to expire; when next
	// comes, the user comes back (a claim renews it) or an administrator
	// force-releases it.
	away      bool
	comesBack bool
}

func (s *Sim) seedUsers() {
	for i, name := range identities {
		// The first users arrive at once, the others over half a minute.
		u := &user{id: name + "@example.com", next: s.after(time.Duration(i)*1500*time.Millisecond, time.Duration(i)*2*time.Second)}
		s.users = append(s.users, u)
	}
}

// poolWeight is how popular a pool is with the users.
func poolWeight(pool string) int {
	switch pool {
	case "desk", "gpu", "kiosk":
		return 3
	}
	return 1
}

// actUsers lets one user whose time has come claim, release, come back to an
// expired claim, or have it force-released.
func (s *Sim) actUsers(ctx context.Context, pools []string) {
	if !s.due(s.userAt) {
		return
	}
	s.userAt = s.after(userEveryMin, userEveryMax)
	var ready []*user
	for _, u := range s.users {
		if s.due(u.next) {
			ready = append(ready, u)
		}
	}
	if len(ready) == 0 || len(pools) == 0 {
		return
	}
	u := ready[s.rng.IntN(len(ready))]
	switch {
	case u.away:
		s.comeBack(ctx, u)
	case u.member != "":
		s.release(ctx, u)
	default:
		s.claim(ctx, u, s.pickPool(pools))
	}
}

func (s *Sim) pickPool(pools []string) string {
	total := 0
	for _, p := range pools {
		total += poolWeight(p)
	}
	n := s.rng.IntN(total)
	for _, p := range pools {
		if n -= poolWeight(p); n < 0 {
			return p
		}
	}
	return pools[len(pools)-1]
}

func (s *Sim) claim(ctx context.Context, u *user, pool string) {
	res, err := s.eng.Claim(ctx, pool, u.id)
	if err != nil {
		s.note("claim "+pool+" for "+u.id, err)
		u.next = s.after(4*time.Second, 12*time.Second)
		return
	}
	u.pool, u.member = pool, res.Member
	u.next = s.after(holdMin, holdMax)
	if !res.Existing && s.rng.IntN(2) == 0 {
		// Demo shortcut: pretend the session began a while ago, so the
		// dashboard shows claims of every age, some close to expiry.
		s.backdateClaim(ctx, u, s.between(time.Minute, 52*time.Minute))
	}
}

func (s *Sim) release(ctx context.Context, u *user) {
	_, err := s.eng.Release(ctx, u.pool, u.member, u.id)
	if errors.Is(err, engine.ErrMaintenance) {
		u.next = s.after(2*time.Second, 4*time.Second)
		return
	}
	s.note("release "+u.member+" for "+u.id, err)
	u.pool, u.member = "", ""
	u.next = s.after(idleMin, idleMax)
}

// comeBack ends the walk-away of a user: half of them come back and claim
// again, which renews the expired claim; for the others an administrator
// force-releases the desktop.
func (s *Sim) comeBack(ctx context.Context, u *user) {
	u.away = false
	if u.comesBack {
		s.claim(ctx, u, u.pool)
		return
	}
	_, err := s.eng.ForceRelease(ctx, u.pool, u.member)
	s.note("force-release "+u.member, err)
	u.pool, u.member = "", ""
	u.next = s.after(idleMin, idleMax)
}

// walkAway leaves one claim to expire. Demo shortcut: instead of waiting an
// hour, the claim's Lease is written as acquired and renewed more than an
// hour ago (a compare-and-swap on its resourceVersion).
func (s *Sim) walkAway(ctx context.Context) bool {
	var holding []*user
	for _, u := range s.users {
		if u.member != "" && !u.away {
			holding = append(holding, u)
		}
	}
	if len(holding) == 0 {
		return false
	}
	u := holding[s.rng.IntN(len(holding))]
	if !s.backdateClaim(ctx, u, engine.ClaimDuration+s.between(time.Minute, 20*time.Minute)) {
		return false
	}
	u.away = true
	u.comesBack = s.rng.IntN(2) == 0
	u.next = s.after(awayMin, awayMax)
	return true
}

// backdateClaim writes the user's claim Lease as acquired age ago.
func (s *Sim) backdateClaim(ctx context.Context, u *user, age time.Duration) bool {
	leases := s.client.CoordinationV1().Leases(s.opts.Namespace)
	l, err := leases.Get(ctx, engine.LeaseName(u.member), metav1.GetOptions{})
	if err != nil {
		s.note("get lease of "+u.member, err)
		return false
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != u.id {
		return false
	}
	t := metav1.NewMicroTime(s.now.Add(-age))
	l.Spec.AcquireTime, l.Spec.RenewTime = &t, &t
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		s.note("backdate lease of "+u.member, err)
		return false
	}
	return true
}
