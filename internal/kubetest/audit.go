package kubetest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// AuditDelete is one delete of a Pod or a PVC as the plane's API server
// audited it (testdata/cluster/audit-policy.yaml): who sent it, with which
// client, with which preconditions, and what the server answered.
type AuditDelete struct {
	When      time.Time
	Resource  string // pods or persistentvolumeclaims
	Name      string
	User      string
	UserAgent string
	Code      int
	// Preconditions is the request's DeleteOptions preconditions, as sent
	// ("" when the delete named no precondition).
	Preconditions string
}

func (d AuditDelete) String() string {
	pre := d.Preconditions
	if pre == "" {
		pre = "none"
	}
	return fmt.Sprintf("%s delete %s/%s by %q (%s), preconditions %s: %d",
		d.When.UTC().Format("15:04:05.000000"), d.Resource, d.Name, d.User, d.UserAgent, pre, d.Code)
}

type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject struct {
		Preconditions json.RawMessage `json:"preconditions"`
	} `json:"requestObject"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// AuditDeletes returns the audited deletes of the Pods and PVCs named name in
// the test's namespace, oldest first. A plane started without the audit log
// (an older up script) answers an error saying so.
func (e *Env) AuditDeletes(name string) ([]AuditDelete, error) {
	files, _ := filepath.Glob(filepath.Join(e.Dir, "audit-*.log")) // rotated backups
	files = append(files, filepath.Join(e.Dir, "audit.log"))
	var out []AuditDelete
	found := false
	for _, f := range files {
		ds, err := readAuditDeletes(f, e.Namespace, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, err
		}
		found = true
		out = append(out, ds...)
	}
	if !found {
		return nil, fmt.Errorf("no audit log in %s: the plane was started without one (testdata/cluster/up starts it with one)", e.Dir)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].When.Before(out[j].When) })
	return out, nil
}

func readAuditDeletes(path, namespace, name string) ([]AuditDelete, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditDelete
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		// Cheap filter before decoding: most lines are other objects.
		if !strings.Contains(string(line), `"name":"`+name+`"`) {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			continue // a line cut by a rotation
		}
		if ev.Stage != "ResponseComplete" || ev.ObjectRef.Namespace != namespace || ev.ObjectRef.Name != name {
			continue
		}
		pre := ""
		if len(ev.RequestObject.Preconditions) > 0 && string(ev.RequestObject.Preconditions) != "null" {
			pre = string(ev.RequestObject.Preconditions)
		}
		out = append(out, AuditDelete{
			When: ev.RequestReceivedTimestamp, Resource: ev.ObjectRef.Resource, Name: name,
			User: ev.User.Username, UserAgent: ev.UserAgent, Code: ev.ResponseStatus.Code, Preconditions: pre,
		})
	}
	return out, sc.Err()
}
