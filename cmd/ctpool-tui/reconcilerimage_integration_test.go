//go:build integration

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// The reconciler's own image (make image) runs as the manifests deploy it,
// on the plane's real node: two Pods of the Deployment, their ServiceAccount
// token mounted by the kubelet, the manifests' RBAC, leader election
// between them, the metrics read through the API server's pods/proxy.

// imageArchiveEnv names an archive make image wrote (make test passes it);
// without it the test runs make image itself.
const imageArchiveEnv = "CTPOOL_IMAGE_ARCHIVE"

func reconcilerImageArchive(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(imageArchiveEnv); p != "" {
		return p
	}
	out := filepath.Join(t.TempDir(), "ctpool-tui-image.tar")
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), "make", "-s", "-C", filepath.Join("..", ".."), "image", "IMAGE_ARCHIVE="+out)
	if res, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, res)
	}
	t.Logf("make image: %v (%s unset)", time.Since(start).Round(time.Millisecond), imageArchiveEnv)
	return out
}

// reconcilerPods are the Deployment's Pods not being deleted.
func reconcilerPods(t *testing.T, env *kubetest.Env) []corev1.Pod {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(env.Namespace).List(t.Context(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=ctpool-tui,app.kubernetes.io/component=reconciler"})
	if err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	return pods
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// leaseHolder is the election Lease's holder, "" when none.
func leaseHolder(t *testing.T, env *kubetest.Env) string {
	t.Helper()
	l, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(t.Context(), controller.LeaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitReconcilers waits for two Ready Pods on the real node, one of which
// holds the election Lease, and returns the leader's name and the other's.
func waitReconcilers(t *testing.T, env *kubetest.Env, not string) (leader, standby string) {
	t.Helper()
	env.WaitFor(t, realNodeTimeout, "two Ready reconciler Pods on the real node, one leading", func() (bool, error) {
		pods := reconcilerPods(t, env)
		if len(pods) != 2 {
			return false, nil
		}
		holder := leaseHolder(t, env)
		leader, standby = "", ""
		for _, p := range pods {
			if p.Spec.NodeName != kubetest.RealNode {
				return false, fmt.Errorf("%s runs on %q, not on the real node", p.Name, p.Spec.NodeName)
			}
			if !podReady(&p) {
				return false, nil
			}
			if p.Name == holder {
				leader = p.Name
			} else {
				standby = p.Name
			}
		}
		return leader != "" && leader != not, nil
	})
	return leader, standby
}

func podLog(t *testing.T, env *kubetest.Env, pod string) string {
	t.Helper()
	b, err := env.Client.CoreV1().Pods(env.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: "reconciler"}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("logs of %s: %v", pod, err)
	}
	return string(b)
}

// logLine is the reconciler's log line, as docs/operations.md shows it:
// logfmt with the time, the level and a message first.
var logLine = regexp.MustCompile(`^time=\S+ level=(DEBUG|INFO|WARN|ERROR) msg=`)

// checkLog fails on a line that is not the operator's format, and on any
// refusal: the manifests' RBAC must be enough for everything it does.
func checkLog(t *testing.T, pod, log string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(log))
	n := 0
	for sc.Scan() {
		line := sc.Text()
		n++
		if !logLine.MatchString(line) {
			t.Errorf("%s logs a line that is not the reconciler's log format: %q", pod, line)
		}
	}
	if n == 0 {
		t.Errorf("%s logged nothing", pod)
	}
	for _, line := range refusals(log) {
		t.Errorf("%s was refused something (the manifests' RBAC lacks a rule): %s", pod, line)
	}
}

// refusals are the log's lines that report a request the API server refused.
func refusals(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			out = append(out, line)
		}
	}
	return out
}

// metrics reads the Pod's /metrics through the API server (pods/proxy).
func metrics(t *testing.T, env *kubetest.Env, pod string) string {
	t.Helper()
	b, err := env.Client.CoreV1().RESTClient().Get().Namespace(env.Namespace).Resource("pods").
		Name(fmt.Sprintf("%s:%d", pod, controller.MetricsPort)).SubResource("proxy").Suffix("metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("metrics of %s through pods/proxy: %v", pod, err)
	}
	return string(b)
}

// memberPod waits until the member's Pod exists, Ready, and returns it.
func memberPod(t *testing.T, env *kubetest.Env, name string, not *corev1.Pod) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	env.WaitFor(t, convergeTimeout, name+" Ready again (recreated by the reconciler's Pod)", func() (bool, error) {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		pod = p
		return (not == nil || p.UID != not.UID) && p.DeletionTimestamp == nil && podReady(p), nil
	})
	return pod
}

func TestIntegrationRealNodeReconcilerImage(t *testing.T) {
	env := realEnv(t)
	ctx := t.Context()
	ns := env.Namespace
	start := time.Now()
	image := env.ImportImage(t, reconcilerImageArchive(t))
	t.Logf("image %s on %s (%v)", image, kubetest.RealNode, time.Since(start).Round(time.Millisecond))
	env.ServeAPIToNode(t)

	// The manifests as they are, placed on the real node by their flags.
	code, out, errOut := runCmd(t, "manifests", "-n", ns, "--image", image,
		"--node-selector", "ctpool.test/node=real", "--toleration", "ctpool.test/real-node=true:NoSchedule")
	if code != exitOK {
		t.Fatalf("manifests: exit %d: %s", code, errOut)
	}
	var objs []runtime.Object
	for _, doc := range splitYAML(out) {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decode: %v\n%s", err, doc)
		}
		objs = append(objs, obj)
	}
	nodesRole := controller.AppName + "-nodes-" + ns
	t.Cleanup(func() {
		_ = env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), nodesRole, metav1.DeleteOptions{})
		_ = env.Client.RbacV1().ClusterRoles().Delete(context.Background(), nodesRole, metav1.DeleteOptions{})
	})
	if err := create(ctx, env, objs, false); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, 30*time.Second, "a ReplicaSet of the Deployment (a plane older than its Deployment controller has none: "+
		"testdata/cluster/down kube-controller-manager && testdata/cluster/up)", func() (bool, error) {
		rs, err := env.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(rs.Items) > 0, err
	})
	leader, standby := waitReconcilers(t, env, "")
	t.Logf("two reconciler Pods Ready on %s, %s leading (%v after the apply)", kubetest.RealNode, leader, time.Since(start).Round(time.Millisecond))

	// The kubelet mounted the ServiceAccount's token: the Pods run as it.
	for _, p := range reconcilerPods(t, env) {
		if p.Spec.ServiceAccountName != "ctpool-tui" {
			t.Errorf("%s runs as %q", p.Name, p.Spec.ServiceAccountName)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if !strings.HasSuffix(cs.Image, image[strings.LastIndex(image, "/"):]) || cs.RestartCount != 0 {
				t.Errorf("%s: container image %s, %d restarts; want %s and none", p.Name, cs.Image, cs.RestartCount, image)
			}
		}
	}

	// A pool applied by the CLI (on the kwok nodes: the reconciler is what
	// runs for real here) is kept by the Pod: a member's Pod deleted by
	// hand comes back, and nothing else reconciles in this test.
	if code, out, errOut := runCmd(t, "-n", ns, "apply", "desk", "--image", "registry.example/desktop:1", "--size", "3",
		"--cpu", "10m", "--mem", "32Mi", "--disk", "1Gi"); code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	cluster := kube.NewCluster(env.Client, ns)
	view := func() engine.PoolView {
		snap, err := cluster.Snapshot(ctx, "desk")
		if err != nil {
			t.Fatal(err)
		}
		return engine.Observe(snap, time.Now())
	}
	env.WaitFor(t, convergeTimeout, "desk Ready", func() (bool, error) { return view().Status.Ready == 3, nil })
	old, err := env.Client.CoreV1().Pods(ns).Get(ctx, "desk-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, "desk-3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	memberPod(t, env, "desk-3", old)

	// The metrics, through the API server's proxy: the leader says so.
	// The recreated Pod is seen before the reconcile that made it ends and
	// sets the pool's gauges, so they are polled for.
	var m string
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, convergeTimeout, true, func(context.Context) (bool, error) {
		m = metrics(t, env, leader)
		return strings.Contains(m, controller.MetricReconcilerLeader+" 1") &&
			strings.Contains(m, controller.MetricPoolMembers+"{") && strings.Contains(m, `pool="desk"`), nil
	}); err != nil {
		t.Errorf("the leader's metrics lack %s 1 or desk's members after %v:\n%s", controller.MetricReconcilerLeader, convergeTimeout, m)
	}
	if m := metrics(t, env, standby); !strings.Contains(m, controller.MetricReconcilerLeader+" 0") {
		t.Errorf("the standby's metrics lack %s 0", controller.MetricReconcilerLeader)
	}

	// The leader's log, before its Pod goes: the operator's lines.
	// The line of a reconcile follows its metrics: polled for too.
	wantLog := []string{"msg=leading identity=" + leader, "msg=reconciled pool=" + ns + "/desk"}
	var leaderLog string
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, convergeTimeout, true, func(context.Context) (bool, error) {
		leaderLog = podLog(t, env, leader)
		return !slices.ContainsFunc(wantLog, func(w string) bool { return !strings.Contains(leaderLog, w) }), nil
	})
	checkLog(t, leader, leaderLog)
	for _, want := range wantLog {
		if !strings.Contains(leaderLog, want) {
			t.Errorf("%s's log lacks %q:\n%s", leader, want, leaderLog)
		}
	}

	// Deleting the leader's Pod hands the Lease over within its duration;
	// a member claimed meanwhile is untouched.
	lease, err := env.Client.CoordinationV1().Leases(ns).Get(ctx, controller.LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaseTime := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	deleted := time.Now()
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, leader, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCmd(t, "-n", ns, "claim", "desk", "alice@example.com")
	if code != exitOK {
		t.Fatalf("claim: exit %d\n%s%s", code, out, errOut)
	}
	claimed := strings.TrimSpace(out)
	claimedPod, err := env.Client.CoreV1().Pods(ns).Get(ctx, claimed, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// (The Deployment's new Pod may start in time to win it.)
	var holder string
	env.WaitFor(t, leaseTime, fmt.Sprintf("another Pod to take over from %s within the Lease's %v", leader, leaseTime), func() (bool, error) {
		holder = leaseHolder(t, env)
		return holder != "" && holder != leader, nil
	})
	t.Logf("handover: %s leads %v after %s's Pod was deleted (Lease %v; %s stood by)",
		holder, time.Since(deleted).Round(time.Millisecond), leader, leaseTime, standby)
	leader, standby = waitReconcilers(t, env, leader)
	if leader != holder {
		t.Errorf("the Lease moved again, from %s to %s", holder, leader)
	}

	// The new leader keeps the pool: another member's Pod deleted comes
	// back; the claimed member's Pod is the same one, still claimed.
	other := "desk-1"
	if claimed == other {
		other = "desk-2"
	}
	oldMember, err := env.Client.CoreV1().Pods(ns).Get(ctx, other, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, other, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	memberPod(t, env, other, oldMember)
	now, err := env.Client.CoreV1().Pods(ns).Get(ctx, claimed, metav1.GetOptions{})
	if err != nil || now.UID != claimedPod.UID || now.DeletionTimestamp != nil {
		t.Errorf("the claimed member %s: %v, UID %s (was %s); want its Pod untouched", claimed, err, now.UID, claimedPod.UID)
	}
	for _, m := range view().Members {
		if m.Name == claimed && (!m.Claimed || m.Claim.Holder != "alice@example.com") {
			t.Errorf("%s is no longer alice's: %+v", claimed, m.Claim)
		}
	}
	newLog := podLog(t, env, leader)
	checkLog(t, leader, newLog)
	if !strings.Contains(newLog, "msg=leading identity="+leader) {
		t.Errorf("%s's log lacks its leading line:\n%s", leader, newLog)
	}
	checkLog(t, standby, podLog(t, env, standby))

	// The RBAC is exactly enough. The optional reads, which the reconciler
	// does without in silence, are granted: its ServiceAccount may watch the
	// nodes and the pools' PodDisruptionBudgets.
	sa := "system:serviceaccount:" + ns + ":ctpool-tui"
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Verb: "watch", Resource: "nodes"}, {Verb: "list", Resource: "nodes"},
		{Verb: "watch", Group: "policy", Resource: "poddisruptionbudgets", Namespace: ns},
	} {
		r, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}, ResourceAttributes: &ra},
		}, metav1.CreateOptions{})
		if err != nil || !r.Status.Allowed {
			t.Errorf("%s may not %s %s: %v %+v", sa, ra.Verb, ra.Resource, err, r)
		}
	}
	// And a missing rule shows: without create on Pods, a member's Pod
	// deleted by hand stays gone and the leader logs the refusal, which
	// checkLog above reads as a failure.
	role, err := env.Client.RbacV1().Roles(ns).Get(ctx, controller.AppName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rules []rbacv1.PolicyRule
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "pods") && slices.Contains(r.Verbs, "create") {
			r.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "create" })
		}
		rules = append(rules, r)
	}
	role.Rules = rules
	if _, err := env.Client.RbacV1().Roles(ns).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, "desk-3", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	var refused []string
	env.WaitFor(t, convergeTimeout, "the leader to log the refused create of desk-3", func() (bool, error) {
		refused = refusals(podLog(t, env, leader))
		return len(refused) > 0, nil
	})
	t.Logf("without create on Pods, the check reads: %s", refused[0])
	if _, err := env.Client.CoreV1().Pods(ns).Get(ctx, "desk-3", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("desk-3 was recreated without the rule to create Pods: %v", err)
	}
}
