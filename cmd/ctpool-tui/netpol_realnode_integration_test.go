//go:build integration

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
)

// An isolated pool's NetworkPolicy proven with packets between real
// containers on the plane's real node, where kube-network-policies (the
// plane's ctpool-netpol) enforces it. Every pool is made and changed
// through the CLI. Each path a policy closes is also seen open: before the
// policy, or after it is deleted or opened by hand (the negative control),
// so a plane that enforced nothing would fail the test.

const (
	// probePort is where every Pod of the test answers TCP with "ok".
	probePort = "8080"
	// dnsPort answers too on the broker: restricted egress keeps DNS open.
	dnsPort = "53"
	// policyTimeout bounds the wait for the enforcer to act on a change (its
	// informers see it within a second or so).
	policyTimeout = 20 * time.Second
)

// listen answers TCP on each port with "ok", for ever, in the background.
func listen(ports ...string) string {
	var b strings.Builder
	for _, p := range ports {
		b.WriteString("nc -ll -p " + p + " -e echo ok >/dev/null 2>&1 </dev/null & ")
	}
	return b.String()
}

// netPod is a Pod on the real node that is no pool's member: a broker, a
// gateway, a client in another namespace.
type netPod struct {
	namespace, name, ip string
}

// startNetPod runs a busybox Pod with labels on the real node that answers
// on ports, and waits for its address.
func startNetPod(t *testing.T, env *kubetest.Env, namespace, name string, labels map[string]string, ports ...string) netPod {
	t.Helper()
	rc := kubetest.RealNodeRuntimeClass
	no := false
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: corev1.PodSpec{
			RuntimeClassName:              &rc,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name: "main", Image: kubetest.ImageBusybox, ImagePullPolicy: corev1.PullNever,
				Command:         []string{"sh", "-c", listen(ports...) + "exec sleep 3600"},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no},
			}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Pod %s/%s: %v", namespace, name, err)
	}
	np := netPod{namespace: namespace, name: name}
	env.WaitFor(t, realNodeTimeout, name+" running on the real node", func() (bool, error) {
		got, err := env.Client.CoreV1().Pods(namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		np.ip = got.Status.PodIP
		return got.Status.Phase == corev1.PodRunning && np.ip != "", nil
	})
	return np
}

// extraNamespace makes a namespace beside the test's, labelled as kubetest
// labels its own (kubectl delete ns -l kubetest.ctpool-tui.dev/test), and
// deleted after the test.
func extraNamespace(t *testing.T, env *kubetest.Env, suffix string) string {
	t.Helper()
	name := env.Namespace + "-" + suffix
	_, err := env.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kubetest.NamespaceLabel: "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = env.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	env.WaitFor(t, 90*time.Second, "the default ServiceAccount of "+name, func() (bool, error) {
		_, err := env.Client.CoreV1().ServiceAccounts(name).Get(t.Context(), "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return name
}

// memberIP is the address of a member's Pod.
func memberIP(t *testing.T, env *kubetest.Env, member string) string {
	t.Helper()
	p, err := env.Client.CoreV1().Pods(env.Namespace).Get(t.Context(), member, metav1.GetOptions{})
	if err != nil || p.Status.PodIP == "" {
		t.Fatalf("the address of %s: %v (%q)", member, err, p.Status.PodIP)
	}
	return p.Status.PodIP
}

// A probe opens one TCP connection (or sends one ping) from a Pod and says
// whether it got through. A dropped first packet shows as a timeout of 1 s.
type probe struct {
	what string
	run  func(ctx context.Context) bool
}

func tcpScript(ip, port string) string {
	return "nc -w 1 " + ip + " " + port + " </dev/null"
}

func pingScript(ip string) string { return "ping -c 1 -W 1 " + ip + " >/dev/null" }

// fromMember probes from a member, through `ctpool-tui console`.
func fromMember(t *testing.T, env *kubetest.Env, pool, member, what, script string) probe {
	return probe{what: member + " -> " + what, run: func(context.Context) bool {
		code, out, _ := sh(t, env, pool, member, script)
		return code == exitOK && (strings.HasPrefix(script, "ping") || strings.TrimSpace(out) == "ok")
	}}
}

// fromPod probes from a Pod that is no member.
func fromPod(env *kubetest.Env, p netPod, what, script string) probe {
	return probe{what: p.namespace + "/" + p.name + " -> " + what, run: func(ctx context.Context) bool {
		out, _, err := env.ExecIn(ctx, p.namespace, p.name, 10*time.Second, "sh", "-c", script)
		return err == nil && (strings.HasPrefix(script, "ping") || strings.TrimSpace(out) == "ok")
	}}
}

// expect polls every probe until it gets through (open) or is stopped
// (closed), failing at the deadline with the probes that never did.
func expect(t *testing.T, open bool, probes ...probe) {
	t.Helper()
	state := map[bool]string{true: "open", false: "closed"}
	pending := probes
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, policyTimeout, true, func(ctx context.Context) (bool, error) {
		var still []probe
		for _, p := range pending {
			if p.run(ctx) != open {
				still = append(still, p)
			}
		}
		pending = still
		return len(pending) == 0, nil
	})
	if err != nil {
		for _, p := range pending {
			t.Errorf("%s: not %s after %s", p.what, state[open], policyTimeout)
		}
		t.FailNow()
	}
}

func mustApply(t *testing.T, env *kubetest.Env, args ...string) string {
	t.Helper()
	code, out, errOut := runCmd(t, append([]string{"-n", env.Namespace, "apply"}, args...)...)
	if code != exitOK {
		t.Fatalf("apply %v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out + errOut
}

func reconcilePool(t *testing.T, env *kubetest.Env, pool string) {
	t.Helper()
	if code, out, errOut := runCmd(t, "-n", env.Namespace, "reconcile", pool); code != exitOK && code != exitAttention {
		t.Fatalf("reconcile %s: exit %d\n%s%s", pool, code, out, errOut)
	}
}

func TestIntegrationRealNodeNetworkPolicy(t *testing.T) {
	env := realEnv(t)
	env.RequireNetworkPolicy(t)
	started := time.Now()

	friends := extraNamespace(t, env, "friend")
	strangers := extraNamespace(t, env, "stranger")
	broker := startNetPod(t, env, env.Namespace, "broker", map[string]string{"role": "broker"}, probePort, dnsPort)
	target := startNetPod(t, env, env.Namespace, "target", map[string]string{"role": "target"}, probePort)
	friend := startNetPod(t, env, friends, "client", nil, probePort)
	stranger := startNetPod(t, env, strangers, "client", nil, probePort)

	// Three pools side by side in one namespace: iso isolated (a broker
	// and the friends' namespace admitted), open not isolated, out isolated
	// with its egress restricted to the target.
	realPool(t, env, "open", kubetest.ImageBusybox, 1)
	realPool(t, env, "iso", kubetest.ImageBusybox, 2)
	realPool(t, env, "out", kubetest.ImageBusybox, 1)
	for _, m := range []struct{ pool, member string }{{"open", "open-1"}, {"iso", "iso-1"}, {"iso", "iso-2"}, {"out", "out-1"}} {
		mustSh(t, env, m.pool, m.member, listen(probePort))
	}
	iso1, iso2, open1, out1 := memberIP(t, env, "iso-1"), memberIP(t, env, "iso-2"), memberIP(t, env, "open-1"), memberIP(t, env, "out-1")

	member2to1 := fromMember(t, env, "iso", "iso-2", "iso-1:"+probePort, tcpScript(iso1, probePort))
	member1to2 := fromMember(t, env, "iso", "iso-1", "iso-2:"+probePort, tcpScript(iso2, probePort))
	memberPing := fromMember(t, env, "iso", "iso-2", "ping iso-1", pingScript(iso1))
	otherPool := fromMember(t, env, "open", "open-1", "iso-1:"+probePort, tcpScript(iso1, probePort))
	otherPoolPing := fromMember(t, env, "open", "open-1", "ping iso-1", pingScript(iso1))
	brokerIn := fromPod(env, broker, "iso-1:"+probePort, tcpScript(iso1, probePort))
	friendIn := fromPod(env, friend, "iso-1:"+probePort, tcpScript(iso1, probePort))
	strangerIn := fromPod(env, stranger, "iso-1:"+probePort, tcpScript(iso1, probePort))
	outToTarget := fromMember(t, env, "out", "out-1", "target:"+probePort, tcpScript(target.ip, probePort))
	outToBroker := fromMember(t, env, "out", "out-1", "broker:"+probePort, tcpScript(broker.ip, probePort))
	outToDNS := fromMember(t, env, "out", "out-1", "broker:"+dnsPort+" (DNS)", tcpScript(broker.ip, dnsPort))
	outToOpen := fromMember(t, env, "out", "out-1", "open-1:"+probePort, tcpScript(open1, probePort))
	intoOut := fromMember(t, env, "open", "open-1", "out-1:"+probePort, tcpScript(out1, probePort))
	isoToOpen := fromMember(t, env, "iso", "iso-1", "open-1:"+probePort, tcpScript(open1, probePort))

	// Before isolation every path is open: the probes work, and a closed
	// path later is the policy's doing.
	t.Run("open before isolation", func(t *testing.T) {
		expect(t, true, member2to1, memberPing, otherPool, brokerIn, strangerIn, outToBroker, intoOut)
	})

	mustApply(t, env, "iso", "--isolate", "--ingress",
		`{"podSelector":{"role":"broker"}}`, "--ingress", `{"namespaceSelector":{"kubernetes.io/metadata.name":"`+friends+`"}}`)
	mustApply(t, env, "out", "--isolate", "--egress", `{"podSelector":{"role":"target"}}`)

	t.Run("members cannot reach each other", func(t *testing.T) {
		expect(t, false, member2to1, member1to2, memberPing)
	})
	t.Run("ingress peers reach members, others do not", func(t *testing.T) {
		expect(t, true, brokerIn, friendIn)
		expect(t, false, strangerIn)
	})
	t.Run("the other pool's members cannot reach the isolated pool's", func(t *testing.T) {
		expect(t, false, otherPool, otherPoolPing)
		expect(t, true, isoToOpen) // egress of iso is open
	})
	t.Run("a pool without isolate is reachable as before", func(t *testing.T) {
		expect(t, true, fromPod(env, stranger, "open-1:"+probePort, tcpScript(open1, probePort)),
			fromMember(t, env, "iso", "iso-2", "open-1:"+probePort, tcpScript(open1, probePort)))
	})
	t.Run("restricted egress reaches only its peers and DNS", func(t *testing.T) {
		expect(t, true, outToTarget, outToDNS)
		expect(t, false, outToBroker, outToOpen, intoOut)
	})

	// Hand edits: the policy opened to everyone, then deleted; the packets
	// follow each change (the negative control of the closed paths above)
	// and each reconcile's repair.
	nps := env.Client.NetworkingV1().NetworkPolicies(env.Namespace)
	t.Run("a hand edit opens, reconcile closes", func(t *testing.T) {
		if _, err := nps.Patch(t.Context(), engine.NetworkPolicyName("iso"), types.JSONPatchType,
			[]byte(`[{"op":"add","path":"/spec/ingress/-","value":{}}]`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		expect(t, true, member2to1, memberPing, otherPool, strangerIn)
		reconcilePool(t, env, "iso")
		expect(t, false, member2to1, memberPing, otherPool, strangerIn)
		expect(t, true, brokerIn)
	})
	t.Run("a deleted policy opens, reconcile closes", func(t *testing.T) {
		for _, pool := range []string{"iso", "out"} {
			if err := nps.Delete(t.Context(), engine.NetworkPolicyName(pool), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		expect(t, true, member1to2, otherPoolPing, strangerIn, outToBroker, outToOpen, intoOut)
		reconcilePool(t, env, "iso")
		reconcilePool(t, env, "out")
		expect(t, false, member1to2, otherPoolPing, strangerIn, outToBroker, outToOpen, intoOut)
	})

	// A cidr peer admits every address in its block: one that covers the
	// pod network admits the members too (NetworkPolicy cannot take them out
	// of an address block), and apply says so; an except of the pod network
	// keeps them apart.
	t.Run("cidr peers", func(t *testing.T) {
		out := mustApply(t, env, "iso", "--ingress", `{"cidr":"10.245.0.0/16"}`)
		if !strings.Contains(out, "covers private addresses") {
			t.Errorf("apply of an ingress cidr over the pod network does not warn:\n%s", out)
		}
		expect(t, true, member2to1, strangerIn)
		mustApply(t, env, "iso", "--ingress", `{"cidr":"10.0.0.0/8","except":["10.245.0.0/24"]}`)
		expect(t, false, member2to1, strangerIn, otherPool)
	})
	t.Logf("network policy proven with packets in %s", time.Since(started).Round(time.Second))
}
