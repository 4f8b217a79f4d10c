package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// The states of a rollout (OnceRollout.State).
const (
	RolloutRolling = "rolling"
	RolloutHalted  = "halted"
	RolloutDone    = "done"
)

// OnceRollout is a pool's rollout in the JSON document of `--once -o json`:
// the image rolled to, its state, the members updated and still old, the
// new members in flight, the waves so far and the halt's reason.
type OnceRollout struct {
	Image string `json:"image"`
	// State is rolling, halted or done.
	State string `json:"state"`
	// Updated counts the members within the size on the current source,
	// Old the unclaimed ones still on an earlier source, OldClaimed the
	// claimed ones (rebuilt when released), InFlight the new members not
	// Ready yet.
	Updated    int `json:"updated"`
	Old        int `json:"old"`
	OldClaimed int `json:"oldClaimed"`
	InFlight   int `json:"inFlight"`
	// Budget is how many members may be out of service at once.
	Budget   int       `json:"budget"`
	Waves    int       `json:"waves"`
	Replaced int       `json:"replaced"`
	Started  time.Time `json:"started"`
	// Took is how long it ran (until now, or until it was done), and
	// PerWave that divided by its waves, as Go durations ("4m10s").
	Took    string `json:"took"`
	PerWave string `json:"perWave,omitempty"`
	// Halted is why it halted (absent unless halted), with the failing
	// members' own reasons.
	Halted   string     `json:"halted,omitempty"`
	HaltedAt *time.Time `json:"haltedAt,omitempty"`
	Done     *time.Time `json:"done,omitempty"`
}

// RolloutState is rolling, halted or done.
func RolloutState(ro *engine.RolloutView) string {
	switch {
	case ro.Halted != "":
		return RolloutHalted
	case ro.Done != nil:
		return RolloutDone
	}
	return RolloutRolling
}

// Rollout is the pool's rollout for the JSON document (nil: none). Its text
// is sanitized.
func Rollout(v *engine.PoolView, now time.Time) *OnceRollout {
	ro := v.Rollout()
	if ro == nil {
		return nil
	}
	o := &OnceRollout{
		Image: clean(ro.Image), State: RolloutState(ro), Updated: ro.Updated, Old: ro.Old, OldClaimed: ro.OldClaimed,
		InFlight: ro.InFlight, Budget: ro.Budget, Waves: ro.Waves, Replaced: ro.Replaced, Started: ro.Started,
		Took: ro.Took(now).String(), Halted: clean(ro.Halted), HaltedAt: ro.HaltedAt, Done: ro.Done,
	}
	if ro.Waves > 0 {
		o.PerWave = (ro.Took(now) / time.Duration(ro.Waves)).Round(time.Second).String()
	}
	return o
}

// RolloutText is a rollout in one line, for the --once table, reconcile's
// output and the dashboard's detail pane (not sanitized: its caller does):
//
//	rolling to img:2: 4 of 8 updated, 2 in flight, wave 3 (1m20s a wave), at most 2 out of service
//	rollout of img:2 halted: 2 of 2 new members failed ...; resume: ctpool-tui rollout resume desk
//	rolled out img:2 in 4m10s (4 waves)
func RolloutText(pool string, o *OnceRollout) string {
	switch o.State {
	case RolloutHalted:
		return o.Halted + "; resume: ctpool-tui rollout resume " + pool + ", or apply an image"
	case RolloutDone:
		s := fmt.Sprintf("rolled out %s in %s (%d %s)", o.Image, o.Took, o.Waves, plural(o.Waves, "wave", "waves"))
		if o.OldClaimed > 0 {
			s += fmt.Sprintf("; %d claimed %s on the old image until released", o.OldClaimed, plural(o.OldClaimed, "member stays", "members stay"))
		}
		return s
	}
	parts := []string{fmt.Sprintf("%d of %d updated", o.Updated, o.Updated+o.Old+o.OldClaimed)}
	if o.InFlight > 0 {
		parts = append(parts, fmt.Sprintf("%d in flight", o.InFlight))
	}
	if o.Waves > 0 {
		parts = append(parts, fmt.Sprintf("wave %d (%s a wave)", o.Waves, o.PerWave))
	}
	parts = append(parts, fmt.Sprintf("at most %d out of service", o.Budget))
	if o.OldClaimed > 0 {
		parts = append(parts, fmt.Sprintf("%d claimed on the old image", o.OldClaimed))
	}
	return "rolling to " + o.Image + ": " + strings.Join(parts, ", ")
}

// RolloutShort is a rollout in a few characters, for the pools table's
// STATUS: "rolling 4/8", "halted", "" when done.
func RolloutShort(o *OnceRollout) string {
	switch o.State {
	case RolloutHalted:
		return "rollout halted"
	case RolloutRolling:
		return fmt.Sprintf("rolling %d/%d", o.Updated, o.Updated+o.Old+o.OldClaimed)
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
