//go:build integration

package kubetest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

const (
	ordinaryNodes = "node-a node-b"
	waitLong      = 60 * time.Second
)

func pod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:    "desk",
				Image:   "registry.example/desktop:1",
				Command: []string{"sleep", "infinity"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func toleratesVirtualKubelet(p *corev1.Pod) {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{
		Key: "virtual-kubelet.io/provider", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
	})
}

func nodeSelector(key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{key: value} }
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func createPod(t *testing.T, env *kubetest.Env, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := env.Client.CoreV1().Pods(env.Namespace).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	return got
}

// waitRunningReady waits until the Pod runs with Ready=True and returns it.
func waitRunningReady(t *testing.T, env *kubetest.Env, name string) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	env.WaitFor(t, waitLong, "pod "+name+" Running and Ready", func() (bool, error) {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		ready := condition(p, corev1.PodReady)
		return p.Status.Phase == corev1.PodRunning && ready != nil && ready.Status == corev1.ConditionTrue, nil
	})
	return last
}

// waitUnschedulable waits for PodScheduled=False/Unschedulable and returns the
// scheduler's message.
func waitUnschedulable(t *testing.T, env *kubetest.Env, name string) string {
	t.Helper()
	var msg string
	env.WaitFor(t, waitLong, "pod "+name+" Unschedulable", func() (bool, error) {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := condition(p, corev1.PodScheduled)
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
			return false, nil
		}
		if p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
			return false, fmt.Errorf("unschedulable pod is %s on %q", p.Status.Phase, p.Spec.NodeName)
		}
		msg = c.Message
		return true, nil
	})
	return msg
}

func waitGone(t *testing.T, env *kubetest.Env, what string, get func(context.Context) error) {
	t.Helper()
	env.WaitFor(t, waitLong, what+" to disappear", func() (bool, error) {
		err := get(t.Context())
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func nodeCount(t *testing.T, env *kubetest.Env) int {
	t.Helper()
	nodes, err := env.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing nodes: %v", err)
	}
	return len(nodes.Items)
}

// (a) a labelled Pod lands on an ordinary node, runs, and disappears when deleted.
func TestIntegrationPlanePodRunsOnOrdinaryNode(t *testing.T) {
	t.Parallel()
	env := kubetest.Require(t)
	createPod(t, env, pod("desk-1", func(p *corev1.Pod) { p.Labels["corral.dev/vdi-ct-pool"] = "desk" }))
	p := waitRunningReady(t, env, "desk-1")
	if !strings.Contains(ordinaryNodes, p.Spec.NodeName) || p.Spec.NodeName == "" {
		t.Errorf("pod runs on %q, want one of %s", p.Spec.NodeName, ordinaryNodes)
	}
	if p.Status.PodIP == "" || len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready {
		t.Errorf("running pod status incomplete: ip %q, containers %+v", p.Status.PodIP, p.Status.ContainerStatuses)
	}

	if err := env.Client.CoreV1().Pods(env.Namespace).Delete(t.Context(), "desk-1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod: %v", err)
	}
	waitGone(t, env, "pod desk-1", func(ctx context.Context) error {
		_, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, "desk-1", metav1.GetOptions{})
		return err
	})
}

// (b) a Pod asking for more CPU than any node has stays Pending with the scheduler's message.
func TestIntegrationPlaneTooBigPodIsUnschedulable(t *testing.T) {
	t.Parallel()
	env := kubetest.Require(t)
	createPod(t, env, pod("huge", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("100")
	}))
	msg := waitUnschedulable(t, env, "huge")
	t.Logf("scheduler: %s", msg)
	n := nodeCount(t, env)
	for _, want := range []string{fmt.Sprintf("0/%d nodes are available", n), "Insufficient cpu", "untolerated taint"} {
		if !strings.Contains(msg, want) {
			t.Errorf("scheduler message %q does not contain %q", msg, want)
		}
	}
}

// (c) the virtual nodes take only Pods that select them and tolerate their taint.
func TestIntegrationPlaneVirtualNodes(t *testing.T) {
	t.Parallel()
	env := kubetest.Require(t)
	cases := []struct {
		name, key, value, node string
	}{
		{"sandboxd", "sandbox.cocoonstack.io/runtime", "sandboxd", "vk-sandbox-0"},
		{"cocoon", "cocoonstack.io/pool", "default", "vk-cocoon-0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			createPod(t, env, pod(c.name+"-ok", nodeSelector(c.key, c.value), toleratesVirtualKubelet))
			createPod(t, env, pod(c.name+"-untolerated", nodeSelector(c.key, c.value)))

			p := waitRunningReady(t, env, c.name+"-ok")
			if p.Spec.NodeName != c.node {
				t.Errorf("pod with selector and toleration runs on %q, want %s", p.Spec.NodeName, c.node)
			}
			msg := waitUnschedulable(t, env, c.name+"-untolerated")
			t.Logf("scheduler: %s", msg)
			if !strings.Contains(msg, "untolerated taint") {
				t.Errorf("scheduler message %q does not name the untolerated taint", msg)
			}
		})
	}
}

// (d) PVCs of the default class get Bound; pvc-protection holds a used claim until its Pod is gone.
func TestIntegrationPlaneVolumeLifecycle(t *testing.T) {
	t.Parallel()
	env := kubetest.Require(t)
	ctx := t.Context()
	pvcs := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace)
	_, err := pvcs.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "desk-1-data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("5Gi"),
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pvc: %v", err)
	}
	var pvc *corev1.PersistentVolumeClaim
	env.WaitFor(t, waitLong, "pvc desk-1-data Bound", func() (bool, error) {
		pvc, err = pvcs.Get(ctx, "desk-1-data", metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, err
	})
	if got := ptr.Deref(pvc.Spec.StorageClassName, ""); got != "standard" {
		t.Errorf("pvc storage class %q, want the default %q", got, "standard")
	}
	pvName := pvc.Spec.VolumeName
	pv, err := env.Client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("bound pvc names volume %q: %v", pvName, err)
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != "desk-1-data" || pv.Spec.ClaimRef.Namespace != env.Namespace {
		t.Errorf("volume %s claimRef %+v does not point back at the claim", pvName, pv.Spec.ClaimRef)
	}

	createPod(t, env, pod("desk-1", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "desk-1-data"},
		}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}))
	waitRunningReady(t, env, "desk-1")

	if err := pvcs.Delete(ctx, "desk-1-data", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pvc: %v", err)
	}
	pvc, err = pvcs.Get(ctx, "desk-1-data", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pvc in use vanished at once: %v", err)
	}
	if pvc.DeletionTimestamp == nil || !slices.Contains(pvc.Finalizers, "kubernetes.io/pvc-protection") {
		t.Fatalf("pvc in use is not Terminating under pvc-protection: deletion %v, finalizers %v",
			pvc.DeletionTimestamp, pvc.Finalizers)
	}
	// The claim must stay while its Pod exists: watch it for a bounded while.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Second, true, func(context.Context) (bool, error) {
		// The test's context, not the poll's: the poll ending is the success.
		_, err := pvcs.Get(ctx, "desk-1-data", metav1.GetOptions{})
		return false, err
	})
	if !wait.Interrupted(err) {
		t.Fatalf("pvc of a running pod did not stay Terminating: %v", err)
	}

	if err := env.Client.CoreV1().Pods(env.Namespace).Delete(ctx, "desk-1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod: %v", err)
	}
	waitGone(t, env, "pvc desk-1-data", func(ctx context.Context) error {
		_, err := pvcs.Get(ctx, "desk-1-data", metav1.GetOptions{})
		return err
	})
	waitGone(t, env, "volume "+pvName, func(ctx context.Context) error {
		_, err := env.Client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
		return err
	})
}

// (e) a label-selector List returns exactly the matching objects.
func TestIntegrationPlaneLabelSelector(t *testing.T) {
	t.Parallel()
	env := kubetest.Require(t)
	ctx := t.Context()
	cms := env.Client.CoreV1().ConfigMaps(env.Namespace)
	for name, pool := range map[string]string{"desk-a": "desk", "desk-b": "desk", "other-a": "other"} {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{"corral.dev/vdi-ct-pool": pool},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating configmap %s: %v", name, err)
		}
	}
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "corral.dev/vdi-ct-pool=desk"})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	slices.Sort(names)
	if want := []string{"desk-a", "desk-b"}; !slices.Equal(names, want) {
		t.Errorf("selector list returned %v, want %v", names, want)
	}
}

// (f) the API server's optimistic concurrency: one of two racing writers wins.
func TestIntegrationPlaneLeaseConflicts(t *testing.T) {
	t.Parallel()
	env := kubetest.Require(t)
	ctx := t.Context()
	leases := env.Client.CoordinationV1().Leases(env.Namespace)
	lease, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "corral-vdi-ct-desk-1"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("alice@example.com"),
			LeaseDurationSeconds: ptr.To[int32](3600),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating lease: %v", err)
	}

	updates := race(2, func(i int) error {
		l := lease.DeepCopy()
		l.Spec.HolderIdentity = ptr.To(fmt.Sprintf("writer-%d", i))
		_, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	checkOneWinner(t, "update with one resourceVersion", updates, apierrors.IsConflict)

	creates := race(2, func(i int) error {
		_, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "corral-vdi-ct-desk-2"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(fmt.Sprintf("writer-%d", i))},
		}, metav1.CreateOptions{})
		return err
	})
	checkOneWinner(t, "create of one name", creates, apierrors.IsAlreadyExists)
}

// race runs n calls of f at once and returns their errors.
func race(n int, f func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func checkOneWinner(t *testing.T, what string, errs []error, loser func(error) bool) {
	t.Helper()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !loser(err):
			t.Errorf("%s: unexpected error %v", what, err)
		}
	}
	if won != 1 {
		t.Errorf("%s: %d of %d writers succeeded (errors %v), want exactly 1", what, won, len(errs), errs)
	}
}

// (g) the viewer reads but cannot write; the operator has the pool permissions.
func TestIntegrationPlaneIdentities(t *testing.T) {
	t.Parallel()
	env := kubetest.Require(t)
	ctx := t.Context()
	viewer := env.ClientAs(t, kubetest.Viewer)
	_, err := viewer.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "corral-vdi-ctpool-desk"},
	}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("viewer creating a configmap: got %v, want Forbidden", err)
	}
	if _, err := viewer.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("viewer listing pods: %v", err)
	}
	if _, err := viewer.CoordinationV1().Leases(env.Namespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("viewer listing leases: %v", err)
	}

	operator := env.ClientAs(t, kubetest.Operator)
	if _, err := operator.CoreV1().ConfigMaps(env.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "corral-vdi-ctpool-desk"},
	}, metav1.CreateOptions{}); err != nil {
		t.Errorf("operator creating a configmap: %v", err)
	}
	_, err = operator.CoreV1().Secrets(env.Namespace).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("operator listing secrets: got %v, want Forbidden", err)
	}
	checks := []struct {
		who     kubernetes.Interface
		name    string
		attr    authorizationv1.ResourceAttributes
		allowed bool
	}{
		{operator, "operator", authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "exec"}, true},
		{operator, "operator", authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases"}, true},
		{operator, "operator", authorizationv1.ResourceAttributes{Verb: "delete", Resource: "services"}, true},
		{operator, "operator", authorizationv1.ResourceAttributes{Verb: "create", Resource: "services"}, false},
		{viewer, "viewer", authorizationv1.ResourceAttributes{Verb: "watch", Resource: "persistentvolumeclaims"}, true},
		{viewer, "viewer", authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "exec"}, false},
	}
	for _, c := range checks {
		attr := c.attr
		attr.Namespace = env.Namespace
		review, err := c.who.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attr},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Errorf("%s: access review %+v: %v", c.name, attr, err)
			continue
		}
		if review.Status.Allowed != c.allowed {
			t.Errorf("%s may %s %s/%s: %v, want %v (%s)", c.name, attr.Verb, attr.Resource, attr.Subresource,
				review.Status.Allowed, c.allowed, review.Status.Reason)
		}
	}
}

// Namespace deletion goes through: the namespace controller empties and removes it.
func TestIntegrationPlaneNamespaceDeletion(t *testing.T) {
	t.Parallel()
	env := kubetest.Require(t)
	ctx := t.Context()
	name := kubetest.NamespaceName(t.Name() + "-doomed")
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kubetest.NamespaceLabel: "true"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "corral-vdi-ctpool-desk"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating configmap: %v", err)
	}
	env.WaitFor(t, waitLong, "the default ServiceAccount of "+name, func() (bool, error) {
		_, err := env.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, client404(err)
	})
	if _, err := env.Client.CoreV1().Pods(name).Create(ctx, pod("desk-1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	if err := env.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting namespace: %v", err)
	}
	waitGone(t, env, "namespace "+name, func(ctx context.Context) error {
		_, err := env.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// client404 treats NotFound as "not yet".
func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
