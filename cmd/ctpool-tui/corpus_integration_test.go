//go:build integration

package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/corpus"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
)

// The pools earlier releases wrote (testdata/corpus), created on the API
// server as they were, are read by status and --once, reconciled to
// convergence by this release with no claimed desktop replaced and then
// with no write, and claimed and released through the command line.
func TestIntegrationCorpusOfEarlierReleases(t *testing.T) {
	releases, err := corpus.Load(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range releases {
		t.Run(r.Name, func(t *testing.T) {
			env := kubetest.Require(t)
			t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
			ctx, ns := t.Context(), env.Namespace
			if err := r.Create(ctx, env.Client, ns); err != nil {
				t.Fatal(err)
			}
			holders := r.Holders()
			held := slices.Sorted(maps.Keys(holders))
			allReady := func() (bool, error) {
				pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				for i := range pods.Items {
					if !pooltest.PodReady(&pods.Items[i]) {
						return false, nil
					}
				}
				// The volume binder's writes to the PVCs are over.
				pvcs, err := env.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				for _, c := range pvcs.Items {
					if c.Status.Phase != corev1.ClaimBound {
						return false, nil
					}
				}
				return len(pods.Items) > 0, nil
			}
			env.WaitFor(t, 60*time.Second, "the corpus's Pods Ready on the kwok nodes and PVCs bound", allReady)

			// status and --once read what the earlier release wrote.
			var out string
			for _, p := range r.Pools() {
				code, o, errOut := runCmd(t, "-n", ns, "status", p)
				if code != exitOK {
					t.Fatalf("status %s: exit %d\n%s%s", p, code, o, errOut)
				}
				out += o
			}
			code, js, errOut := runCmd(t, "-n", ns, "--once", "-o", "json")
			if code != exitOK && code != exitAttention {
				t.Fatalf("--once -o json: exit %d\n%s", code, errOut)
			}
			for _, want := range append(r.Pools(), slices.Collect(maps.Values(holders))...) {
				if !strings.Contains(out, want) || !strings.Contains(js, fmt.Sprintf("%q", want)) {
					t.Errorf("status or --once lacks %s:\n%s", want, out)
				}
			}
			if strings.Contains(out, "invalid status") || strings.Contains(out, "invalid spec") {
				t.Errorf("status:\n%s", out)
			}

			// Reconciled to convergence: no claimed desktop replaced.
			type desktop struct {
				pod, pvc types.UID
				image    string
			}
			desktops := func() map[string]desktop {
				out := map[string]desktop{}
				for _, m := range held {
					var d desktop
					if p, err := env.Client.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{}); err == nil {
						d.pod, d.image = p.UID, p.Spec.Containers[0].Image
					}
					if c, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, engine.PVCName(m), metav1.GetOptions{}); err == nil {
						d.pvc = c.UID
					}
					out[m] = d
				}
				return out
			}
			before := desktops()
			eng := pooltest.Engine(env)
			rounds, err := r.Converge(ctx, eng, 10, func() { env.WaitFor(t, 60*time.Second, "the members Ready", allReady) })
			if err != nil {
				t.Fatal(err)
			}
			if after := desktops(); !maps.Equal(before, after) {
				t.Errorf("a claimed desktop was replaced:\nbefore %v\nafter  %v", before, after)
			}
			versions := func() map[string]string {
				out := map[string]string{}
				cms, err := env.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range cms.Items {
					out["cm/"+o.Name] = o.ResourceVersion
				}
				pvcs, err := env.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range pvcs.Items {
					out["pvc/"+o.Name] = o.ResourceVersion
				}
				leases, err := env.Client.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range leases.Items {
					out["lease/"+o.Name] = o.ResourceVersion
				}
				pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range pods.Items {
					out["pod/"+o.Name] = string(o.UID)
				}
				return out
			}
			converged := versions()
			for _, p := range r.Pools() {
				res, err := eng.Reconcile(ctx, p)
				if err != nil || res.Done() != 0 || res.StatusWritten {
					t.Errorf("reconcile %s once converged: %d actions, status written %v, %v", p, res.Done(), res.StatusWritten, err)
				}
			}
			if again := versions(); !maps.Equal(converged, again) {
				t.Errorf("a reconcile of the converged pools wrote:\nbefore %v\nafter  %v", converged, again)
			}
			for _, m := range held {
				c, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, engine.PVCName(m), metav1.GetOptions{})
				if err != nil || c.Annotations[engine.AnnotationSource] == "" {
					t.Errorf("%s's PVC records no source: %v", m, err)
				}
			}

			// A claim and a release through the command line; then each
			// claim of the earlier release is released by its holder.
			pool := r.Pools()[0]
			code, out, errOut = runCmd(t, "-n", ns, "claim", pool, "erin@example.com")
			member := strings.TrimSpace(out)
			if code != exitOK || holders[member] != "" || !strings.HasPrefix(member, pool+"-") {
				t.Fatalf("claim: exit %d, %q (held: %v)\n%s", code, member, holders, errOut)
			}
			for _, rel := range append([][2]string{{member, "erin@example.com"}}, func() (out [][2]string) {
				for _, m := range held {
					out = append(out, [2]string{m, holders[m]})
				}
				return out
			}()...) {
				p := rel[0][:strings.LastIndex(rel[0], "-")]
				if code, out, errOut := runCmd(t, "-n", ns, "release", p, rel[0], rel[1]); code != exitOK {
					t.Errorf("release %s %s %s: exit %d\n%s%s", p, rel[0], rel[1], code, out, errOut)
				}
			}
			leases, err := env.Client.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range leases.Items {
				if h := l.Spec.HolderIdentity; h != nil && *h != "" && *h != engine.ReconcilerIdentity {
					t.Errorf("Lease %s still held by %s after every release", l.Name, *h)
				}
			}
			var pods corev1.PodList
			if p, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
				pods = *p
			}
			t.Logf("%s (%.12s): pools %v, %d claims of the release kept and released, converged in %d rounds of reconciles, %d Pods", r.Name, r.Commit, r.Pools(), len(held), rounds, len(pods.Items))
		})
	}
}

// A pool whose status a newer release wrote (a higher format): reconcile
// exits 1 with the cause and how to start afresh, prints no summary,
// changes no member and leaves the status as it is; status and --once show
// the problem.
func TestIntegrationStatusOfANewerRelease(t *testing.T) {
	env := kubetest.Require(t)
	t.Setenv("KUBECONFIG", filepath.Join(env.Dir, "admin.kubeconfig"))
	ctx, ns := t.Context(), env.Namespace
	if code, out, errOut := runCmd(t, "-n", ns, "apply", "desk", "--image", "registry.example/desktop:1", "--size", "2",
		"--cpu", "10m", "--mem", "32Mi", "--disk", "1Gi"); code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	newer := "format: 2\ndesired: 2\nmembers:\n- desk-1 Ready\n"
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, engine.ConfigMapName("desk"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[engine.KeyStatus] = newer
	cm.Data[engine.KeySpec] = strings.Replace(cm.Data[engine.KeySpec], "desktop:1", "desktop:2", 1)
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := func() map[string]string {
		l, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range l.Items {
			out[p.Name] = string(p.UID)
		}
		return out
	}
	before := pods()
	code, out, errOut := runCmd(t, "-n", ns, "reconcile", "desk")
	if code != exitError || out != "" || !strings.Contains(errOut, "format 2 is a newer release's") ||
		!strings.Contains(errOut, `kubectl patch configmap corral-vdi-ctpool-desk --type json -p '[{"op":"remove","path":"/data/status"}]'`) {
		t.Fatalf("reconcile: exit %d\nstdout %q\nstderr %s", code, out, errOut)
	}
	if after := pods(); !maps.Equal(before, after) || len(after) != 2 {
		t.Errorf("members changed over a status this release cannot read: %v -> %v", before, after)
	}
	cm, err = env.Client.CoreV1().ConfigMaps(ns).Get(ctx, engine.ConfigMapName("desk"), metav1.GetOptions{})
	if err != nil || cm.Data[engine.KeyStatus] != newer {
		t.Fatalf("status written over: %q, %v", cm.Data[engine.KeyStatus], err)
	}
	code, out, _ = runCmd(t, "-n", ns, "--once")
	if code != exitAttention || !strings.Contains(out, "format 2 is a newer release's") {
		t.Errorf("--once: exit %d\n%s", code, out)
	}
}
