package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// The kwok.x-k8s.io/v1alpha1 kinds of the plane's kubelet API (the CRDs of
// testdata/cluster/crds): a Pod's exec target and its log files.
var (
	execGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "execs"}
	logsGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}
)

// sharedLogMarker is in the log the plane serves for a Pod with no Logs
// object of its own (testdata/cluster/up writes it).
const sharedLogMarker = "kwok test plane: this Pod has no log of its own"

// Member is a member Pod whose kubelet API the plane's kwok serves from files
// of its own (ServeMember): commands exec'd in its containers run in Dir
// (with kwok's environment, as kwok's user), and its container log is the
// file Log, the previous container's PreviousLog (absent until a test
// writes it). Both log files are in the CRI format a kubelet reads
// (AppendLog writes it).
type Member struct {
	Pod, Dir, Log, PreviousLog string
}

// ServeMember gives the Running Pod pod of the test's namespace, on a node
// whose kubelet API kwok serves (node-a, node-b, vk-cocoon-0), its own exec
// directory and log files under the plane's state dir, and waits until the
// API server's exec and log requests for it reach them. The directory is
// removed when the test ends.
func (e *Env) ServeMember(t testing.TB, pod string) *Member {
	t.Helper()
	ctx := t.Context()
	m := &Member{Pod: pod, Dir: filepath.Join(e.Dir, "kubelet", e.Namespace, pod)}
	m.Log = filepath.Join(m.Dir, "desktop.log")
	m.PreviousLog = filepath.Join(m.Dir, "desktop.previous.log")
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(m.Dir) })
	if err := os.WriteFile(m.Log, nil, 0o644); err != nil {
		t.Fatalf("kubetest: %v", err)
	}

	dyn, err := dynamic.NewForConfig(e.Config)
	if err != nil {
		t.Fatalf("kubetest: dynamic client: %v", err)
	}
	objs := []struct {
		gvr  schema.GroupVersionResource
		kind string
		spec map[string]any
	}{
		{execGVR, "Exec", map[string]any{"execs": []any{
			map[string]any{"local": map[string]any{"workDir": m.Dir}},
		}}},
		{logsGVR, "Logs", map[string]any{"logs": []any{
			map[string]any{"logsFile": m.Log, "previousLogsFile": m.PreviousLog, "follow": true},
		}}},
	}
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": o.kind,
			"metadata": map[string]any{"name": pod, "namespace": e.Namespace},
			"spec":     o.spec,
		}}
		if _, err := dyn.Resource(o.gvr).Namespace(e.Namespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				t.Fatalf("kubetest: creating the %s of %s: %v (the plane predates its kubelet API: run testdata/cluster/down and up again)", o.kind, pod, err)
			}
			t.Fatalf("kubetest: creating the %s of %s: %v", o.kind, pod, err)
		}
	}

	// kwok reads the objects through a watch: poll until its answers come
	// from the member's own directory and log.
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("kubetest: last answer for %s: %s", pod, last)
		}
	}()
	e.WaitFor(t, setupTimeout, "kwok to serve exec and logs of "+pod+" from "+m.Dir, func() (bool, error) {
		out, err := e.execOutput(ctx, pod, "pwd")
		if err != nil || strings.TrimSpace(out) != m.Dir {
			last = fmt.Sprintf("exec pwd: %q, %v", out, err)
			return false, nil
		}
		tail := int64(10)
		b, err := e.Client.CoreV1().Pods(e.Namespace).GetLogs(pod, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
		if err != nil || bytes.Contains(b, []byte(sharedLogMarker)) {
			last = fmt.Sprintf("log: %q, %v", b, err)
			return false, nil
		}
		return true, nil
	})
	return m
}

// execOutput runs command in the Pod's first container with the admin
// identity and returns its standard output.
func (e *Env) execOutput(ctx context.Context, pod string, command ...string) (string, error) {
	req := e.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(e.Namespace).Name(pod).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(e.Config, "POST", req.URL())
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	return out.String(), err
}

// AppendLog appends lines to a log file in the CRI format (one
// "TIMESTAMP STREAM F TEXT" line each); stream is "stdout" or "stderr".
// A line must not hold a newline.
func AppendLog(t testing.TB, path, stream string, lines ...string) {
	t.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		if strings.ContainsRune(l, '\n') {
			t.Fatalf("kubetest: log line %q holds a newline", l)
		}
		fmt.Fprintf(&b, "%s %s F %s\n", time.Now().UTC().Format(time.RFC3339Nano), stream, l)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		_ = f.Close()
		t.Fatalf("kubetest: appending to %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
}
