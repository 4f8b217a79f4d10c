package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

func labelledNamespace(level string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNS}}
	if level != "" {
		ns.Labels = map[string]string{engine.LabelPodSecurityEnforce: level}
	}
	return ns
}

// TestApplyReadsTheNamespacesPodSecurity: over the clientset, apply reads
// the namespace's enforce label; a refused pool writes nothing; a namespace
// that cannot be read (NotFound, Forbidden) is a warning and the apply goes on.
func TestApplyReadsTheNamespacesPodSecurity(t *testing.T) {
	priv := engine.Spec{Image: "ghcr.io/example/desktop:1", Size: 1, Privileged: true}
	tests := []struct {
		name     string
		objs     []runtime.Object
		forbid   bool
		wantErr  string
		wantWarn string
	}{
		{name: "privileged namespace", objs: []runtime.Object{labelledNamespace("privileged")}},
		{name: "unlabelled namespace", objs: []runtime.Object{labelledNamespace("")}},
		{name: "baseline namespace refuses", objs: []runtime.Object{labelledNamespace("baseline")},
			wantErr: "namespace corral-test enforces baseline (label pod-security.kubernetes.io/enforce); a privileged pool needs privileged"},
		{name: "no namespace object", wantWarn: "the Pod Security level namespace corral-test enforces is unknown (not found)"},
		{name: "get namespaces forbidden", forbid: true, objs: []runtime.Object{labelledNamespace("baseline")},
			wantWarn: "the Pod Security level namespace corral-test enforces is unknown (no permission to get namespaces)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objs...)
			if tt.forbid {
				cs.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, clusterNS, errors.New("no RBAC policy matched"))
				})
			}
			e := &engine.Engine{Cluster: NewCluster(cs, clusterNS), Namespace: clusterNS, Now: func() time.Time { return clusterNow }}
			res, err := e.Apply(context.Background(), "desk", priv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, engine.ErrPodSecurityRefused) {
					t.Fatalf("Apply error %v, want %q", err, tt.wantErr)
				}
				if w := writeActions(cs); len(w) != 0 {
					t.Fatalf("a refused apply wrote %v", w)
				}
				return
			}
			if err != nil || !res.Created {
				t.Fatalf("Apply = %+v, %v", res, err)
			}
			if got := strings.Join(res.Warnings, "\n"); !strings.Contains(got, tt.wantWarn) || (tt.wantWarn == "" && got != "") {
				t.Fatalf("warnings %q, want %q", got, tt.wantWarn)
			}
		})
	}
}

// TestPodSecurityRefusalOverTheClientset: a Pod create refused by admission
// (Forbidden, "violates PodSecurity") is recorded with the API server's
// message, and the diagnosis from the recorded status explains it.
func TestPodSecurityRefusalOverTheClientset(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(labelledNamespace("privileged"))
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Name
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, name,
			errors.New(`violates PodSecurity "baseline:latest": privileged (container "desktop" must not set securityContext.privileged=true)`))
	})
	e := &engine.Engine{Cluster: NewCluster(cs, clusterNS), Namespace: clusterNS, Now: func() time.Time { return clusterNow }}
	res, err := e.Apply(ctx, "desk", engine.Spec{Image: "ghcr.io/example/desktop:1", Size: 1, Privileged: true})
	if err == nil || !res.Created {
		t.Fatalf("Apply = %+v, %v; want the pool written and its create refused", res, err)
	}
	want := `pods "desk-1" is forbidden: violates PodSecurity "baseline:latest": privileged`
	if len(res.Reconcile.Errors) != 1 || !strings.Contains(res.Reconcile.Errors[0], want) || !strings.Contains(err.Error(), want) {
		t.Fatalf("reconcile errors %q (%v), want the API server's %q", res.Reconcile.Errors, err, want)
	}
	cm, _ := cs.CoreV1().ConfigMaps(clusterNS).Get(ctx, engine.ConfigMapName("desk"), metav1.GetOptions{})
	st, _ := engine.ParseStatus(cm.Data[engine.KeyStatus])
	v := engine.Observe(mustSnapshot(t, e), clusterNow)
	d := engine.Diagnose(v.Member("desk-1"), nil, nil, st.Errors)
	if d.Reason != "create refused by Pod Security admission" || !strings.Contains(d.Evidence, want) {
		t.Fatalf("diagnosis %+v from recorded errors %q", d, st.Errors)
	}
}
