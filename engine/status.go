package engine

import (
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Status is the pool status, stored as YAML under the key "status" of the pool ConfigMap.
type Status struct {
	Desired       int  `json:"desired"`
	Observed      int  `json:"observed"`
	Ready         int  `json:"ready"`
	Claimed       int  `json:"claimed"`
	Free          int  `json:"free"`
	Unschedulable int  `json:"unschedulable"`
	Drifted       int  `json:"drifted"`
	Failed        int  `json:"failed"`
	Exhausted     bool `json:"exhausted"`
	// Source is the pool's current source hash.
	Source  string      `json:"source,omitempty"`
	Members []MemberRow `json:"members,omitempty"`
	// Errors of the last reconcile (empty when it succeeded).
	Errors []string `json:"errors,omitempty"`
	// UpdatedAt is when a reconcile last recorded a change of this status. A
	// reconcile that changes nothing does not write, so this is the time of the
	// last change, not of the last run.
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
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
}

// ParseStatus decodes a recorded status. An empty string is an empty status.
func ParseStatus(data string) (Status, error) {
	var s Status
	if strings.TrimSpace(data) == "" {
		return s, nil
	}
	if err := yaml.Unmarshal([]byte(data), &s); err != nil {
		return Status{}, &InvalidError{Field: "status", Reason: cleanYAMLError(err)}
	}
	return s, nil
}

// Encode returns the status as YAML.
func (s Status) Encode() string {
	out, err := yaml.Marshal(s)
	if err != nil {
		return ""
	}
	return string(out)
}

// sameContent reports whether two statuses differ only in UpdatedAt.
func (s Status) sameContent(o Status) bool {
	s.UpdatedAt, o.UpdatedAt = nil, nil
	return s.Encode() == o.Encode()
}

func yamlUnmarshalLenient(data string, v any) error { return yaml.Unmarshal([]byte(data), v) }
