//go:build integration

package main

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// Shell completion on the real plane: pool names from the pool ConfigMaps
// of the namespace the flags name, the members of the pool typed, the
// namespaces of the cluster.
func TestIntegrationCompletion(t *testing.T) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	ns := env.Namespace
	for _, pool := range []string{"desk", "dev"} {
		code, out, errOut := runCmd(t, "-n", ns, "apply", pool, "--image", "registry.example/desktop:1", "--size", "2", "--cpu", "100m", "--mem", "128Mi", "--disk", "1Gi")
		if code != exitOK {
			t.Fatalf("apply %s: exit %d\n%s\n%s", pool, code, out, errOut)
		}
	}
	// A ConfigMap labelled for a pool but not its definition is no pool.
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "notes", Labels: map[string]string{engine.LabelPool: "ghost"}}}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), stray, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := func(cands []string) []string {
		var out []string
		for _, c := range cands {
			name, _, _ := strings.Cut(c, "\t")
			out = append(out, name)
		}
		return out
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"pools", []string{"-n", ns, "status", ""}, []string{"desk", "dev"}},
		{"pools by prefix", []string{"-n", ns, "claim", "des"}, []string{"desk"}},
		{"pools, namespace after the command", []string{"delete", "--namespace", ns, ""}, []string{"desk", "dev"}},
		{"pools of another namespace", []string{"-n", "default", "status", ""}, nil},
		{"members", []string{"-n", ns, "release", "desk", ""}, []string{"desk-1", "desk-2"}},
		{"members by prefix", []string{"-n", ns, "console", "dev", "dev-2"}, []string{"dev-2"}},
		{"members of a pool that does not exist", []string{"-n", ns, "release", "nopool", ""}, nil},
		{"namespaces", []string{"status", "-n", ns}, []string{ns}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, dir := complete(t, tc.args...)
			if !reflect.DeepEqual(names(got), tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if dir != noFileComp {
				t.Errorf("directive %s, want %s", dir, noFileComp)
			}
		})
	}
	// Namespaces by prefix: this test's among them (other runs' may be too).
	if got, _ := complete(t, "-n", ns[:strings.LastIndex(ns, "-")+1]); !slices.Contains(got, ns) {
		t.Errorf("namespaces by prefix: %q lacks %s", got, ns)
	}
	// A member's description is its state.
	got, _ := complete(t, "-n", ns, "release", "desk", "desk-1")
	if len(got) != 1 || !strings.HasPrefix(got[0], "desk-1\t") || len(got[0]) == len("desk-1\t") {
		t.Errorf("desk-1 without its state: %q", got)
	}

	// The viewer lists pools and members; it may not list namespaces, and
	// then nothing is offered, not an error and not file names.
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "viewer.kubeconfig"))
	if got, _ := complete(t, "-n", ns, "status", ""); !slices.Equal(names(got), []string{"desk", "dev"}) {
		t.Errorf("viewer: pools %q", got)
	}
	if got, dir := complete(t, "status", "-n", ""); len(got) != 0 || dir != noFileComp {
		t.Errorf("viewer: namespaces %q %s", got, dir)
	}
}
