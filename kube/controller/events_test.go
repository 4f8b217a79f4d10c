package controller

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// A failed step is logged with its pool and step, and written as a Warning
// Event on the pool ConfigMap by the reconciler's recorder; a reconcile that
// changes something logs one line with its actions and duration.
func TestFailuresAreLoggedAndRecorded(t *testing.T) {
	spec := testSpec("registry.example/desktop:1", 2)
	client := fake.NewClientset(append([]runtime.Object{engine.BuildConfigMap(testNS, "desk", spec)}, member("desk", 1, spec)...)...)
	client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("admission webhook refused the Pod")
	})
	var logs kubetest.SyncBuffer
	rec, stop := NewRecorder(client, "reconciler-0")
	defer stop()
	c := newTestController(t, client, func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		o.Recorder = rec
	})
	_, err := c.sync(context.Background(), engine.PoolRef{Namespace: testNS, Name: "desk"})
	if err == nil {
		t.Fatal("the sync did not fail")
	}
	var line map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		if m["msg"] == "reconcile failed" {
			line = m
		}
	}
	if line == nil || line["pool"] != "vdi/desk" || line["step"] != "create" || line["level"] != "ERROR" || !strings.Contains(line["err"].(string), "admission webhook refused") {
		t.Fatalf("log line %v\nall logs:\n%s", line, logs.String())
	}

	var ev *corev1.Event
	waitFor(t, 10*time.Second, "the Warning Event", func() bool {
		evs, _ := client.CoreV1().Events(testNS).List(context.Background(), metav1.ListOptions{})
		for i := range evs.Items {
			if evs.Items[i].Reason == "FailedCreate" {
				ev = &evs.Items[i]
				return true
			}
		}
		return false
	})
	if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.Kind != "ConfigMap" || ev.InvolvedObject.Name != engine.ConfigMapName("desk") ||
		ev.ReportingController != ReportingController || ev.ReportingInstance != "reconciler-0" || !strings.Contains(ev.Message, "desk-2: create Pod") {
		t.Fatalf("event %+v", ev)
	}

	// Once Pods can be created, the change is logged with its actions (the
	// failed create left desk-2's PVC: it is started).
	client.ReactionChain = client.ReactionChain[1:] // the failing reactor goes
	logs.Reset()
	if _, err := c.sync(context.Background(), engine.PoolRef{Namespace: testNS, Name: "desk"}); err != nil {
		t.Fatal(err)
	}
	if s := logs.String(); !strings.Contains(s, `"msg":"reconciled"`) || !strings.Contains(s, `"actions":"1 start"`) || !strings.Contains(s, `"duration":`) {
		t.Fatalf("logs after a change:\n%s", s)
	}
}
