package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestSpecRefusesCredentials: an image reference with userinfo is refused,
// naming the field, and the secret is in no message: not the error, not the
// located error of a stored definition, not apply's audit entry.
func TestSpecRefusesCredentials(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		field string
		shown string // the redacted reference the error quotes
	}{
		{"user and password", "image: alice:s3cr3t@registry.example/desk:1\n", "image", `"REDACTED@registry.example/desk:1"`},
		{"https scheme", "image: https://alice:s3cr3t@registry.example/desk:1\n", "image", `"https://REDACTED@registry.example/desk:1"`},
		{"user alone", "image: s3cr3t@registry.example/desk:1\n", "image", `"REDACTED@registry.example/desk:1"`},
		{"password with a slash", "image: alice:s3/cr3t@registry.example/desk:1\n", "image", `"REDACTED@registry.example/desk:1"`},
		{"password with an at", "image: alice:s3@cr3t@registry.example/desk:1\n", "image", `"REDACTED@registry.example/desk:1"`},
		{"no path", "image: alice:s3cr3t@registry.example\n", "image", `"REDACTED@registry.example"`},
		{"with a digest too", "image: alice:s3cr3t@registry.example/desk@" + digest + "\n", "image", `"REDACTED@registry.example/desk@` + digest + `"`},
		{"quoted", "image: \"alice:s3cr3t@registry.example/desk:1\"\n", "image", `"REDACTED@registry.example/desk:1"`},
		{"sandboxd template", "image: img\nruntime:\n  backend: sandboxd\n  template: alice:s3cr3t@reg.example/rt:1\n", "runtime.template", `"REDACTED@reg.example/rt:1"`},
		{"cocoon image", "image: img\nruntime:\n  backend: cocoon\n  image: alice:s3cr3t@base\n", "runtime.image", `"REDACTED@base"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.yaml + "size: 1\n"
			_, err := ParseSpec(data)
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Field != tt.field || !inv.Secret {
				t.Fatalf("ParseSpec = %v, want a secret InvalidError on %s", err, tt.field)
			}
			if !strings.Contains(err.Error(), tt.shown) || !strings.Contains(err.Error(), "must not hold credentials") {
				t.Fatalf("error %q, want it to show %s", err, tt.shown)
			}
			located := LocateSpecError(data, err)
			for _, msg := range []string{err.Error(), located} {
				if strings.Contains(msg, "s3") || strings.Contains(msg, "alice") {
					t.Fatalf("message %q echoes the credentials", msg)
				}
			}
			if tt.field == "image" && !strings.Contains(located, "(line 1: image)") {
				t.Fatalf("located error %q does not name the line", located)
			}
		})
	}
}

// TestSpecAcceptsReferencesWithoutCredentials: digests and ports are no
// userinfo.
func TestSpecAcceptsReferencesWithoutCredentials(t *testing.T) {
	for _, ref := range []string{
		"ubuntu", "ubuntu:24.04", "ubuntu@" + digest, "library/ubuntu@" + digest,
		"registry.example:5000/team/desk:1", "registry.example:5000/team/desk@" + digest, "[::1]:5000/desk:1",
	} {
		s := Spec{Image: ref, Size: 1}
		s.Default()
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
		if RedactImage(ref) != ref {
			t.Errorf("RedactImage(%s) = %s", ref, RedactImage(ref))
		}
	}
}

// TestUnknownFieldValueNotEchoed: an unknown field (password:) is refused,
// and neither the error nor the located error of a stored definition
// quotes its value; a known field's bad value still is.
func TestUnknownFieldValueNotEchoed(t *testing.T) {
	for _, data := range []string{
		"image: img\nsize: 1\npassword: hunter2\n",
		"image: img\nsize: 1\nregistryAuth:\n  password: hunter2\n",
		"image: img\nruntime:\n  backend: sandboxd\n  template: img\n  token: hunter2\n",
	} {
		_, err := ParseSpec(data)
		if err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Fatalf("ParseSpec(%q) = %v, want an unknown field", data, err)
		}
		if located := LocateSpecError(data, err); strings.Contains(located, "hunter2") || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("message %q echoes the value", located)
		}
	}
	data := "image: img\ncpu: lots\n"
	_, err := ParseSpec(data)
	if got := LocateSpecError(data, err); !strings.HasSuffix(got, "(line 2: cpu: lots)") {
		t.Fatalf("located error %q, want the known field's line whole", got)
	}
}

// TestApplyOfCredentialsWritesNothingAndAuditsNone: apply refuses the
// image, writes nothing, and its audit entry carries the reference redacted.
func TestApplyOfCredentialsWritesNothingAndAuditsNone(t *testing.T) {
	e, f := newEngine()
	var audited []AuditEntry
	e.Audit = func(_ context.Context, a AuditEntry) { audited = append(audited, a) }
	_, err := e.Apply(context.Background(), "desk", Spec{Image: "alice:s3cr3t@registry.example/desk:1", Size: 1})
	var inv *InvalidError
	if !errors.As(err, &inv) || inv.Field != "image" {
		t.Fatalf("Apply = %v", err)
	}
	if len(f.writes()) != 0 {
		t.Fatalf("writes %v", f.writes())
	}
	if len(audited) != 1 || strings.Contains(audited[0].Detail, "s3cr3t") || strings.Contains(audited[0].Err.Error(), "s3cr3t") ||
		!strings.Contains(audited[0].Detail, "REDACTED@registry.example/desk:1") {
		t.Fatalf("audit %+v", audited)
	}
}

// TestBrokenDefinitionShowsNoCredentials: a hand-edited definition with
// credentials in its image is a problem of the pool, and neither the image
// the views show nor the problem carries the secret.
func TestBrokenDefinitionShowsNoCredentials(t *testing.T) {
	cm := BuildConfigMap(testNS, "desk", baseSpec(1))
	cm.Data[KeySpec] = "image: alice:s3cr3t@registry.example/desk:1\nsize: 2\n"
	v := Observe(Snapshot{Namespace: testNS, Pool: "desk", ConfigMap: cm}, testNow)
	if v.SpecError == nil || v.Spec.Image != "REDACTED@registry.example/desk:1" || v.Spec.Size != 2 {
		t.Fatalf("spec %+v, error %v", v.Spec, v.SpecError)
	}
	if all := strings.Join(v.Problems, "\n"); strings.Contains(all, "s3cr3t") || !strings.Contains(all, "must not hold credentials") {
		t.Fatalf("problems %q", all)
	}
}
