package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestNodes(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vk-sandbox-0",
		Labels: map[string]string{"type": "virtual-kubelet"}}})
	nodes, err := (&Nodes{Client: client}).Nodes(t.Context())
	if err != nil || len(nodes) != 1 || nodes[0].Name != "vk-sandbox-0" {
		t.Fatalf("Nodes = %v, %v", nodes, err)
	}
}

func TestNodesForbiddenIsNotReadable(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", nil)
	})
	nodes, err := (&Nodes{Client: client}).Nodes(t.Context())
	if err != nil || nodes != nil {
		t.Fatalf("Forbidden: Nodes = %v, %v; want nil, nil", nodes, err)
	}
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("down")
	})
	if _, err := (&Nodes{Client: client}).Nodes(t.Context()); err == nil {
		t.Fatal("an unavailable server gave no error")
	}
}
