package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// LabelPodSecurityEnforce is the namespace label whose value is the Pod
// Security level the API server's admission enforces on its Pods.
const LabelPodSecurityEnforce = "pod-security.kubernetes.io/enforce"

// ErrPodSecurityRefused: the namespace enforces a Pod Security level
// stricter than the pool's, so the API server would refuse its member Pods.
var ErrPodSecurityRefused = errors.New("Pod Security admission would refuse the member Pods")

// podSecurityAdmits says whether a namespace that enforces level enforced
// admits a Pod of level pod: privileged is looser than baseline, baseline
// than restricted, and a Pod is admitted by its level and every looser one.
func podSecurityAdmits(enforced, pod string) bool {
	return slices.Index(PodSecurityLevels, pod) >= slices.Index(PodSecurityLevels, enforced)
}

// enforcedLevel is the level a namespace with labels enforces: the label's
// value; privileged without the label (admission's own default); restricted
// for a value that is no level, as admission fails closed. note says why
// when the value is not read as it is.
func enforcedLevel(labels map[string]string) (level, note string) {
	v, ok := labels[LabelPodSecurityEnforce]
	switch {
	case !ok:
		return PodSecurityPrivileged, ""
	case slices.Contains(PodSecurityLevels, v):
		return v, ""
	}
	return PodSecurityRestricted, fmt.Sprintf(" (its value %q is no level, which admission reads as restricted)", v)
}

// checkPodSecurity refuses, before anything is written, a pool whose Pods
// the namespace's Pod Security admission would refuse. When the namespace's
// labels cannot be read the level is unknown: the apply goes on with a
// warning, and admission decides when the members are created.
func (e *Engine) checkPodSecurity(ctx context.Context, pool string, spec Spec) (warnings []string, err error) {
	nr, ok := e.Cluster.(NamespaceReader)
	if !ok {
		return nil, nil
	}
	labels, err := nr.NamespaceLabels(ctx)
	if err != nil {
		return []string{fmt.Sprintf("the Pod Security level namespace %s enforces is unknown (%s): the API server decides when it creates the members",
			e.Namespace, readFailure("namespaces", err))}, nil
	}
	enforced, note := enforcedLevel(labels)
	level := spec.podSecurityLevel()
	if podSecurityAdmits(enforced, level) {
		return nil, nil
	}
	return nil, fmt.Errorf("pool %s: namespace %s enforces %s (label %s)%s; a %s pool needs %s: %w; nothing was written (relabel the namespace, or change podSecurity)",
		pool, e.Namespace, enforced, LabelPodSecurityEnforce, note, level, admittingLevels(level), ErrPodSecurityRefused)
}

// admittingLevels names the enforced levels that admit a Pod of level:
// "privileged", "baseline or privileged".
func admittingLevels(level string) string {
	i := slices.Index(PodSecurityLevels, level)
	var out string
	for j := i; j >= 0; j-- {
		if out != "" {
			if j == 0 {
				out += " or "
			} else {
				out += ", "
			}
		}
		out += PodSecurityLevels[j]
	}
	return out
}

// readFailure says in a few words why an optional read failed.
func readFailure(resource string, err error) string {
	switch {
	case errors.Is(err, ErrForbidden):
		return "no permission to get " + resource
	case errors.Is(err, ErrNotFound):
		return "not found"
	}
	return err.Error()
}
