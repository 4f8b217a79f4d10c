//go:build integration

package kube_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// TestIntegrationPatchPodMetaUID: the claim marks' patch names the Pod's
// UID, and the API server refuses it for another Pod of the same name (one
// deleted and created again since it was read): ErrConflict, nothing written.
func TestIntegrationPatchPodMetaUID(t *testing.T) {
	env := kubetest.Require(t)
	pods := env.Client.CoreV1().Pods(env.Namespace)
	pod, err := pods.Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "desk-1"},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "registry.example/desktop:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := kube.NewCluster(env.Client, env.Namespace)
	yes, no := "true", "false"
	labels, annotations := map[string]*string{engine.LabelClaimed: &yes}, map[string]*string{engine.AnnotationSafeToEvict: &no}
	if err := c.PatchPodMeta(t.Context(), pod.Name, "0badc0de-0000-0000-0000-000000000000", labels, annotations); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("patch naming another UID: %v; want ErrConflict", err)
	}
	if got, _ := pods.Get(t.Context(), pod.Name, metav1.GetOptions{}); engine.ClaimMarked(got) {
		t.Fatal("the refused patch was written")
	}
	if err := c.PatchPodMeta(t.Context(), pod.Name, pod.UID, labels, annotations); err != nil {
		t.Fatalf("patch naming the Pod's UID: %v", err)
	}
	if got, _ := pods.Get(t.Context(), pod.Name, metav1.GetOptions{}); !engine.ClaimMarked(got) {
		t.Fatalf("marks not written: %v %v", got.Labels, got.Annotations)
	}
}
