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

func secret(name string, typ corev1.SecretType) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterNS}, Type: typ,
		Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"r":{"auth":"c2VjcmV0"}}}`)}}
}

// TestApplyChecksPullSecretsOverTheClientset: apply reads each named
// Secret's type (get secrets); a missing or wrongly typed one writes
// nothing, a forbidden read is a warning, and the member Pods name them.
func TestApplyChecksPullSecretsOverTheClientset(t *testing.T) {
	tests := []struct {
		name     string
		objs     []runtime.Object
		forbid   bool
		wantErr  string
		wantWarn string
	}{
		{name: "a registry login", objs: []runtime.Object{secret("regcred", corev1.SecretTypeDockerConfigJson)}},
		{name: "missing", wantErr: "invalid imagePullSecrets: no Secret regcred in namespace corral-test; nothing was written"},
		{name: "opaque", objs: []runtime.Object{secret("regcred", corev1.SecretTypeOpaque)},
			wantErr: `invalid imagePullSecrets: regcred is of type "Opaque", not kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg`},
		{name: "forbidden", forbid: true, wantWarn: "imagePullSecrets not checked: regcred (no permission to get secrets)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(append(tt.objs, labelledNamespace(""))...)
			if tt.forbid {
				cs.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "regcred", errors.New("no RBAC policy matched"))
				})
			}
			e := &engine.Engine{Cluster: NewCluster(cs, clusterNS), Namespace: clusterNS, Now: func() time.Time { return clusterNow }}
			res, err := e.Apply(context.Background(), "desk", engine.Spec{Image: "ghcr.io/example/desktop:1", Size: 1, ImagePullSecrets: []string{"regcred"}})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Apply error %v, want %q", err, tt.wantErr)
				}
				if w := writeActions(cs); len(w) != 0 {
					t.Fatalf("a refused apply wrote %v", w)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply = %+v, %v", res, err)
			}
			if got := strings.Join(res.Warnings, "\n"); !strings.Contains(got, tt.wantWarn) || (tt.wantWarn == "" && got != "") {
				t.Fatalf("warnings %q, want %q", got, tt.wantWarn)
			}
			pod, err := cs.CoreV1().Pods(clusterNS).Get(context.Background(), "desk-1", metav1.GetOptions{})
			if err != nil || len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "regcred" {
				t.Fatalf("member Pod %v, %v", pod, err)
			}
		})
	}
}
