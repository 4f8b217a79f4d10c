//go:build integration

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// An Unschedulable member's MESSAGE is the scheduler's own message, cut to
// its first sentence (whole with -o wide), and the diagnosis has its own
// column, in status and in --once alike.
func TestIntegrationStatusShowsSchedulerMessage(t *testing.T) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	ns := env.Namespace
	run := func(want []int, args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"-n", ns}, args...)...)
		for _, w := range want {
			if code == w {
				return out
			}
		}
		t.Fatalf("%v: exit %d, want one of %v\nstdout: %s\nstderr: %s", args, code, want, out, errOut)
		return ""
	}
	ok, attention := []int{exitOK}, []int{exitAttention}
	run(ok, "apply", "huge", "--image", "registry.example/desktop:1", "--size", "1", "--cpu", "100m", "--mem", "500Gi", "--disk", "1Gi")

	// The scheduler may first report the data PVC still binding; it retries
	// and then says that no node has the memory.
	var member render.OnceMember
	env.WaitFor(t, 60*time.Second, "huge-1 Unschedulable for lack of memory", func() (bool, error) {
		var r render.OnceReport
		if err := json.Unmarshal([]byte(run(ok, "status", "huge", "-o", "json")), &r); err != nil {
			return false, err
		}
		if len(r.Pools) != 1 || len(r.Pools[0].Members) != 1 {
			return false, nil
		}
		member = r.Pools[0].Members[0]
		return member.State == string(engine.StateUnschedulable) && strings.Contains(member.Message, "Insufficient memory"), nil
	})
	whole := member.Message
	t.Logf("scheduler: %s", whole)
	if !strings.HasPrefix(whole, "0/") || !strings.Contains(whole, " nodes are available: ") {
		t.Fatalf("JSON message %q is not the scheduler's", whole)
	}
	if member.Diagnosis == nil || member.Diagnosis.Reason != "not enough capacity: memory" {
		t.Fatalf("JSON diagnosis %+v, want its own field", member.Diagnosis)
	}
	first := engine.FirstSentence(whole)

	for _, c := range []struct {
		name string
		want []int
		args []string
		msg  string
	}{
		{"status", ok, []string{"status", "huge"}, first},
		{"--once", attention, []string{"--once", "--pool", "huge"}, first},
		{"status -o wide", ok, []string{"status", "huge", "-o", "wide"}, whole},
		{"--once -o wide", attention, []string{"--once", "--pool", "huge", "-o", "wide"}, whole},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := run(c.want, c.args...)
			msg := kubetest.TableCell(t, out, "huge-1", "MESSAGE")
			if !strings.HasPrefix(msg, "0/") || msg != c.msg {
				t.Errorf("MESSAGE %q, want the scheduler's %q\n%s", msg, c.msg, out)
			}
			if d := kubetest.TableCell(t, out, "huge-1", "DIAGNOSIS"); d != "not enough capacity: memory" {
				t.Errorf("DIAGNOSIS %q, want the diagnosis\n%s", d, out)
			}
		})
	}
	if i := strings.Index(whole, ". preemption:"); i >= 0 && (len(first) != i+1 || strings.Contains(first, "preemption")) {
		t.Errorf("first sentence %q of %q keeps the preemption verdict", first, whole)
	}
}
