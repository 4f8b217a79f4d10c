package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestApplyChecksPodSecurity: apply refuses, writing nothing, a pool whose
// Pods the namespace's enforced Pod Security level would refuse, and goes
// on with a warning when the namespace cannot be read.
func TestApplyChecksPodSecurity(t *testing.T) {
	spec := func(level string) Spec {
		s := Spec{Image: "img:1", Size: 1, PodSecurity: level}
		return s
	}
	tests := []struct {
		name     string
		labels   map[string]string
		nsErr    error
		spec     Spec
		wantErr  string // "" = applied
		wantWarn string
	}{
		{name: "no label admits privileged", spec: spec(PodSecurityPrivileged)},
		{name: "privileged admits privileged", labels: map[string]string{LabelPodSecurityEnforce: "privileged"}, spec: spec(PodSecurityPrivileged)},
		{name: "baseline admits baseline", labels: map[string]string{LabelPodSecurityEnforce: "baseline"}, spec: spec("")},
		{name: "baseline admits restricted", labels: map[string]string{LabelPodSecurityEnforce: "baseline"}, spec: spec(PodSecurityRestricted)},
		{name: "restricted admits restricted", labels: map[string]string{LabelPodSecurityEnforce: "restricted"}, spec: spec(PodSecurityRestricted)},
		{name: "baseline refuses privileged", labels: map[string]string{LabelPodSecurityEnforce: "baseline"}, spec: Spec{Image: "img:1", Size: 1, Privileged: true},
			wantErr: "pool desk: namespace vdi enforces baseline (label pod-security.kubernetes.io/enforce); a privileged pool needs privileged: " +
				"Pod Security admission would refuse the member Pods; nothing was written (relabel the namespace, or change podSecurity)"},
		{name: "restricted refuses baseline", labels: map[string]string{LabelPodSecurityEnforce: "restricted"}, spec: spec(""),
			wantErr: "namespace vdi enforces restricted (label pod-security.kubernetes.io/enforce); a baseline pool needs baseline or privileged"},
		{name: "restricted refuses privileged", labels: map[string]string{LabelPodSecurityEnforce: "restricted"}, spec: spec(PodSecurityPrivileged),
			wantErr: "a privileged pool needs privileged"},
		{name: "a value that is no level is restricted", labels: map[string]string{LabelPodSecurityEnforce: "strict"}, spec: spec(""),
			wantErr: `enforces restricted (label pod-security.kubernetes.io/enforce) (its value "strict" is no level, which admission reads as restricted); a baseline pool`},
		{name: "other labels do not count", labels: map[string]string{"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/audit": "restricted"}, spec: spec(PodSecurityPrivileged)},
		{name: "forbidden is a warning", nsErr: fmt.Errorf("namespaces %q is forbidden: %w", testNS, ErrForbidden), spec: spec(PodSecurityPrivileged),
			wantWarn: "the Pod Security level namespace vdi enforces is unknown (no permission to get namespaces): the API server decides when it creates the members"},
		{name: "not found is a warning", nsErr: fmt.Errorf("namespaces %q: %w", testNS, ErrNotFound), spec: spec(""),
			wantWarn: "enforces is unknown (not found)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			f.nsLabels, f.nsErr = tt.labels, tt.nsErr
			res, err := e.Apply(context.Background(), "desk", tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrPodSecurityRefused) {
					t.Fatalf("Apply error = %v, want ErrPodSecurityRefused containing %q", err, tt.wantErr)
				}
				if w := f.writes(); len(w) != 0 || res.Changed {
					t.Fatalf("a refused apply wrote %v (changed %v)", w, res.Changed)
				}
				return
			}
			if err != nil || !res.Created {
				t.Fatalf("Apply = %+v, %v", res, err)
			}
			joined := strings.Join(res.Warnings, "\n")
			if tt.wantWarn == "" && joined != "" || !strings.Contains(joined, tt.wantWarn) {
				t.Fatalf("warnings %q, want %q", joined, tt.wantWarn)
			}
		})
	}
}

// TestApplyEditPodSecurityOfAnExistingPool: an edit that makes an existing
// pool privileged in a baseline namespace leaves the stored definition as
// it was.
func TestApplyEditPodSecurityOfAnExistingPool(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(1), 1)
	f.nsLabels = map[string]string{LabelPodSecurityEnforce: PodSecurityBaseline}
	before := f.cm(ConfigMapName("desk")).Data[KeySpec]
	_, err := e.ApplyEdit(context.Background(), "desk", func(s *Spec) (Spec, error) {
		n := *s
		n.Privileged, n.PodSecurity = true, PodSecurityPrivileged
		return n, nil
	}, false)
	if !errors.Is(err, ErrPodSecurityRefused) {
		t.Fatalf("ApplyEdit = %v, want ErrPodSecurityRefused", err)
	}
	if f.cm(ConfigMapName("desk")).Data[KeySpec] != before || len(f.writes()) != 0 {
		t.Fatalf("the refused edit wrote %v", f.writes())
	}
}
