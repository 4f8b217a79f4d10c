package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPullSecretsValidate(t *testing.T) {
	many := make([]string, MaxImagePullSecrets+1)
	for i := range many {
		many[i] = fmt.Sprintf("reg-%d", i)
	}
	tests := []struct {
		name    string
		secrets []string
		wantErr string // "" = valid
		field   string
	}{
		{name: "none"},
		{name: "one", secrets: []string{"regcred"}},
		{name: "a subdomain", secrets: []string{"reg.example.com"}},
		{name: "sixteen", secrets: many[:MaxImagePullSecrets]},
		{name: "seventeen", secrets: many, wantErr: "names 17 Secrets, more than 16", field: "imagePullSecrets"},
		{name: "upper case", secrets: []string{"ok", "RegCred"}, wantErr: `invalid imagePullSecrets[1] "RegCred": is not a Secret name`, field: "imagePullSecrets[1]"},
		{name: "empty name", secrets: []string{""}, wantErr: "is not a Secret name", field: "imagePullSecrets[0]"},
		{name: "a path", secrets: []string{"a/b"}, wantErr: "is not a Secret name", field: "imagePullSecrets[0]"},
		{name: "duplicate", secrets: []string{"a", "b", "a"}, wantErr: `invalid imagePullSecrets[2] "a": is named twice`, field: "imagePullSecrets[2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Spec{Image: "img", Size: 1, ImagePullSecrets: tt.secrets}
			s.Default()
			err := s.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Field != tt.field || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want %q on %s", err, tt.wantErr, tt.field)
			}
		})
	}
	got, err := ParseSpec("image: img\nimagePullSecrets: []\n")
	if err != nil || got.ImagePullSecrets != nil {
		t.Fatalf("an empty list parses to %#v, %v; want none", got.ImagePullSecrets, err)
	}
}

// TestPullSecretsInEveryPodAndNoSourceField: every member Pod (privileged or
// not, any backend) pulls with the pool's Secrets; they are no source field,
// and a member rebuilt from its record takes the pool's current ones.
func TestPullSecretsInEveryPodAndNoSourceField(t *testing.T) {
	want := []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror"}}
	for name, spec := range podSecuritySpecs() {
		before := spec.SourceHash()
		spec.ImagePullSecrets = []string{"regcred", "mirror"}
		if spec.SourceHash() != before {
			t.Errorf("%s: imagePullSecrets change the source hash", name)
		}
		if got := BuildPod(testNS, "desk", 1, spec).Spec.ImagePullSecrets; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Pod imagePullSecrets %v, want %v", name, got, want)
		}
	}
	old := baseSpec(2)
	rec := old.SourceRecord()
	pool := baseSpec(2)
	pool.ImagePullSecrets = []string{"new-cred"}
	s, err := SpecFromSourceRecord(rec, pool, old.SourceHash())
	if err != nil {
		t.Fatal(err)
	}
	if got := BuildPod(testNS, "desk", 1, s).Spec.ImagePullSecrets; len(got) != 1 || got[0].Name != "new-cred" {
		t.Fatalf("a member rebuilt from its record pulls with %v, want the pool's new-cred", got)
	}
	if got := BuildPod(testNS, "desk", 1, baseSpec(1)).Spec.ImagePullSecrets; got != nil {
		t.Fatalf("a pool without pull secrets writes %v", got)
	}
}

// TestApplyChecksPullSecrets: each named Secret must exist and be a
// registry login; otherwise nothing is written and the error says which.
// A Secret that may not be read is a warning.
func TestApplyChecksPullSecrets(t *testing.T) {
	dockerJSON, dockercfg := corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg
	tests := []struct {
		name     string
		secrets  map[string]corev1.SecretType
		errs     map[string]error
		names    []string
		wantErr  string
		wantWarn string
	}{
		{name: "none named"},
		{name: "dockerconfigjson and dockercfg", secrets: map[string]corev1.SecretType{"a": dockerJSON, "b": dockercfg}, names: []string{"a", "b"}},
		{name: "missing", secrets: map[string]corev1.SecretType{"a": dockerJSON}, names: []string{"a", "gone", "lost"},
			wantErr: "pool desk: invalid imagePullSecrets: no Secret gone, lost in namespace vdi; nothing was written (create the Secret with kubectl create secret docker-registry, or leave it out of imagePullSecrets)"},
		{name: "wrong type", secrets: map[string]corev1.SecretType{"a": corev1.SecretTypeOpaque, "b": corev1.SecretTypeServiceAccountToken}, names: []string{"a", "b"},
			wantErr: `invalid imagePullSecrets: a is of type "Opaque", b is of type "kubernetes.io/service-account-token", not kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg; nothing was written`},
		{name: "missing and wrong", secrets: map[string]corev1.SecretType{"a": corev1.SecretTypeTLS}, names: []string{"a", "gone"},
			wantErr: `invalid imagePullSecrets: no Secret gone in namespace vdi; a is of type "kubernetes.io/tls", not`},
		{name: "forbidden is a warning", secrets: map[string]corev1.SecretType{"a": dockerJSON}, errs: map[string]error{"a": fmt.Errorf("secrets \"a\" is forbidden: %w", ErrForbidden)}, names: []string{"a"},
			wantWarn: "imagePullSecrets not checked: a (no permission to get secrets); a missing Secret, or one of the wrong type, shows as image pull failures of the members"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			f.secrets, f.secretErrs = tt.secrets, tt.errs
			res, err := e.Apply(context.Background(), "desk", Spec{Image: "img:1", Size: 1, ImagePullSecrets: tt.names})
			if tt.wantErr != "" {
				var inv *InvalidError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &inv) || inv.Field != "imagePullSecrets" {
					t.Fatalf("Apply error %v, want %q", err, tt.wantErr)
				}
				if len(f.writes()) != 0 {
					t.Fatalf("a refused apply wrote %v", f.writes())
				}
				return
			}
			if err != nil || !res.Created {
				t.Fatalf("Apply = %+v, %v", res, err)
			}
			if got := strings.Join(res.Warnings, "\n"); got != tt.wantWarn {
				t.Fatalf("warnings %q, want %q", got, tt.wantWarn)
			}
			if pod := f.pod("desk-1"); len(pod.Spec.ImagePullSecrets) != len(tt.names) {
				t.Fatalf("member Pod pulls with %v, want %v", pod.Spec.ImagePullSecrets, tt.names)
			}
		})
	}
}

// TestPullSecretsChangeDriftsNoMember: an apply that changes only the pull
// secrets rewrites the definition and replaces no member.
func TestPullSecretsChangeDriftsNoMember(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(2), 2)
	f.secrets = map[string]corev1.SecretType{"regcred": corev1.SecretTypeDockerConfigJson}
	next := baseSpec(2)
	next.ImagePullSecrets = []string{"regcred"}
	res, err := e.Apply(context.Background(), "desk", next)
	if err != nil || !res.Changed {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	for _, a := range f.writes() {
		if a.Kind == kPod || a.Kind == kPVC {
			t.Fatalf("a pull secrets change touched a member: %v", f.writes())
		}
	}
}
