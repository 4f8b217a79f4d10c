package kube

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestRequestTimeoutFlag(t *testing.T) {
	for _, tt := range []struct {
		flag string
		want time.Duration
		err  bool
	}{
		{"0", DefaultRequestBound, false},
		{"", DefaultRequestBound, false},
		{"5", 5 * time.Second, false},
		{"250ms", 250 * time.Millisecond, false},
		{"2m", 2 * time.Minute, false},
		{"0s", DefaultRequestBound, false},
		{"-1s", 0, true},
		{"soon", 0, true},
	} {
		o := NewOptions()
		*o.Flags.Timeout = tt.flag
		got, err := o.RequestTimeout()
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("--request-timeout %q = %v, %v; want %v (error %v)", tt.flag, got, err, tt.want, tt.err)
		}
	}
}

func TestLongRunning(t *testing.T) {
	for _, tt := range []struct {
		url    string
		header string
		want   bool
	}{
		{"/api/v1/namespaces/vdi/pods?watch=true&labelSelector=x", "", true},
		{"/apis/coordination.k8s.io/v1/namespaces/vdi/leases?watch=1", "", true},
		{"/api/v1/namespaces/vdi/pods/desk-1/log?follow=true&container=desktop", "", true},
		{"/api/v1/namespaces/vdi/pods/desk-1/log?tailLines=100", "", false},
		{"/api/v1/namespaces/vdi/pods/desk-1/exec?command=sh", "", true},
		{"/api/v1/namespaces/vdi/pods/desk-1/attach", "", true},
		{"/api/v1/namespaces/vdi/pods/desk-1/portforward", "", true},
		{"/api/v1/namespaces/vdi/services/x:80/proxy/", "", true},
		{"/api/v1/namespaces/vdi/pods", "SPDY/3.1", true},
		{"/api/v1/namespaces/vdi/pods", "", false},
		{"/api/v1/namespaces/vdi/pods?watch=false", "", false},
		{"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "", false},
	} {
		u, _ := url.Parse("https://h" + tt.url)
		req := &http.Request{URL: u, Header: http.Header{}}
		if tt.header != "" {
			req.Header.Set("Upgrade", tt.header)
		}
		if got := LongRunning(req); got != tt.want {
			t.Errorf("LongRunning(%s, upgrade %q) = %v, want %v", tt.url, tt.header, got, tt.want)
		}
	}
}

// With --request-timeout 300ms, an ordinary request that hangs fails after
// that long, while a watch and a followed log streaming for several times as
// long are not cut, through a clientset built from the Options.
func TestStreamsOutliveTheRequestTimeout(t *testing.T) {
	const lines = 12
	const every = 100 * time.Millisecond // 1.2 s of streaming against a 300 ms bound
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fl := w.(http.Flusher)
		switch {
		case strings.HasSuffix(r.URL.Path, "/log"):
			w.Header().Set("Content-Type", "text/plain")
			for i := range lines {
				fmt.Fprintf(w, "line %d\n", i)
				fl.Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(every):
				}
			}
		case r.URL.Query().Get("watch") == "true":
			w.Header().Set("Content-Type", "application/json")
			for i := range lines {
				fmt.Fprintf(w, `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm%d","namespace":"vdi","resourceVersion":"%d"}}}`+"\n", i, i+1)
				fl.Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(every):
				}
			}
		default: // an ordinary request that never answers in time
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
	}))
	defer srv.Close()

	o := NewOptions()
	*o.Flags.APIServer = srv.URL
	*o.Flags.Timeout = "300ms"
	cfg, err := o.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("ordinary request", func(t *testing.T) {
		start := time.Now()
		_, err := cs.CoreV1().ConfigMaps("vdi").Get(ctx, "x", metav1.GetOptions{})
		if err == nil || time.Since(start) > 3*time.Second {
			t.Fatalf("Get = %v after %s, want a timeout near 300ms", err, time.Since(start))
		}
	})
	t.Run("watch", func(t *testing.T) {
		w, err := cs.CoreV1().ConfigMaps("vdi").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		n := 0
		for range w.ResultChan() {
			n++
		}
		if n != lines {
			t.Fatalf("watch delivered %d of %d events", n, lines)
		}
	})
	t.Run("followed log", func(t *testing.T) {
		rc, err := cs.CoreV1().Pods("vdi").GetLogs("desk-1", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		n := 0
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			n++
		}
		if n != lines {
			t.Fatalf("log delivered %d of %d lines (%v)", n, lines, sc.Err())
		}
	})
}
