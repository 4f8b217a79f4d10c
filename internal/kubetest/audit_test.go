package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditDeletes(t *testing.T) {
	line := func(stage, ns, name, agent, pre string, code int) string {
		body := `{}`
		if pre != "" {
			body = `{"kind":"DeleteOptions","preconditions":` + pre + `}`
		}
		return fmt.Sprintf(`{"kind":"Event","stage":%q,"verb":"delete","user":{"username":"admin"},"userAgent":%q,`+
			`"objectRef":{"resource":"pods","namespace":%q,"name":%q},"responseStatus":{"code":%d},"requestObject":%s,`+
			`"requestReceivedTimestamp":"2026-12-01T10:00:0%d.000000Z"}`, stage, agent, ns, name, code, body, code%10)
	}
	dir := t.TempDir()
	rotated := line("ResponseComplete", "ns", "desk-1", "ctpool-tui-kubetest/user", `{"uid":"u-1"}`, 200) + "\n"
	current := strings.Join([]string{
		line("ResponseStarted", "ns", "desk-1", "x", "", 201),                        // not the completed stage
		line("ResponseComplete", "other", "desk-1", "x", "", 202),                    // another namespace
		line("ResponseComplete", "ns", "desk-10", "x", "", 203),                      // another name
		line("ResponseComplete", "ns", "desk-1", "ctpool-tui-kubetest/cli", "", 404), // the one
		`{"kind":"Event","stage":"ResponseComplete","objectRef":{"name":"desk-1"`,    // cut by a rotation
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "audit-2026-12-01T10-00-00.000.log"), []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.log"), []byte(current), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &Env{Dir: dir, Namespace: "ns"}
	got, err := e.AuditDeletes("desk-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d deletes, want 2: %v", len(got), got)
	}
	if got[0].UserAgent != "ctpool-tui-kubetest/user" || got[0].Preconditions != `{"uid":"u-1"}` || got[0].Code != 200 {
		t.Errorf("first delete = %+v", got[0])
	}
	if got[1].UserAgent != "ctpool-tui-kubetest/cli" || got[1].Preconditions != "" || got[1].Code != 404 {
		t.Errorf("second delete = %+v", got[1])
	}
	if s := got[1].String(); !strings.Contains(s, "preconditions none") || !strings.Contains(s, "pods/desk-1") {
		t.Errorf("String() = %q", s)
	}
	if _, err := (&Env{Dir: t.TempDir(), Namespace: "ns"}).AuditDeletes("desk-1"); err == nil {
		t.Error("no audit log: want an error saying so")
	}
}
