package engine

import (
	"strings"
	"testing"

	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// podSecuritySpecs are pools of every level, on every backend, with and
// without init.
func podSecuritySpecs() map[string]Spec {
	specs := backendSpecs()
	for name, s := range map[string]Spec{
		"baseline-init":         {Image: "img", Size: 1, Init: true},
		"restricted-init":       {Image: "img", Size: 1, Init: true, PodSecurity: PodSecurityRestricted},
		"restricted-kata":       {Image: "img", Size: 1, PodSecurity: PodSecurityRestricted, Runtime: &Runtime{RuntimeClassName: "kata"}},
		"restricted-sandboxd":   {Image: "img", Size: 1, PodSecurity: PodSecurityRestricted, Runtime: &Runtime{Backend: BackendSandboxd, Template: "img"}},
		"restricted-cocoon":     {Image: "img", Size: 1, PodSecurity: PodSecurityRestricted, Runtime: &Runtime{Backend: BackendCocoon, Image: "base"}},
		"privileged-by-level":   {Image: "img", Size: 1, PodSecurity: PodSecurityPrivileged},
		"baseline-given":        {Image: "img", Size: 1, PodSecurity: PodSecurityBaseline},
		"privileged-cocoon":     {Image: "img", Size: 1, Privileged: true, Runtime: &Runtime{Backend: BackendCocoon, Image: "base"}},
		"restricted-user-65532": {Image: "img", Size: 1, PodSecurity: PodSecurityRestricted, RunAsUser: 65532},
	} {
		s.Default()
		specs[name] = s
	}
	return specs
}

// TestPodSecurityAdmission runs the API server's own Pod Security checks
// (k8s.io/pod-security-admission/policy, at the latest version) on every
// built Pod: it passes its pool's level, and a privileged or baseline Pod is
// refused by the next stricter level, so each satisfies exactly its level.
func TestPodSecurityAdmission(t *testing.T) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(level string, spec Spec) []string {
		pod := BuildPod("vdi", "desk", 2, spec)
		lv := psaapi.LevelVersion{Level: psaapi.Level(level), Version: psaapi.LatestVersion()}
		var why []string
		for _, r := range eval.EvaluatePod(lv, &pod.ObjectMeta, &pod.Spec) {
			if !r.Allowed {
				why = append(why, r.ForbiddenReason+" ("+r.ForbiddenDetail+")")
			}
		}
		return why
	}
	stricter := map[string]string{PodSecurityPrivileged: PodSecurityBaseline, PodSecurityBaseline: PodSecurityRestricted}
	for name, spec := range podSecuritySpecs() {
		t.Run(name, func(t *testing.T) {
			level := spec.PodSecurityLevel()
			if why := refused(level, spec); len(why) > 0 {
				t.Fatalf("a %s pool's Pod is refused by the %s level: %s", level, level, strings.Join(why, "; "))
			}
			if next, ok := stricter[level]; ok && len(refused(next, spec)) == 0 {
				t.Fatalf("a %s pool's Pod passes the stricter %s level: it is not built for its own level", level, next)
			}
		})
	}
}

// TestPodSecurityContexts pins what each level writes, beyond what admission
// checks: the user, group and fsGroup of a restricted member, the privileged
// root copy running as root, and shareProcessNamespace kept.
func TestPodSecurityContexts(t *testing.T) {
	specs := podSecuritySpecs()
	r := BuildPod("vdi", "desk", 1, specs["restricted-user-65532"])
	c := r.Spec.Containers[0].SecurityContext
	if c == nil || *c.RunAsUser != 65532 || *c.RunAsGroup != 65532 || !*c.RunAsNonRoot || *c.AllowPrivilegeEscalation {
		t.Fatalf("restricted container securityContext = %+v", c)
	}
	if p := r.Spec.SecurityContext; p == nil || *p.FSGroup != 65532 || *p.FSGroupChangePolicy != "OnRootMismatch" {
		t.Fatalf("restricted pod securityContext = %+v", p)
	}
	if r.Spec.ShareProcessNamespace == nil || !*r.Spec.ShareProcessNamespace {
		t.Fatal("restricted member lost shareProcessNamespace")
	}
	p := BuildPod("vdi", "desk", 1, specs["privileged"])
	if sc := p.Spec.Containers[0].SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged || sc.AllowPrivilegeEscalation != nil {
		t.Fatalf("privileged container securityContext = %+v", sc)
	}
	if len(p.Spec.InitContainers) != 1 || *p.Spec.InitContainers[0].SecurityContext.RunAsUser != 0 || p.Spec.SecurityContext != nil {
		t.Fatalf("privileged init containers %+v, pod securityContext %+v", p.Spec.InitContainers, p.Spec.SecurityContext)
	}
	b := BuildPod("vdi", "desk", 1, specs["standard"])
	if sc := b.Spec.Containers[0].SecurityContext; sc.RunAsUser != nil || sc.Capabilities != nil || b.Spec.SecurityContext != nil {
		t.Fatalf("baseline member sets a user or capabilities: %+v, %+v", sc, b.Spec.SecurityContext)
	}
}
