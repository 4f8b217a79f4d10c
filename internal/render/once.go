package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Exit codes of the headless renderer. The caller owns 1 (the cluster could
// not be read) and 2 (usage).
const (
	ExitOK        = 0 // every pool has a free member, no recorded errors or problems
	ExitAttention = 3 // some pool is exhausted (an elastic one at its ceiling), has recorded errors or problems, or --pool names none
)

// OnceOptions configure RenderOnce.
type OnceOptions struct {
	// Format is "table" (default), "wide" (the table with every message
	// and diagnosis whole) or "json".
	Format string
	// Pool limits the output to one pool.
	Pool string
	// Namespace and Context are reported in the output.
	Namespace, Context string
	// Fleet: the views come from several namespaces, Namespaces (nil: all
	// of them). The table gets a NAMESPACE column, each pool is named
	// namespace/pool, and Pool matches a pool of that name in any of them.
	Fleet      bool
	Namespaces []string
	// Now is the time ages and expiries are computed at (default: the
	// views' ObservedAt).
	Now time.Time
	// ASCII draws the table's trend sparklines with ASCII levels (a
	// terminal without Unicode); the JSON document has no sparkline.
	ASCII bool
}

// OnceSchemaVersion is the version of the JSON document. It changes only
// when a field is removed or changes meaning; new fields may be added.
const OnceSchemaVersion = 1

// OnceReport is the JSON document of `--once -o json`.
type OnceReport struct {
	SchemaVersion int    `json:"schemaVersion"`
	Namespace     string `json:"namespace"`
	// AllNamespaces and Namespaces are set for a report of several
	// namespaces (-A, --namespaces); each pool then names its namespace.
	AllNamespaces bool       `json:"allNamespaces,omitempty"`
	Namespaces    []string   `json:"namespaces,omitempty"`
	Context       string     `json:"context,omitempty"`
	ObservedAt    time.Time  `json:"observedAt"`
	Pools         []OncePool `json:"pools"`
	// Contexts is set for a report of several contexts (--context a,b,c,
	// --all-contexts): each cluster's state; each pool then names its
	// context and namespace.
	Contexts []OnceContext `json:"contexts,omitempty"`
	// Error is set when --pool names a pool that does not exist.
	Error string `json:"error,omitempty"`
}

// OncePool is one pool of the JSON document.
type OncePool struct {
	// Context is set in a report of several contexts.
	Context string `json:"context,omitempty"`
	// Namespace is set in a report of several namespaces or clusters.
	Namespace     string `json:"namespace,omitempty"`
	Name          string `json:"name"`
	Defined       bool   `json:"defined"`
	Backend       string `json:"backend"`
	Image         string `json:"image"`
	Size          int    `json:"size"`
	Ready         int    `json:"ready"`
	Claimed       int    `json:"claimed"`
	Free          int    `json:"free"`
	Unschedulable int    `json:"unschedulable"`
	Drifted       int    `json:"drifted"`
	Failed        int    `json:"failed"`
	Exhausted     bool   `json:"exhausted"`
	// Status is ok, growing (an elastic pool exhausted below its
	// ceiling: a claim grows it), exhausted (a fixed pool, or an elastic
	// one at its ceiling), not isolated, errors or problem (the STATUS
	// column).
	Status string `json:"status"`
	// LastReconcile is when the recorded status last changed (absent: never).
	LastReconcile *time.Time `json:"lastReconcile,omitempty"`
	// Errors of the last reconcile; Problems with the definition or status.
	Errors   []string `json:"errors"`
	Problems []string `json:"problems"`
	// Isolation is an isolated pool's NetworkPolicy against its definition
	// (absent for a pool that is not isolated): state enforced, missing,
	// changed, foreign or unknown, and what differs or why it is unknown.
	Isolation *engine.IsolationView `json:"isolation,omitempty"`
	// Protection is the pool's PodDisruptionBudget when its claimed
	// desktops are known not to be protected from eviction (absent when
	// they are, or when it is not known here).
	Protection *engine.ProtectionView `json:"protection,omitempty"`
	// DrainHolds are the cordoned nodes that claimed members hold, by node
	// (absent when none, or when the nodes are unknown).
	DrainHolds []engine.DrainHold `json:"drainHolds,omitempty"`
	// Elastic is an elastic pool's bounds and why its size last changed
	// (absent for a fixed pool; Size is then its effective size).
	Elastic *OnceElastic `json:"elastic,omitempty"`
	// Rollout is the pool's rollout of a new source (absent when none is
	// recorded for its current definition).
	Rollout *OnceRollout `json:"rollout,omitempty"`
	// Trend is the pool's recorded history and what follows from it
	// (absent when the reconciler has recorded none).
	Trend   *OnceTrend   `json:"trend,omitempty"`
	Members []OnceMember `json:"members"`
	// elasticLine and trendLine are the table's lines of Elastic and Trend.
	elasticLine, trendLine string
}

// OnceMember is one member of the JSON document.
type OnceMember struct {
	Name         string     `json:"name"`
	State        string     `json:"state"`
	Free         bool       `json:"free"`
	Holder       string     `json:"holder,omitempty"`
	ClaimedAt    *time.Time `json:"claimedAt,omitempty"`
	ClaimExpires *time.Time `json:"claimExpires,omitempty"`
	ClaimExpired bool       `json:"claimExpired"`
	Maintenance  bool       `json:"maintenance"`
	Drift        bool       `json:"drift"`
	AboveSize    bool       `json:"aboveSize"`
	// Message is the cluster's own words, whole: the scheduler's message
	// for an Unschedulable member, the failure for a Failed one.
	Message string `json:"message,omitempty"`
	// headline is Message's first sentence (engine.FirstSentence), cut
	// before sanitising turns line breaks into spaces: the narrow table's
	// MESSAGE.
	headline string
	// row is the member's row (MemberRow): the table's HOLDER and MARKS.
	row  Row
	Node string `json:"node,omitempty"`
	// NodeDown is the evidence that the member's node is down (its Ready
	// condition, its unreachable or not-ready taint); absent when it is not,
	// or when the nodes cannot be read.
	NodeDown string `json:"nodeDown,omitempty"`
	// NodeDraining: the member's node is cordoned (a drain has begun).
	NodeDraining bool       `json:"nodeDraining,omitempty"`
	Created      *time.Time `json:"created,omitempty"`
	Problems     []string   `json:"problems,omitempty"`
	// Diagnosis is why a member that is not Ready and fine is so, and the fix.
	Diagnosis *OnceDiagnosis `json:"diagnosis,omitempty"`
	// Backoff is a failing member's replacement backoff, as the pool's
	// status records it (absent when it has none).
	Backoff *OnceBackoff `json:"backoff,omitempty"`
}

// OnceBackoff is a failing member's replacement backoff: its failures in a
// row, when the reconciler may build it again, and that in words.
type OnceBackoff struct {
	Failures int       `json:"failures"`
	RetryAt  time.Time `json:"retryAt"`
	Retry    string    `json:"retry"`
}

// OnceDiagnosis is engine.Diagnose's reason and fix.
type OnceDiagnosis struct {
	Reason string `json:"reason"`
	Fix    string `json:"fix,omitempty"`
}

// onceStatus is a pool's STATUS word and whether it needs attention.
func onceStatus(v *engine.PoolView, iv *engine.IsolationView, ro *OnceRollout) (string, bool) {
	switch {
	case len(v.Problems) > 0:
		return "problem", true
	case ro != nil && ro.State == RolloutHalted:
		// The members still on the old image serve; the new image fails.
		return RolloutShort(ro), true
	case ExhaustedAlarm(v):
		// A fixed pool's, or an elastic pool's at its ceiling; below its
		// ceiling a claim grows it at once ("growing", below).
		return "exhausted", true
	case notIsolated(iv):
		return "not isolated", true
	case len(v.Recorded.Errors) > 0:
		return "errors", true
	case ExhaustedGrowing(v):
		return "growing", false
	case ro != nil && ro.State == RolloutRolling:
		return RolloutShort(ro), false
	}
	return "ok", false
}

// Report builds the JSON document of views (already limited to one pool
// when asked) and the exit code.
func Report(views []engine.PoolView, opts OnceOptions) (OnceReport, int) {
	now := opts.Now
	if now.IsZero() && len(views) > 0 {
		now = views[0].ObservedAt
	}
	r := OnceReport{SchemaVersion: OnceSchemaVersion, Namespace: opts.Namespace, Context: opts.Context, ObservedAt: now, Pools: []OncePool{}}
	if opts.Fleet {
		r.Namespace, r.AllNamespaces, r.Namespaces = "", len(opts.Namespaces) == 0, opts.Namespaces
	}
	code := ExitOK
	for i := range views {
		v := &views[i]
		if opts.Pool != "" && v.Name != opts.Pool {
			continue
		}
		iv := v.Isolation()
		ro := Rollout(v, now)
		status, bad := onceStatus(v, iv, ro)
		if bad {
			code = ExitAttention
		}
		backend := v.Spec.BackendName()
		if !v.Defined {
			backend = ""
		}
		p := OncePool{
			Name: clean(v.Name), Defined: v.Defined, Backend: clean(backend), Image: clean(v.Spec.Image), Size: v.Size,
			Ready: v.Status.Ready, Claimed: v.Status.Claimed, Free: v.Status.Free, Unschedulable: v.Status.Unschedulable,
			Drifted: v.Status.Drifted, Failed: v.Status.Failed, Exhausted: v.Status.Exhausted, Status: status,
			LastReconcile: v.Recorded.UpdatedAt, Rollout: ro,
			Errors: cleanAll(RecordedErrors(v)), Problems: cleanAll(v.Problems),
			Members: make([]OnceMember, 0, len(v.Members)),
		}
		if iv != nil {
			p.Isolation = &engine.IsolationView{Policy: clean(iv.Policy), State: iv.State, Detail: clean(iv.Detail)}
		}
		if pv := v.Protection(); pv != nil && !pv.Protected() {
			p.Protection = &engine.ProtectionView{Budget: clean(pv.Budget), State: pv.State, Detail: clean(pv.Detail)}
		}
		for _, h := range v.DrainHolds() {
			h.Node = clean(h.Node)
			p.DrainHolds = append(p.DrainHolds, h)
		}
		if opts.Fleet {
			p.Namespace = clean(v.Namespace)
		}
		onceElastic(&p, v, now)
		onceTrend(&p, v, now, opts.ASCII)
		for j := range v.Members {
			om := onceMember(&v.Members[j], now)
			if d := Diagnose(v, &v.Members[j], nil, nil, engine.Hints{}); d.Reason != "" {
				om.Diagnosis = &OnceDiagnosis{Reason: clean(d.Reason), Fix: clean(d.Fix)}
			}
			p.Members = append(p.Members, om)
		}
		r.Pools = append(r.Pools, p)
	}
	if opts.Pool != "" && len(r.Pools) == 0 {
		r.Error = fmt.Sprintf("no pool named %s in %s", opts.Pool, r.where())
		code = ExitAttention
	}
	return r, code
}

func onceMember(mm *engine.Member, now time.Time) OnceMember {
	o := OnceMember{
		Name: clean(mm.Name), State: string(mm.State), Free: mm.Free, Holder: clean(mm.Holder()), Maintenance: mm.InMaintenance(),
		Drift: mm.Drift, AboveSize: mm.AboveSize, Message: clean(mm.Message), Node: clean(mm.Node), NodeDown: clean(mm.NodeDown),
		NodeDraining: mm.NodeDraining, headline: clean(engine.FirstSentence(mm.Message)), row: MemberRow(mm, now),
	}
	if len(mm.Problems) > 0 {
		o.Problems = cleanAll(mm.Problems)
	}
	if b := mm.Backoff; b != nil && o.row.Retry != "" {
		o.Backoff = &OnceBackoff{Failures: b.Failures, RetryAt: b.RetryAt, Retry: o.row.Retry}
	}
	if mm.Claim != nil {
		c := mm.Claim
		o.ClaimExpired = o.row.Claim.Expired
		if !c.Acquired.IsZero() {
			t := c.Acquired
			o.ClaimedAt = &t
		}
		if !c.Expires.IsZero() {
			t := c.Expires
			o.ClaimExpires = &t
		}
	}
	if !mm.Created.IsZero() {
		t := mm.Created
		o.Created = &t
	}
	return o
}

// where names the namespaces of the report: "namespace vdi", "all
// namespaces" or "namespaces a, b".
func (r OnceReport) where() string {
	switch {
	case r.Contexts != nil:
		names := make([]string, 0, len(r.Contexts))
		for _, c := range r.Contexts {
			names = append(names, c.Context)
		}
		return "contexts " + strings.Join(names, ", ")
	case r.AllNamespaces:
		return "all namespaces"
	case len(r.Namespaces) > 0:
		return "namespaces " + strings.Join(r.Namespaces, ", ")
	}
	return "namespace " + r.Namespace
}

// cleanAll sanitises a list, never returning nil (JSON shows []).
func cleanAll(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		out = append(out, clean(s))
	}
	return out
}

// RenderOnce writes the pools once, as a table, a wide table or JSON (opts.Format),
// and returns the exit code: ExitOK, or ExitAttention when a pool is
// exhausted, has recorded errors or problems, or opts.Pool names no pool.
// The output never holds colour or escape sequences: every piece of cluster
// text is sanitised, in the table and in the JSON document alike.
func RenderOnce(w io.Writer, views []engine.PoolView, opts OnceOptions) int {
	r, code := Report(views, opts)
	return writeReport(w, r, code, opts.Format)
}

// writeReport writes r in format ("table", "wide" or "json") and returns
// code, or 1 when the JSON document could not be written.
func writeReport(w io.Writer, r OnceReport, code int, format string) int {
	if strings.EqualFold(format, "json") {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return 1
		}
		return code
	}
	writeTable(w, r, strings.EqualFold(format, "wide"))
	return code
}

// notIsolated: an isolated pool whose policy is known not to be the
// definition's (missing, changed or someone else's). Unknown is not: a
// dashboard does not read it, and a status without the permission cannot.
func notIsolated(iv *engine.IsolationView) bool {
	return iv != nil && (iv.State == engine.IsolationMissing || iv.State == engine.IsolationChanged || iv.State == engine.IsolationForeign)
}

// IsolationText is an isolation's state with its detail: "enforced",
// "missing (no NetworkPolicy ...)".
func IsolationText(iv engine.IsolationView) string {
	if iv.Detail == "" {
		return iv.State
	}
	return iv.State + " (" + iv.Detail + ")"
}
