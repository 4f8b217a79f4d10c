package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// Probe reports what /livez answered: an outage or an unhealthy server is an
// error; a refusal to this identity is an answer.
func TestProbeReportsWhatLivezAnswered(t *testing.T) {
	cases := []struct {
		name    string
		status  int // 0: nothing listens
		wantErr bool
	}{
		{"ok", http.StatusOK, false},
		{"forbidden to this identity", http.StatusForbidden, false},
		{"unhealthy", http.StatusInternalServerError, true},
		{"nothing listens", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/livez" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tc.status)
			}))
			host := srv.URL
			if tc.status == 0 {
				srv.Close()
			} else {
				defer srv.Close()
			}
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: host})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got := make(chan error, 1)
			go Probe(ctx, cs, 10*time.Millisecond, func(err error) {
				select {
				case got <- err:
				default:
				}
				cancel()
			})
			select {
			case err := <-got:
				if (err != nil) != tc.wantErr {
					t.Fatalf("reported %v, want an error: %v", err, tc.wantErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no report")
			}
		})
	}
}

// A fake clientset has no REST client: Probe returns at once.
func TestProbeWithoutRESTClient(t *testing.T) {
	done := make(chan struct{})
	go func() {
		Probe(context.Background(), fake.NewClientset(), time.Millisecond, func(error) { t.Error("reported on a fake clientset") })
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Probe did not return")
	}
}
