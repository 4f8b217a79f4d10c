package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Status is the pool status, stored as YAML under the key "status" of the pool ConfigMap.
type Status struct {
	Desired  int `json:"desired"`
	Observed int `json:"observed"`
	Ready    int `json:"ready"`
	Claimed  int `json:"claimed"`
	Free     int `json:"free"`
	// Serving counts the unclaimed Ready members of an earlier source that
	// a claim takes when none is free (Member.Serving): a rollout's old
	// members.
	Serving       int  `json:"serving,omitempty"`
	Unschedulable int  `json:"unschedulable"`
	Drifted       int  `json:"drifted"`
	Failed        int  `json:"failed"`
	Exhausted     bool `json:"exhausted"`
	// Source is the pool's current source hash.
	Source string `json:"source,omitempty"`
	// Elastic is an elastic pool's effective size and why it last changed
	// (nil for a fixed pool).
	Elastic *ElasticStatus `json:"elastic,omitempty"`
	// Rollout is the pool's rollout (rollout.go), nil when none.
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// History is the pool's recent counts, a sample per HistoryInterval
	// slot over HistoryWindow (recordHistory: a slot is written when the
	// counts changed, or at least once per HistoryHeartbeat).
	History *History    `json:"history,omitempty"`
	Members []MemberRow `json:"members,omitempty"`
	// Errors of the last reconcile (empty when it succeeded). A recorded
	// status holds them grouped by cause (GroupErrors), at most
	// StatusMaxErrorLines lines.
	Errors []string `json:"errors,omitempty"`
	// Unprotected says why the last reconcile found the pool's claimed
	// desktops not protected from eviction (ProtectionView.Detail); empty
	// when they are, or when it could not tell.
	Unprotected string `json:"unprotected,omitempty"`
	// RowsCut is the number of member rows the encoding left out to stay
	// within StatusMaxBytes (the counts above always cover every member).
	RowsCut int `json:"rowsCut,omitempty"`
	// MessagesCut is the number of rows whose message the encoding left out:
	// the message table was full and held no message of the same words.
	MessagesCut int `json:"messagesCut,omitempty"`
	// ErrorsCut is the number of errors the encoding left out (the causes
	// past the first StatusMaxErrorLines).
	ErrorsCut int `json:"errorsCut,omitempty"`
	// UpdatedAt is when a reconcile last recorded a change of this status. A
	// reconcile that changes nothing does not write, so this is the time of the
	// last change, not of the last run.
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
	// Future holds the keys of the recorded status this release does not
	// know (written by a newer one), each value as JSON: every write keeps
	// them as they are, so that a downgrade after an upgrade loses nothing
	// (futureKeys).
	Future map[string]json.RawMessage `json:"-"`
}

// MemberRow is one member in the recorded status.
type MemberRow struct {
	Name         string `json:"name"`
	State        State  `json:"state"`
	Holder       string `json:"holder,omitempty"`
	ClaimExpired bool   `json:"claimExpired,omitempty"`
	Maintenance  bool   `json:"maintenance,omitempty"`
	Drift        bool   `json:"drift,omitempty"`
	AboveSize    bool   `json:"aboveSize,omitempty"`
	Message      string `json:"message,omitempty"`
	// Blocked names the object that holds the member's name but is not
	// this pool's member (Member.Blocked).
	Blocked string `json:"blocked,omitempty"`
	// Backoff is the member's replacement backoff (Member.Backoff). It is
	// recorded apart from the row, under the status's key "backoff", which
	// a reader of an earlier release ignores, as it ignores every key it
	// does not know; a row of that release's compact form would not parse.
	Backoff *Backoff `json:"-"`
	// MessageLike: Message is another member's message in the same words but
	// for its numbers (node counts): the status's message table was full.
	MessageLike bool `json:"-"`
}

// The bounds of the recorded status. A ConfigMap holds at most 1 MiB, the
// definition included; the status stays within StatusMaxBytes. Each distinct
// message is stored once, in a table of at most StatusMaxMessages entries of
// at most StatusMaxMessageBytes each, and rows refer to it; a row whose
// message is not in the table refers to an entry in the same words but for
// its numbers, or says nothing (MessagesCut). Errors are grouped by cause,
// at most StatusMaxErrorLines lines of at most StatusMaxErrorBytes. Rows
// past the byte bound are cut from the end (RowsCut): about 25,000 rows of
// a pool whose name has 3 characters, every one Unschedulable.
const (
	StatusMaxBytes        = 900 << 10
	StatusMaxMessages     = 64
	StatusMaxMessageBytes = 1024
	StatusMaxErrorLines   = 20
	StatusMaxErrorBytes   = 1024
)

// StatusFormat is the format of the recorded status this release writes
// (its key "format") and the newest it reads. A release that changes what
// an existing key means, so that an earlier release would misread it,
// raises it: the earlier release then refuses the status
// (UnreadableStatusError) instead of acting on it or writing over it. New
// keys do not raise it: an earlier release keeps them as they are
// (Status.Future).
const StatusFormat = 1

// ParseStatus decodes a recorded status: the compact rows and message table
// that Encode writes, and the one-object-per-row form of earlier versions.
// An empty string is an empty status.
func ParseStatus(data string) (Status, error) {
	if strings.TrimSpace(data) == "" {
		return Status{}, nil
	}
	var w wireStatus
	if err := yaml.Unmarshal([]byte(data), &w); err != nil {
		return Status{}, &InvalidError{Field: "status", Reason: cleanYAMLError(err)}
	}
	if w.Format > StatusFormat {
		return Status{}, &InvalidError{Field: "status", Reason: fmt.Sprintf("format %d is a newer release's; this release reads formats up to %d", w.Format, StatusFormat)}
	}
	s := w.Status
	future, err := futureKeys(data)
	if err != nil {
		return Status{}, &InvalidError{Field: "status", Reason: cleanYAMLError(err)}
	}
	s.Future = future
	s.Members = make([]MemberRow, 0, len(w.Members))
	for i, r := range w.Members {
		row := r.row
		if r.ref >= 0 {
			if r.ref >= len(w.Messages) {
				return Status{}, &InvalidError{Field: "status", Reason: fmt.Sprintf("members[%d]: message %d is not in the %d messages", i, r.ref, len(w.Messages))}
			}
			row.Message, row.MessageLike = w.Messages[r.ref], r.like
		}
		s.Members = append(s.Members, row)
	}
	if len(s.Members) == 0 {
		s.Members = nil
	}
	for i := range s.Members {
		// An entry of no row is dropped; one that fails to say when the
		// member may be replaced is no backoff (the member starts again).
		if b := w.Backoff[s.Members[i].Name]; b != nil && !b.RetryAt.IsZero() {
			s.Members[i].Backoff = b
		}
	}
	return s, nil
}

// wireStatus is the recorded form: the counts and errors as Status has
// them, the message table and the rows.
type wireStatus struct {
	Status
	// Format is the status format that wrote it (StatusFormat); an earlier
	// release wrote none (0).
	Format   int       `json:"format,omitempty"`
	Messages []string  `json:"messages,omitempty"`
	Members  []wireRow `json:"members,omitempty"`
	// Backoff holds the rows' backoffs (MemberRow.Backoff) by member, one
	// line of JSON (a YAML flow mapping). A status of an earlier release
	// has none.
	Backoff map[string]*Backoff `json:"backoff,omitempty"`
}

// keyBackoff is the status's key of the members' backoffs.
const keyBackoff = "backoff"

// Encode returns the status as YAML, within StatusMaxBytes: every count,
// the message table, one row per member (cut from the end when the rows do
// not fit, with RowsCut saying how many), and the errors grouped by cause.
func (s Status) Encode() string {
	errLines, errCut := SummarizeErrors(s.Errors, StatusMaxErrorLines)
	for i := range errLines {
		errLines[i] = cutText(errLines[i], StatusMaxErrorBytes)
	}
	s.ErrorsCut += errCut
	s.Errors = errLines
	rows := s.Members
	keep := len(rows)
	for {
		out, lines := s.encode(rows[:keep], len(rows)-keep)
		if len(out) <= StatusMaxBytes || keep == 0 {
			return out
		}
		// Drop rows from the end until the excess is covered, then measure
		// again (the message table of fewer rows differs).
		excess := len(out) - StatusMaxBytes
		for keep > 0 && excess > 0 {
			keep--
			excess -= lines[keep]
		}
	}
}

// encode writes s with rows as its members and cut more rows left out; it
// returns the text and the length of each row's line.
func (s Status) encode(rows []MemberRow, cut int) (string, []int) {
	tab := buildMessageTable(rows)
	var b strings.Builder
	b.Grow(64 + len(rows)*32)
	num := func(k string, v int) {
		b.WriteString(k)
		b.WriteString(": ")
		b.WriteString(strconv.Itoa(v))
		b.WriteByte('\n')
	}
	num("format", StatusFormat)
	num("desired", s.Desired)
	num("observed", s.Observed)
	num("ready", s.Ready)
	num("claimed", s.Claimed)
	num("free", s.Free)
	if s.Serving > 0 {
		num("serving", s.Serving)
	}
	num("unschedulable", s.Unschedulable)
	num("drifted", s.Drifted)
	num("failed", s.Failed)
	b.WriteString("exhausted: " + strconv.FormatBool(s.Exhausted) + "\n")
	if s.Source != "" {
		b.WriteString("source: ")
		writeQuoted(&b, s.Source)
		b.WriteByte('\n')
	}
	if s.Elastic != nil {
		// One line of JSON (a YAML flow mapping) that RecordedElastic
		// reads without decoding the rows.
		el, _ := json.Marshal(s.Elastic) // ints, strings and times: cannot fail
		b.WriteString(keyElastic + ": ")
		b.Write(el)
		b.WriteByte('\n')
	}
	if s.Rollout != nil {
		ro, _ := json.Marshal(s.Rollout) // strings, ints and times: cannot fail
		b.WriteString("rollout: ")
		b.Write(ro)
		b.WriteByte('\n')
	}
	if s.History != nil && len(s.History.Samples) > 0 {
		b.WriteString("history: ")
		b.WriteString(s.History.Encode()) // one line, a flow mapping
		b.WriteByte('\n')
	}
	lines := make([]int, len(rows))
	// The backoffs of the rows kept, in the rows' order; each entry's
	// length counts with its row's, so that cutting rows cuts them too.
	first := true
	for i, r := range rows {
		if r.Backoff == nil {
			continue
		}
		if first {
			b.WriteString(keyBackoff + ": {")
			first = false
		} else {
			b.WriteByte(',')
		}
		start := b.Len()
		writeJSON(&b, r.Name)
		b.WriteByte(':')
		writeJSON(&b, r.Backoff)
		lines[i] += b.Len() - start + 1
	}
	if !first {
		b.WriteString("}\n")
	}
	var body strings.Builder
	messagesCut := s.MessagesCut
	for i, r := range rows {
		start := body.Len()
		body.WriteString("- ")
		if _, ok := compactRow(r, ""); ok {
			ref, cutMsg := tab.ref(r)
			if cutMsg {
				messagesCut++
			}
			line, _ := compactRow(r, ref)
			if plainRow(line) {
				body.WriteString(line)
			} else {
				writeQuoted(&body, line)
			}
		} else {
			r.Message, r.MessageLike = cutText(r.Message, StatusMaxMessageBytes), false
			writeJSONLine(&body, r)
		}
		body.WriteByte('\n')
		lines[i] += body.Len() - start
	}
	if n := s.RowsCut + cut; n > 0 {
		num("rowsCut", n)
	}
	if messagesCut > 0 {
		num("messagesCut", messagesCut)
	}
	if s.ErrorsCut > 0 {
		num("errorsCut", s.ErrorsCut)
	}
	if s.Unprotected != "" {
		b.WriteString("unprotected: ")
		writeQuoted(&b, cutText(s.Unprotected, StatusMaxMessageBytes))
		b.WriteByte('\n')
	}
	if len(tab.texts) > 0 {
		b.WriteString("messages:\n")
		for _, t := range tab.texts {
			b.WriteString("- ")
			writeQuoted(&b, t)
			b.WriteByte('\n')
		}
	}
	if len(rows) > 0 {
		b.WriteString("members:\n")
		b.WriteString(body.String())
	}
	if len(s.Errors) > 0 {
		b.WriteString("errors:\n")
		for _, e := range s.Errors {
			b.WriteString("- ")
			writeQuoted(&b, e)
			b.WriteByte('\n')
		}
	}
	if s.UpdatedAt != nil {
		b.WriteString("updatedAt: ")
		writeQuoted(&b, s.UpdatedAt.Format(time.RFC3339Nano))
		b.WriteByte('\n')
	}
	for _, k := range slices.Sorted(maps.Keys(s.Future)) {
		// Each on one line: a key the rows' encoding never writes, its
		// value as JSON (a YAML flow node).
		writeJSON(&b, k)
		b.WriteString(": ")
		b.Write(s.Future[k])
		b.WriteByte('\n')
	}
	return b.String(), lines
}

// knownStatusKeys are the keys of the recorded status this release writes
// or reads (Status's and wireStatus's JSON names).
var knownStatusKeys = func() map[string]bool {
	known := map[string]bool{}
	for _, t := range []reflect.Type{reflect.TypeFor[Status](), reflect.TypeFor[wireStatus]()} {
		for f := range t.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				known[name] = true
			}
		}
	}
	return known
}()

// futureKeys returns the top-level keys of a recorded status that this
// release does not know, with their values as JSON (nil when there are
// none). The common case, a status of this release or an earlier one, costs
// one pass over the lines' first words; only a status with an unknown key is
// decoded again as a whole.
func futureKeys(data string) (map[string]json.RawMessage, error) {
	unknown := false
	for line := range strings.Lines(data) {
		if line == "" || line[0] == ' ' || line[0] == '-' || line[0] == '#' || line[0] == '\n' {
			continue
		}
		key, _, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if k := strings.Trim(strings.TrimSpace(key), `"'`); !knownStatusKeys[k] {
			unknown = true
			break
		}
	}
	if !unknown {
		return nil, nil
	}
	var all map[string]json.RawMessage
	if err := yaml.Unmarshal([]byte(data), &all); err != nil {
		return nil, err
	}
	for k := range all {
		if knownStatusKeys[k] {
			delete(all, k)
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	return all, nil
}

// sameContent reports whether two statuses differ only in UpdatedAt.
func (s Status) sameContent(o Status) bool {
	s.UpdatedAt, o.UpdatedAt = nil, nil
	return s.Encode() == o.Encode()
}

func yamlUnmarshalLenient(data string, v any) error { return yaml.Unmarshal([]byte(data), v) }
