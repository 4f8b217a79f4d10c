package kube

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Who is asked once, on the first entry, and names the caller in each.
func TestAuditorAsksWhoOnFirstRecordOnly(t *testing.T) {
	cases := []struct {
		name    string
		who     string
		entries int
		want    string
	}{
		{"no write, no question", "alice", 0, ""},
		{"asked once for two entries", "alice", 2, "claim by alice"},
		{"an unknown caller", "", 1, "claim by unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			asked := 0
			a := &Auditor{Client: client, Namespace: "vdi", Who: func(context.Context) string { asked++; return tc.who }}
			for range tc.entries {
				a.Record(context.Background(), engine.AuditEntry{Pool: "desk", Action: "claim", Member: "desk-1"})
			}
			if want := min(tc.entries, 1); asked != want {
				t.Fatalf("Who asked %d times for %d entries, want %d", asked, tc.entries, want)
			}
			evs, err := client.CoreV1().Events("vdi").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs.Items) != tc.entries {
				t.Fatalf("%d Events for %d entries", len(evs.Items), tc.entries)
			}
			for _, ev := range evs.Items {
				if !strings.HasPrefix(ev.Message, tc.want) {
					t.Errorf("message %q, want prefix %q", ev.Message, tc.want)
				}
			}
		})
	}
}
