package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// checkPullSecrets refuses, before anything is written, a pool that names
// an image pull secret missing from the namespace or of a type the kubelet
// does not pull with (kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg). Only the type of each Secret is read. A Secret
// that cannot be read for another reason (no permission) leaves the check
// undecided: the apply goes on with a warning.
func (e *Engine) checkPullSecrets(ctx context.Context, pool string, spec Spec) (warnings []string, err error) {
	sr, ok := e.Cluster.(SecretReader)
	if !ok || len(spec.ImagePullSecrets) == 0 {
		return nil, nil
	}
	var missing, wrong, unknown []string
	for _, name := range spec.ImagePullSecrets {
		typ, err := sr.SecretType(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
			missing = append(missing, name)
		case err != nil:
			unknown = append(unknown, fmt.Sprintf("%s (%s)", name, readFailure("secrets", err)))
		case typ != corev1.SecretTypeDockerConfigJson && typ != corev1.SecretTypeDockercfg:
			wrong = append(wrong, fmt.Sprintf("%s is of type %q", name, string(typ)))
		}
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("no Secret %s in namespace %s", strings.Join(missing, ", "), e.Namespace))
	}
	if len(wrong) > 0 {
		problems = append(problems, strings.Join(wrong, ", ")+", not "+string(corev1.SecretTypeDockerConfigJson)+" or "+string(corev1.SecretTypeDockercfg))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("pool %s: %w; nothing was written (create the Secret with kubectl create secret docker-registry, or leave it out of imagePullSecrets)",
			pool, &InvalidError{Field: "imagePullSecrets", Reason: strings.Join(problems, "; ")})
	}
	if len(unknown) > 0 {
		warnings = append(warnings, fmt.Sprintf("imagePullSecrets not checked: %s; a missing Secret, or one of the wrong type, shows as image pull failures of the members",
			strings.Join(unknown, ", ")))
	}
	return warnings, nil
}
