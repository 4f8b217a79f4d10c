package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	k8sversion "k8s.io/apimachinery/pkg/version"
)

// versionServer is an API server that answers /version with gitVersion
// and 404 to everything else; it counts the other requests.
func versionServer(t *testing.T, gitVersion string) (url string, others *atomic.Int64) {
	t.Helper()
	others = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(k8sversion.Info{Major: "1", GitVersion: gitVersion})
			return
		}
		others.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, others
}

// An API server older than the supported range is refused at start by the
// dashboard's --once and by the commands, with one line and exit 1, before
// any other request; one within the range goes on to its requests.
func TestServerTooOldIsRefused(t *testing.T) {
	const refusal = "error: the API server runs Kubernetes v1.31.2; ctpool-tui supports v1.34 to v1.37: "
	for _, args := range [][]string{
		{"--once"},
		{"--once", "-A"},
		{"status", "desk"},
		{"claim", "desk", "alice"},
		{"rollout", "status", "desk"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			url, others := versionServer(t, "v1.31.2")
			t.Setenv("KUBECONFIG", writeKubeconfig(t, url, "old"))
			code, _, stderr := runCmd(t, args...)
			if code != exitError {
				t.Errorf("exit %d, want %d", code, exitError)
			}
			if !strings.HasPrefix(stderr, refusal) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q; want one line starting %q", stderr, refusal)
			}
			if n := others.Load(); n != 0 {
				t.Errorf("%d requests besides /version", n)
			}

			url, others = versionServer(t, "v1.34.4")
			t.Setenv("KUBECONFIG", writeKubeconfig(t, url, "supported"))
			_, _, stderr = runCmd(t, args...)
			if strings.Contains(stderr, "supports v1.34 to v1.37") {
				t.Errorf("a v1.34.4 server refused: %q", stderr)
			}
			if others.Load() == 0 {
				t.Error("no request after /version on a supported server")
			}
		})
	}
}

// A newer server than the range gets a warning line and no refusal.
func TestServerNewerWarns(t *testing.T) {
	url, others := versionServer(t, "v1.38.1")
	t.Setenv("KUBECONFIG", writeKubeconfig(t, url, "new"))
	_, _, stderr := runCmd(t, "status", "desk")
	want := "warning: the API server runs Kubernetes v1.38.1, newer than ctpool-tui is tested against (v1.34 to v1.37)\n"
	if !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr %q; want it to start with %q", stderr, want)
	}
	if others.Load() == 0 {
		t.Error("no request after the warning")
	}
}

// In a fleet of contexts a too-old cluster is one context's error; the
// others are read.
func TestServerTooOldInFleetIsOneContext(t *testing.T) {
	oldURL, _ := versionServer(t, "v1.31.2")
	newURL, newOthers := versionServer(t, "v1.37.2")
	kc := writeKubeconfig(t, oldURL, "old")
	kc2 := writeKubeconfig(t, newURL, "current")
	t.Setenv("KUBECONFIG", kc+":"+kc2)
	_, stdout, stderr := runCmd(t, "--once", "--context", "old,current")
	out := stdout + stderr
	if !strings.Contains(out, "the API server runs Kubernetes v1.31.2; ctpool-tui supports v1.34 to v1.37") {
		t.Errorf("output names no refusal of the old context:\n%s", out)
	}
	if newOthers.Load() == 0 {
		t.Error("the supported context was not read")
	}
}
