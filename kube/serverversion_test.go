package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestCheckServerVersion(t *testing.T) {
	for _, tc := range []struct {
		name       string
		gitVersion string
		discErr    error
		tooOld     bool   // a *ServerVersionError
		warning    string // a substring of the warning; "" for none
	}{
		{name: "oldest minor", gitVersion: "v1.34.0"},
		{name: "oldest tested", gitVersion: "v1.34.4"},
		{name: "newest tested", gitVersion: "v1.37.2"},
		{name: "one below", gitVersion: "v1.33.9", tooOld: true},
		{name: "far below", gitVersion: "v1.31.2", tooOld: true},
		{name: "a vendor's build below", gitVersion: "v1.33.4-eks-7e2f9a1", tooOld: true},
		{name: "a vendor's build within", gitVersion: "v1.35.1+k3s1"},
		{name: "newer", gitVersion: "v1.38.0", warning: "newer than ctpool-tui is tested against (v1.34 to v1.37)"},
		{name: "unparsable", gitVersion: "v0.0.0-master+$Format:%H$"},
		{name: "empty", gitVersion: ""},
		{name: "no answer", discErr: errors.New("connection refused")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			d := cs.Discovery().(*fakediscovery.FakeDiscovery)
			d.FakedServerVersion = &version.Info{GitVersion: tc.gitVersion}
			if tc.discErr != nil {
				cs.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.discErr
				})
			}
			warning, err := CheckServerVersion(context.Background(), d)
			var verr *ServerVersionError
			if got := errors.As(err, &verr); got != tc.tooOld {
				t.Fatalf("error %v; want a ServerVersionError: %v", err, tc.tooOld)
			}
			if tc.tooOld {
				want := "the API server runs Kubernetes " + tc.gitVersion + "; ctpool-tui supports v1.34 to v1.37: "
				if msg := err.Error(); !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") {
					t.Errorf("error %q; want one line starting %q", msg, want)
				}
			} else if err != nil {
				t.Fatalf("error %v", err)
			}
			if (warning == "") != (tc.warning == "") || !strings.Contains(warning, tc.warning) {
				t.Errorf("warning %q; want one containing %q", warning, tc.warning)
			}
		})
	}
}

// The check asks once: one request for /version, whatever the verdict.
func TestCheckServerVersionAsksOnce(t *testing.T) {
	cs := fake.NewClientset()
	d := cs.Discovery().(*fakediscovery.FakeDiscovery)
	d.FakedServerVersion = &version.Info{GitVersion: "v1.31.2"}
	if _, err := CheckServerVersion(context.Background(), d); err == nil {
		t.Fatal("no error for v1.31.2")
	}
	if n := len(cs.Actions()); n != 1 {
		t.Errorf("%d requests, want 1: %v", n, cs.Actions())
	}
}
