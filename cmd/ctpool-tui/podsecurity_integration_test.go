//go:build integration

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// Pod Security levels through the CLI on the real control plane, whose API
// server runs the PodSecurity admission plugin: the namespace's enforce
// label decides, and apply refuses beforehand what admission would.

const enforceLabel = "pod-security.kubernetes.io/enforce"

// enforce sets (or, with "", removes) the namespace's enforced level.
func enforce(t *testing.T, env *kubetest.Env, level string) {
	t.Helper()
	patch := `{"metadata":{"labels":{"` + enforceLabel + `":null}}}`
	if level != "" {
		patch = `{"metadata":{"labels":{"` + enforceLabel + `":"` + level + `"}}}`
	}
	if _, err := env.Client.CoreV1().Namespaces().Patch(t.Context(), env.Namespace, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// poolReport is the pool's entry of `status -o json`.
func poolReport(t *testing.T, env *kubetest.Env, pool string) render.OncePool {
	t.Helper()
	_, out, errOut := runCmd(t, "-n", env.Namespace, "status", pool, "-o", "json")
	var rep render.OnceReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Pools) != 1 {
		t.Fatalf("status %s -o json: %v\n%s%s", pool, err, out, errOut)
	}
	return rep.Pools[0]
}

// Each level's member Pod is admitted by a namespace that enforces exactly
// that level; a pool of a looser level is refused by apply with the label
// and both levels named, and nothing is written.
func TestIntegrationPodSecurityLevels(t *testing.T) {
	env := kubetest.Require(t)
	run := cliRunner(t, env)
	pods := env.Client.CoreV1().Pods(env.Namespace)
	for _, tc := range []struct {
		level string
		flags []string
		// refused: the looser level this namespace refuses, and its flags.
		refused      string
		refusedFlags []string
	}{
		{"restricted", []string{"--pod-security", "restricted"}, "baseline", nil},
		{"baseline", nil, "privileged", []string{"--privileged"}},
		{"privileged", []string{"--privileged"}, "", nil},
	} {
		t.Run(tc.level, func(t *testing.T) {
			enforce(t, env, tc.level)
			pool := "lvl-" + tc.level
			out, _ := run(exitOK, append(append([]string{"apply", pool, "--size", "1"}, smallPool...), tc.flags...)...)
			if !strings.Contains(out, "1 created") {
				t.Fatalf("apply %s in a namespace enforcing %s:\n%s", pool, tc.level, out)
			}
			p, err := pods.Get(t.Context(), pool+"-1", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the %s member was not admitted by a namespace enforcing %s: %v", tc.level, tc.level, err)
			}
			checkLevel(t, p, tc.level)
			if tc.refused == "" {
				return
			}
			other := "lvl-" + tc.refused + "-in-" + tc.level
			refusedOut, errOut := run(exitError, append(append([]string{"apply", other, "--size", "1"}, smallPool...), tc.refusedFlags...)...)
			if refusedOut != "" {
				t.Errorf("a refused apply printed a result: %q", refusedOut)
			}
			want := "namespace " + env.Namespace + " enforces " + tc.level
			if !strings.Contains(errOut, want) || !strings.Contains(errOut, enforceLabel) || !strings.Contains(errOut, "needs "+tc.refused) {
				t.Errorf("apply of a %s pool in a namespace enforcing %s said %q; want %q, the label and %q", tc.refused, tc.level, errOut, want, "needs "+tc.refused)
			}
			if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), engine.ConfigMapName(other), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a refused apply wrote the definition of %s: %v", other, err)
			}
		})
	}
}

// checkLevel checks the fields the level's standard asks of the member Pod
// (admission has checked them already; this pins what the engine wrote).
func checkLevel(t *testing.T, p *corev1.Pod, level string) {
	t.Helper()
	all := append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...)
	for _, c := range all {
		sc := c.SecurityContext
		switch level {
		case "privileged":
			if c.Name == engine.ContainerName && (sc == nil || sc.Privileged == nil || !*sc.Privileged) {
				t.Errorf("privileged member's %s container is not privileged: %+v", c.Name, sc)
			}
		default:
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s member's %s container allows privilege escalation: %+v", level, c.Name, sc)
			}
			seccomp := p.Spec.SecurityContext != nil && p.Spec.SecurityContext.SeccompProfile != nil &&
				p.Spec.SecurityContext.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
			if sc != nil && sc.SeccompProfile != nil {
				seccomp = sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
			}
			if !seccomp {
				t.Errorf("%s member's %s container has no RuntimeDefault seccomp profile", level, c.Name)
			}
		}
		if level == "restricted" {
			if sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
				t.Errorf("restricted member's %s container drops %+v, want ALL", c.Name, sc)
			}
		}
	}
	if level == "restricted" {
		psc := p.Spec.SecurityContext
		if psc == nil || psc.FSGroup == nil || *psc.FSGroup != 1000 {
			t.Errorf("restricted member's fsGroup = %+v, want 1000 (the default user)", psc)
		}
	}
}

// A namespace that starts enforcing baseline after a privileged pool was
// applied: admission refuses the member's next Pod, and status shows the API
// server's own words with the fix.
func TestIntegrationPodSecurityRefusedLater(t *testing.T) {
	env := kubetest.Require(t)
	run := cliRunner(t, env)
	pods := env.Client.CoreV1().Pods(env.Namespace)
	run(exitOK, append([]string{"apply", "later", "--size", "1", "--privileged"}, smallPool...)...)
	if _, err := pods.Get(t.Context(), "later-1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	enforce(t, env, "baseline")
	if err := pods.Delete(t.Context(), "later-1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	env.WaitFor(t, 60*time.Second, "later-1's Pod gone", func() (bool, error) {
		_, err := pods.Get(t.Context(), "later-1", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	code, out, errOut := runCmd(t, "-n", env.Namespace, "reconcile", "later")
	if code == exitOK {
		t.Fatalf("reconcile of a privileged pool in a baseline namespace succeeded:\n%s%s", out, errOut)
	}
	if !strings.Contains(out+errOut, "violates PodSecurity") {
		t.Errorf("reconcile does not carry the API server's refusal:\n%s%s", out, errOut)
	}
	if _, err := pods.Get(t.Context(), "later-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("later-1 was admitted in a namespace enforcing baseline: %v", err)
	}
	rep := poolReport(t, env, "later")
	text := strings.Join(rep.Errors, "\n") + strings.Join(rep.Problems, "\n")
	for _, m := range rep.Members {
		if m.Diagnosis != nil {
			text += "\n" + m.Diagnosis.Reason + " " + m.Diagnosis.Fix
		}
	}
	if !strings.Contains(text, `violates PodSecurity "baseline`) {
		t.Errorf("status does not show the API server's refusal:\n%s", text)
	}
	if !strings.Contains(text, enforceLabel) {
		t.Errorf("status does not say the fix (the namespace's %s label or the pool's level):\n%s", enforceLabel, text)
	}
	// The fix works: with the label gone the member is made again.
	enforce(t, env, "")
	run(exitOK, "reconcile", "later")
	if _, err := pods.Get(t.Context(), "later-1", metav1.GetOptions{}); err != nil {
		t.Fatalf("later-1 after the label was removed: %v", err)
	}
}

// Pull Secrets are checked by apply (present, of a pull-secret type) and
// reach every member Pod; a missing one is named and nothing is written.
func TestIntegrationImagePullSecrets(t *testing.T) {
	env := kubetest.Require(t)
	run := cliRunner(t, env)
	secrets := env.Client.CoreV1().Secrets(env.Namespace)
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example":{"auth":"dTpw"}}}`)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "opaque"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}},
	} {
		if _, err := secrets.Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut := run(exitUsage, append([]string{"apply", "priv", "--size", "1", "--image-pull-secret", "regcred", "--image-pull-secret", "nosuch"}, smallPool...)...)
	if !strings.Contains(errOut, "no Secret nosuch") || strings.Contains(out+errOut, "dTpw") || out != "" {
		t.Errorf("apply with a missing pull Secret said %q%q; want it named on stderr, nothing on stdout, and no Secret content", out, errOut)
	}
	_, errOut = run(exitUsage, append([]string{"apply", "priv", "--size", "1", "--image-pull-secret", "opaque"}, smallPool...)...)
	if !strings.Contains(errOut, "opaque") || !strings.Contains(errOut, string(corev1.SecretTypeDockerConfigJson)) {
		t.Errorf("apply with an Opaque pull Secret said %q; want it named with the type it needs", errOut)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), engine.ConfigMapName("priv"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused apply wrote the definition: %v", err)
	}
	run(exitOK, append([]string{"apply", "priv", "--size", "2", "--image-pull-secret", "regcred"}, smallPool...)...)
	for _, m := range []string{"priv-1", "priv-2"} {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(t.Context(), m, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Spec.ImagePullSecrets) != 1 || p.Spec.ImagePullSecrets[0].Name != "regcred" {
			t.Errorf("%s's imagePullSecrets = %+v, want regcred", m, p.Spec.ImagePullSecrets)
		}
	}
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), engine.ConfigMapName("priv"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cm.Data[engine.KeySpec], "dTpw") || !strings.Contains(cm.Data[engine.KeySpec], "regcred") {
		t.Errorf("the definition holds %q; want the Secret's name only", cm.Data[engine.KeySpec])
	}
	// A credential in the image reference is refused, and not echoed.
	code, out, errOut := runCmd(t, "-n", env.Namespace, "apply", "cred", "--size", "1", "--image", "alice:s3cr3t@registry.example/desktop:1")
	if code != exitUsage || strings.Contains(out+errOut, "s3cr3t") || !strings.Contains(errOut, "image") {
		t.Errorf("apply with a password in the image: exit %d, %q%q; want a refusal naming the field, without the password", code, out, errOut)
	}
}

// localStorageClass is a class of no provisioner: its volumes are local
// PersistentVolumes made beforehand (localVolume).
const localStorageClass = "ctpool-local"

// localVolume makes a local PersistentVolume on the real node bound
// beforehand to member's data PVC, and returns its StorageClass. Its
// directory is under the node's hostPath root, which the plane's down
// removes.
func localVolume(t *testing.T, env *kubetest.Env, member string) string {
	t.Helper()
	ctx := t.Context()
	sc := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: localStorageClass},
		Provisioner: "kubernetes.io/no-provisioner",
	}
	if _, err := env.Client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dir := filepath.Join("/tmp/hostpath_pv", "ctpool-local-"+env.Namespace+"-"+member)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := "ctpool-local-" + env.Namespace + "-" + member
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              localStorageClass,
			ClaimRef:                      &corev1.ObjectReference{Namespace: env.Namespace, Name: engine.PVCName(member)},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{kubetest.RealNode}}},
			}}}},
		},
	}
	if _, err := env.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return localStorageClass
}

// Inside a running container on the real node: a restricted member runs as
// its user with /data writable, every unprivileged level under the runtime's
// seccomp filter with no new privileges, and a privileged member without.
func TestIntegrationRealNodePodSecurity(t *testing.T) {
	env := realEnv(t)
	for _, tc := range []struct {
		level, uid   string
		flags        []string
		seccomp, nnp string
	}{
		// The plane's hostPath volumes take no fsGroup (the kubelet changes
		// no ownership of a hostPath); a local volume does, as CSI drivers
		// with an fsGroupPolicy do.
		{"restricted", "1000", []string{"--pod-security", "restricted", "--storage-class", localVolume(t, env, "sec-restricted-1")}, "2", "1"},
		{"baseline", "0", nil, "2", "1"},
		{"privileged", "0", []string{"--privileged"}, "0", "0"},
	} {
		t.Run(tc.level, func(t *testing.T) {
			enforce(t, env, tc.level)
			pool := "sec-" + tc.level
			member := pool + "-1"
			realPool(t, env, pool, kubetest.ImageDebian, 1, tc.flags...)
			if got := strings.TrimSpace(mustSh(t, env, pool, member, "id -u")); got != tc.uid {
				t.Errorf("%s member runs as uid %s, want %s", tc.level, got, tc.uid)
			}
			out := mustSh(t, env, pool, member, "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status")
			if !strings.Contains(out, "Seccomp:\t"+tc.seccomp) || !strings.Contains(out, "NoNewPrivs:\t"+tc.nnp) {
				t.Errorf("%s member's process: %q; want Seccomp %s and NoNewPrivs %s", tc.level, out, tc.seccomp, tc.nnp)
			}
			if got := mustSh(t, env, pool, member, "echo mine >/data/mine && stat -c %u /data/mine && cat /data/mine"); got != tc.uid+"\nmine\n" {
				t.Errorf("%s member writing /data: %q, want its own file (uid %s)", tc.level, got, tc.uid)
			}
		})
	}
	// The limit docs/security.md states: a hostPath volume is never given to the fsGroup,
	// so there the restricted member cannot write /data.
	t.Run("restricted-hostpath", func(t *testing.T) {
		enforce(t, env, "restricted")
		realPool(t, env, "sec-hostpath", kubetest.ImageDebian, 1, "--pod-security", "restricted")
		if code, out, errOut := sh(t, env, "sec-hostpath", "sec-hostpath-1", "touch /data/mine"); code != 1 || !strings.Contains(errOut, "Permission denied") {
			t.Errorf("a restricted member on a hostPath volume writing /data: exit %d, %q %q; want Permission denied (if the kubelet now applies fsGroup to hostPath, docs/security.md is out of date)", code, out, errOut)
		}
	})
}
