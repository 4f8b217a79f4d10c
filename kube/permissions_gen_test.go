package kube_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/ctpool-tui/ctpool-tui/kube/internal/permderive"
)

// TestPermissionTableUpToDate derives every action's permissions again from
// the code that performs it and fails when the checked-in table differs.
func TestPermissionTableUpToDate(t *testing.T) {
	want, err := permderive.Source()
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(permderive.Generated)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatalf("kube/%s is stale: the permissions the actions need changed.\nRun go generate ./kube (or make generate) and commit it.\nA fresh derivation gives:\n%s", permderive.Generated, want)
	}
}
