// Package pooltest holds what the integration tests of several packages
// build a pool with on the local control plane: an engine on the test's
// namespace and a small member specification.
package pooltest

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
)

// Image is the member image of the test pools (kwok runs no image).
const Image = "registry.example/desktop:1"

// Engine is an engine on the test's namespace, as the admin, on the wall clock.
func Engine(env *kubetest.Env) *engine.Engine {
	return &engine.Engine{Cluster: kube.NewCluster(env.Client, env.Namespace), Namespace: env.Namespace, Now: time.Now}
}

// SmallSpec is a pool of size members of image, each small enough for many
// on the plane's node.
func SmallSpec(image string, size int) engine.Spec {
	s := engine.Spec{Image: image, CPU: "100m", Memory: "128Mi", Disk: "1Gi", Size: size}
	s.Default()
	return s
}

// PodReady reports whether a Pod is Ready and not being deleted.
func PodReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
